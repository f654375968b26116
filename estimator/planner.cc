#include "estimator/planner.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace paratune {
namespace {

constexpr int64_t kMaxMicroBatchSize = 1024;

absl::Status ValidateOptions(const PlanOptions& options) {
  for (size_t i = 0; i < options.micro_batch_sizes.size(); ++i) {
    const int64_t size = options.micro_batch_sizes[i];
    if (size < 1 || size > kMaxMicroBatchSize) {
      return absl::InvalidArgumentError(absl::StrCat("space.micro_batch_sizes[", i, "] (", size,
                                                     ") must be in [1, ", kMaxMicroBatchSize, "]"));
    }
  }
  const double fraction = options.memory.safe_fraction;
  if (!(fraction > 0 && fraction <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("space.safe_memory_fraction (", fraction, ") must be in (0, 1]"));
  }
  const double context = options.memory.cuda_context_bytes;
  if (!(context >= 0) || !std::isfinite(context)) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory.cuda_context_bytes (", context, ") must be a finite number >= 0"));
  }
  return absl::OkStatus();
}

std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> divisors;
  for (int64_t i = 1; i <= n; ++i) {
    if (n % i == 0) divisors.push_back(i);
  }
  return divisors;
}

// Sorted and without repeats, so no configuration is counted twice.
std::vector<int64_t> MicroBatchSizes(const PlanOptions& options) {
  std::vector<int64_t> sizes = options.micro_batch_sizes;
  if (sizes.empty()) sizes = {1, 2, 4, 8, 16};
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

// Best predicted throughput first; then less memory; then the configuration's text.
bool PredictedBefore(const PlannedConfig& x, const PlannedConfig& y) {
  if (x.predicted.model_tflops_per_gpu != y.predicted.model_tflops_per_gpu) {
    return x.predicted.model_tflops_per_gpu > y.predicted.model_tflops_per_gpu;
  }
  if (x.memory.peak_bytes != y.memory.peak_bytes) {
    return x.memory.peak_bytes < y.memory.peak_bytes;
  }
  return x.config.ToString() < y.config.ToString();
}

}  // namespace

absl::StatusOr<Plan> PlanConfigurations(const ModelSpec& model, const TrainingSpec& training,
                                        const ClusterSpec& cluster, const PlanOptions& options,
                                        const PerformanceParameters& params) {
  absl::Status status = ValidateOptions(options);
  if (!status.ok()) return status;
  const int64_t world = cluster.world_size();
  const std::vector<int64_t> divisors = Divisors(world);
  const std::vector<int64_t> micro_batch_sizes = MicroBatchSizes(options);

  Plan plan;
  ParallelDims dims;
  dims.virtual_pipeline = 1;
  dims.recompute = Recompute::kNone;
  for (int64_t tp : divisors) {
    for (int64_t cp : divisors) {
      if ((world / tp) % cp != 0) continue;
      for (int64_t pp : divisors) {
        if ((world / (tp * cp)) % pp != 0) continue;
        dims.tp = tp;
        dims.cp = cp;
        dims.pp = pp;
        dims.dp = world / (tp * cp * pp);
        dims.sequence_parallel = tp > 1;
        for (int64_t micro_batch : micro_batch_sizes) {
          dims.micro_batch = micro_batch;
          ++plan.counts.enumerated;
          const Rejection rejection = CheckRules(model, training, cluster, options.rules, dims);
          if (rejection != Rejection::kValid) {
            ++plan.rejections[static_cast<int>(rejection)];
            continue;
          }
          ++plan.counts.valid;
          const ParallelConfig config = ParallelConfig::FromCheckedDims(dims);
          const MemoryEstimate memory =
              EstimateMemory(model, training, cluster, config, options.memory);
          if (memory.verdict == MemoryVerdict::kSafe) ++plan.counts.safe;
          if (memory.verdict == MemoryVerdict::kRisky) ++plan.counts.risky;
          if (memory.verdict == MemoryVerdict::kOutOfMemory) ++plan.counts.out_of_memory;
          const bool keep = memory.verdict == MemoryVerdict::kSafe ||
                            (memory.verdict == MemoryVerdict::kRisky && options.include_risky);
          if (!keep) continue;
          plan.candidates.push_back(
              {config, memory, PredictPerformance(model, training, cluster, config, params)});
        }
      }
    }
  }
  std::sort(plan.candidates.begin(), plan.candidates.end(), PredictedBefore);
  return plan;
}

}  // namespace paratune
