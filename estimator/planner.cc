#include "estimator/planner.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "estimator/field_error.h"

namespace paratune {
namespace {

constexpr int64_t kMaxMicroBatchSize = 1024;
constexpr int64_t kMaxVirtualPipelineSize = 1024;

absl::Status ValidateOptions(const ModelSpec& model, const PlanOptions& options) {
  for (size_t i = 0; i < options.micro_batch_sizes.size(); ++i) {
    const int64_t size = options.micro_batch_sizes[i];
    if (size < 1 || size > kMaxMicroBatchSize) {
      return absl::InvalidArgumentError(absl::StrCat("space.micro_batch_sizes[", i, "] (", size,
                                                     ") must be in [1, ", kMaxMicroBatchSize, "]"));
    }
  }
  for (size_t i = 0; i < options.virtual_pipeline_sizes.size(); ++i) {
    const int64_t size = options.virtual_pipeline_sizes[i];
    if (size < 1 || size > kMaxVirtualPipelineSize) {
      return absl::InvalidArgumentError(absl::StrCat("space.virtual_pipeline_sizes[", i, "] (",
                                                     size, ") must be in [1, ",
                                                     kMaxVirtualPipelineSize, "]"));
    }
  }
  absl::Status experts = CheckExpertSizeLists(model, options);
  if (!experts.ok()) return experts;
  for (size_t i = 0; i < options.dp_shard_groups.size(); ++i) {
    const int64_t group = options.dp_shard_groups[i];
    if (group < 0 || group > kMaxDpShardGroup) {
      return FieldError(absl::StrCat("space.dp_shard_groups[", i, "]"),
                        absl::StrCat("(", group, ") must be in [0, ", kMaxDpShardGroup,
                                     "]; 0 shards over all data-parallel ranks"));
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
template <typename T>
std::vector<T> SortedUnique(std::vector<T> values, std::vector<T> fallback) {
  if (values.empty()) values = std::move(fallback);
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int, int64_t, int64_t, int, int64_t>
DimsKey(const ParallelDims& d) {
  return {d.tp,
          d.pp,
          d.cp,
          d.micro_batch,
          d.virtual_pipeline,
          static_cast<int>(d.recompute),
          d.ep,
          ExpertTensorParallel(d),
          static_cast<int>(d.dp_sharding),
          d.dp_shard_group};
}

// Whether the planner enumerates shard group `group` (0: all dp ranks) of `sharding` for `dp`
// data-parallel ranks: a hybrid group only where it is a proper divisor of dp and something is
// sharded (CheckRules' kDpShardGroup), as it skips expert layouts that do not fold.
bool ShardGroupApplies(DataParallelSharding sharding, int64_t group, int64_t dp) {
  if (group == 0) return true;
  return sharding != DataParallelSharding::kNone && group < dp && dp % group == 0;
}

// The (sharding, group) pairs enumerated for `dp` data-parallel ranks.
int64_t ShardingLayoutsFor(int64_t dp, const std::vector<DataParallelSharding>& shardings,
                           const std::vector<int64_t>& groups) {
  int64_t layouts = 0;
  for (DataParallelSharding sharding : shardings) {
    for (int64_t group : groups) layouts += ShardGroupApplies(sharding, group, dp);
  }
  return layouts;
}

// Whether etp x ep x pp divides the GPUs (CheckRules' kExpertWorldSize); the planner skips the
// expert layouts that do not fold onto a (tp, cp, pp) layout, as it skips the tp, cp and pp
// that do not multiply to the GPU count.
bool ExpertLayoutFolds(int64_t world, int64_t pp, int64_t ep, int64_t etp) {
  return (world / pp) % ep == 0 && (world / (pp * ep)) % etp == 0;
}

// Best predicted throughput first; then less memory; then the dimensions.
bool PredictedBefore(const PlannedConfig& x, const PlannedConfig& y) {
  if (x.predicted.model_tflops_per_gpu != y.predicted.model_tflops_per_gpu) {
    return x.predicted.model_tflops_per_gpu > y.predicted.model_tflops_per_gpu;
  }
  if (x.memory.peak_bytes != y.memory.peak_bytes) {
    return x.memory.peak_bytes < y.memory.peak_bytes;
  }
  return DimsKey(x.config.dims()) < DimsKey(y.config.dims());
}

// Whether the plan enumerates `dims`' expert tensor parallel size: 0 in the searched list
// stands for each configuration's tp.
bool SearchesExpertTensorParallel(const ModelSpec& model, const PlanOptions& options,
                                  const ParallelDims& dims) {
  const std::vector<int64_t> sizes = SearchedExpertTensorParallelSizes(model, options);
  return std::any_of(sizes.begin(), sizes.end(), [&](int64_t etp) {
    return (etp == 0 ? dims.tp : etp) == ExpertTensorParallel(dims);
  });
}

bool SameDims(const ParallelDims& x, const ParallelDims& y) {
  return DimsKey(x) == DimsKey(y) && x.dp == y.dp && x.sequence_parallel == y.sequence_parallel;
}

// CheckExpertSizeLists for one list, space.<field>.
absl::Status ValidateExpertSizes(const ModelSpec& model, const char* field,
                                 const std::vector<int64_t>& sizes) {
  const std::string list = absl::StrCat("space.", field);
  if (!model.is_moe() && !sizes.empty()) {
    return FieldError(list, absl::StrCat("is set, but model \"", model.name(),
                                         "\" has no experts (model.moe.num_experts is 0)"));
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 1 || sizes[i] > kMaxExpertParallelSize) {
      return FieldError(
          absl::StrCat(list, "[", i, "]"),
          absl::StrCat("(", sizes[i], ") must be in [1, ", kMaxExpertParallelSize, "]"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<int64_t> SearchedMicroBatchSizes(const PlanOptions& options) {
  return SortedUnique(options.micro_batch_sizes, {1, 2, 4, 8, 16});
}

std::vector<int64_t> SearchedVirtualPipelineSizes(const PlanOptions& options) {
  return SortedUnique(options.virtual_pipeline_sizes, {1});
}

std::vector<Recompute> SearchedRecomputeModes(const PlanOptions& options) {
  return SortedUnique(options.recompute_modes, {Recompute::kNone});
}

std::vector<DataParallelSharding> SearchedDataParallelShardings(const TrainingSpec& training,
                                                                const PlanOptions& options) {
  return SortedUnique(options.dp_sharding_modes, {training.DefaultDataParallelSharding()});
}

std::vector<int64_t> SearchedDpShardGroups(const PlanOptions& options) {
  return SortedUnique(options.dp_shard_groups, {0});
}

absl::Status CheckExpertSizeLists(const ModelSpec& model, const PlanOptions& options) {
  absl::Status status =
      ValidateExpertSizes(model, "expert_parallel_sizes", options.expert_parallel_sizes);
  if (!status.ok()) return status;
  return ValidateExpertSizes(model, "expert_tensor_parallel_sizes",
                             options.expert_tensor_parallel_sizes);
}

std::vector<int64_t> SearchedExpertParallelSizes(const ModelSpec& model,
                                                 const PlanOptions& options) {
  if (!model.is_moe()) return {1};
  return SortedUnique(options.expert_parallel_sizes, Divisors(model.moe().num_experts));
}

std::vector<int64_t> SearchedExpertTensorParallelSizes(const ModelSpec& model,
                                                       const PlanOptions& options) {
  if (!model.is_moe()) return {0};
  return SortedUnique(options.expert_tensor_parallel_sizes, {0});
}

ConfigurationExplanation ExplainConfiguration(const ModelSpec& model, const TrainingSpec& training,
                                              const ClusterSpec& cluster,
                                              const PlanOptions& options,
                                              const PerformanceParameters& params, const Plan& plan,
                                              const ParallelDims& dims) {
  ConfigurationExplanation explanation;
  explanation.rejection = CheckRules(model, training, cluster, options.rules, dims);
  if (explanation.rejection != Rejection::kValid) {
    explanation.outcome = PlanOutcome::kRejected;
    return explanation;
  }
  const ParallelConfig config = ParallelConfig::FromCheckedDims(dims);
  explanation.has_memory = true;
  explanation.memory = EstimateMemory(model, training, cluster, config, options.memory);
  explanation.predicted = PredictPerformance(model, training, cluster, config, params);

  const auto searched = [](const auto& values, auto value) {
    return std::find(values.begin(), values.end(), value) != values.end();
  };
  if (!searched(SearchedMicroBatchSizes(options), dims.micro_batch)) {
    explanation.outcome = PlanOutcome::kOutsideSearchSpace;
    explanation.outside = SearchDimension::kMicroBatch;
  } else if (!searched(SearchedVirtualPipelineSizes(options), dims.virtual_pipeline)) {
    explanation.outcome = PlanOutcome::kOutsideSearchSpace;
    explanation.outside = SearchDimension::kVirtualPipeline;
  } else if (!searched(SearchedRecomputeModes(options), dims.recompute)) {
    explanation.outcome = PlanOutcome::kOutsideSearchSpace;
    explanation.outside = SearchDimension::kRecompute;
  } else if (dims.sequence_parallel != (dims.tp > 1)) {
    explanation.outcome = PlanOutcome::kOutsideSearchSpace;
    explanation.outside = SearchDimension::kSequenceParallel;
  } else if (!searched(SearchedExpertParallelSizes(model, options), dims.ep)) {
    explanation.outcome = PlanOutcome::kOutsideSearchSpace;
    explanation.outside = SearchDimension::kExpertParallel;
  } else if (!SearchesExpertTensorParallel(model, options, dims)) {
    explanation.outcome = PlanOutcome::kOutsideSearchSpace;
    explanation.outside = SearchDimension::kExpertTensorParallel;
  } else if (!searched(SearchedDataParallelShardings(training, options), dims.dp_sharding)) {
    explanation.outcome = PlanOutcome::kOutsideSearchSpace;
    explanation.outside = SearchDimension::kDpSharding;
  } else if (!searched(SearchedDpShardGroups(options), dims.dp_shard_group)) {
    explanation.outcome = PlanOutcome::kOutsideSearchSpace;
    explanation.outside = SearchDimension::kDpShardGroup;
  } else if (explanation.memory.verdict == MemoryVerdict::kOutOfMemory) {
    explanation.outcome = PlanOutcome::kOutOfMemory;
  } else if (explanation.memory.verdict == MemoryVerdict::kRisky && !options.include_risky) {
    explanation.outcome = PlanOutcome::kRisky;
  } else {
    explanation.outcome = PlanOutcome::kCandidate;
    for (size_t i = 0; i < plan.candidates.size(); ++i) {
      if (SameDims(plan.candidates[i].config.dims(), dims)) {
        explanation.rank = static_cast<int64_t>(i);
        break;
      }
    }
  }
  return explanation;
}

int64_t CountEnumeratedConfigurations(const ModelSpec& model, const TrainingSpec& training,
                                      int64_t world_size, const PlanOptions& options) {
  if (world_size < 1) return 0;
  const std::vector<DataParallelSharding> shardings =
      SearchedDataParallelShardings(training, options);
  const std::vector<int64_t> groups = SearchedDpShardGroups(options);
  const std::vector<int64_t> expert_sizes = SearchedExpertParallelSizes(model, options);
  const std::vector<int64_t> expert_tensor_sizes =
      SearchedExpertTensorParallelSizes(model, options);
  const std::vector<int64_t> divisors = Divisors(world_size);
  const int64_t per_layout = static_cast<int64_t>(SearchedMicroBatchSizes(options).size()) *
                             static_cast<int64_t>(SearchedRecomputeModes(options).size());
  const std::vector<int64_t> virtual_sizes = SearchedVirtualPipelineSizes(options);
  const int64_t all_virtual = static_cast<int64_t>(virtual_sizes.size());
  const int64_t without_pp = static_cast<int64_t>(
      std::count_if(virtual_sizes.begin(), virtual_sizes.end(), [](int64_t v) { return v <= 1; }));
  int64_t count = 0;
  // The same (tp, cp, pp, ep, etp) loops as PlanConfigurations.
  for (int64_t tp : divisors) {
    for (int64_t cp : divisors) {
      if ((world_size / tp) % cp != 0) continue;
      for (int64_t pp : divisors) {
        if ((world_size / (tp * cp)) % pp != 0) continue;
        for (int64_t ep : expert_sizes) {
          for (int64_t etp : expert_tensor_sizes) {
            if (!ExpertLayoutFolds(world_size, pp, ep, etp == 0 ? tp : etp)) continue;
            count += (pp == 1 ? without_pp : all_virtual) * per_layout *
                     ShardingLayoutsFor(world_size / (tp * cp * pp), shardings, groups);
          }
        }
      }
    }
  }
  return count;
}

absl::StatusOr<Plan> PlanConfigurations(const ModelSpec& model, const TrainingSpec& training,
                                        const ClusterSpec& cluster, const PlanOptions& options,
                                        const PerformanceParameters& params) {
  absl::Status status = ValidateOptions(model, options);
  if (!status.ok()) return status;
  const int64_t world = cluster.world_size();
  const std::vector<int64_t> divisors = Divisors(world);
  const std::vector<int64_t> micro_batch_sizes = SearchedMicroBatchSizes(options);
  const std::vector<int64_t> virtual_sizes = SearchedVirtualPipelineSizes(options);
  const std::vector<Recompute> recompute_modes = SearchedRecomputeModes(options);
  const std::vector<int64_t> expert_sizes = SearchedExpertParallelSizes(model, options);
  const std::vector<int64_t> expert_tensor_sizes =
      SearchedExpertTensorParallelSizes(model, options);
  const std::vector<DataParallelSharding> shardings =
      SearchedDataParallelShardings(training, options);
  const std::vector<int64_t> shard_groups = SearchedDpShardGroups(options);

  Plan plan;
  // One enumerated configuration: counted, checked, estimated, kept if its verdict allows.
  const auto consider = [&](const ParallelDims& dims) {
    ++plan.counts.enumerated;
    const Rejection rejection = CheckRules(model, training, cluster, options.rules, dims);
    if (rejection != Rejection::kValid) {
      ++plan.rejections[static_cast<int>(rejection)];
      return;
    }
    ++plan.counts.valid;
    const ParallelConfig config = ParallelConfig::FromCheckedDims(dims);
    const MemoryEstimate memory = EstimateMemory(model, training, cluster, config, options.memory);
    plan.memory_map.push_back(
        {dims, static_cast<float>(memory.fraction_of_capacity), memory.verdict});
    if (memory.verdict == MemoryVerdict::kSafe) ++plan.counts.safe;
    if (memory.verdict == MemoryVerdict::kRisky) ++plan.counts.risky;
    if (memory.verdict == MemoryVerdict::kOutOfMemory) ++plan.counts.out_of_memory;
    const bool keep = memory.verdict == MemoryVerdict::kSafe ||
                      (memory.verdict == MemoryVerdict::kRisky && options.include_risky);
    if (!keep) return;
    plan.candidates.push_back(
        {config, memory, PredictPerformance(model, training, cluster, config, params)});
  };
  // The innermost dimensions of one (tp, cp, pp, ep, etp, vp, recompute) layout.
  const auto enumerate_layout = [&](ParallelDims dims) {
    for (DataParallelSharding sharding : shardings) {
      dims.dp_sharding = sharding;
      for (int64_t group : shard_groups) {
        if (!ShardGroupApplies(sharding, group, dims.dp)) continue;
        dims.dp_shard_group = group;
        for (int64_t micro_batch : micro_batch_sizes) {
          dims.micro_batch = micro_batch;
          consider(dims);
        }
      }
    }
  };
  ParallelDims dims;
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
        for (int64_t ep : expert_sizes) {
          for (int64_t etp : expert_tensor_sizes) {
            if (!ExpertLayoutFolds(world, pp, ep, etp == 0 ? tp : etp)) continue;
            dims.ep = ep;
            dims.etp = etp;
            for (int64_t vp : virtual_sizes) {
              // v > 1 needs pp > 1; counting those would only inflate the rejections.
              if (vp > 1 && pp == 1) continue;
              dims.virtual_pipeline = vp;
              for (Recompute recompute : recompute_modes) {
                dims.recompute = recompute;
                enumerate_layout(dims);
              }
            }
          }
        }
      }
    }
  }
  std::sort(plan.candidates.begin(), plan.candidates.end(), PredictedBefore);
  return plan;
}

}  // namespace paratune
