#include "worker/probe/context_parallel_ring.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace paratune {

absl::StatusOr<std::vector<RingStep>> ContextRingSteps(int64_t context_parallel, int64_t rank,
                                                       int64_t tokens) {
  if (context_parallel < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("context_parallel (", context_parallel, ") must be at least 2 for a ring"));
  }
  if (rank < 0 || rank >= context_parallel) {
    return absl::InvalidArgumentError(
        absl::StrCat("context rank (", rank, ") must be in [0, ", context_parallel, ")"));
  }
  if (tokens <= 0 || tokens % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("tokens per rank (", tokens, ") must be even and positive"));
  }
  const int64_t half = tokens / 2;
  std::vector<RingStep> steps(context_parallel);
  for (int64_t i = 0; i < context_parallel; ++i) {
    RingStep& step = steps[i];
    step.source_rank = (rank - i + context_parallel) % context_parallel;
    if (i == 0) {
      // Chunks r and 2c-1-r against themselves: positions increase with local indices in
      // both, and chunk 2c-1-r follows chunk r, so causal in local indices is causal.
      step.products.push_back({0, tokens, 0, tokens, RingMask::kCausal});
    } else if (step.source_rank < rank) {
      // Source chunk j < r precedes both query chunks; chunk 2c-1-j follows both.
      step.products.push_back({0, tokens, 0, half, RingMask::kNone});
    } else {
      // Source chunks j > r and 2c-1-j < 2c-1-r both lie between chunks r and 2c-1-r.
      step.products.push_back({half, half, 0, tokens, RingMask::kNone});
    }
  }
  return steps;
}

}  // namespace paratune
