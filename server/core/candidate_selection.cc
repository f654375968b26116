#include "server/core/candidate_selection.h"

#include <cstdint>
#include <limits>

#include "convert/spec_convert.h"

namespace paratune {

std::vector<size_t> SelectCandidates(const v1::SearchSpec& spec, const Plan& plan) {
  int64_t limit = 0;
  switch (spec.policy()) {
    case v1::TOP_K:
      limit = spec.top_k();
      break;
    case v1::EXHAUSTIVE:
      limit = std::numeric_limits<int64_t>::max();
      break;
    default:
      return {};
  }
  std::vector<size_t> selected;
  for (size_t i = 0; i < plan.candidates.size(); ++i) {
    if (static_cast<int64_t>(selected.size()) >= limit) break;
    const MemoryVerdict verdict = plan.candidates[i].memory.verdict;
    if (verdict == MemoryVerdict::kSafe ||
        (verdict == MemoryVerdict::kRisky && ProbesRiskyConfigurations(spec.space()))) {
      selected.push_back(i);
    }
  }
  return selected;
}

}  // namespace paratune
