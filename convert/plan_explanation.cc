#include "convert/plan_explanation.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "convert/estimate_convert.h"
#include "convert/estimate_requests.h"
#include "convert/spec_convert.h"
#include "estimator/cluster_spec.h"
#include "estimator/memory_model.h"
#include "estimator/model_spec.h"
#include "estimator/parallel_config.h"
#include "estimator/planner.h"
#include "estimator/training_spec.h"

namespace paratune {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string Percent(double fraction) { return absl::StrFormat("%.1f%%", 100.0 * fraction); }

std::string GiB(double bytes) { return absl::StrFormat("%.2f GiB", bytes / kGiB); }

// "peak 93.12 GiB on stage 3 = 117.0% of the 79.65 GiB capacity".
std::string PeakSentence(const MemoryEstimate& memory) {
  return absl::StrCat("peak ", GiB(memory.peak_bytes), " on stage ", memory.peak_stage, " = ",
                      Percent(memory.fraction_of_capacity), " of the ", GiB(memory.capacity_bytes),
                      " capacity");
}

std::string OutsideSearchSpace(SearchDimension dimension, const ParallelDims& dims,
                               const ModelSpec& model, const TrainingSpec& training,
                               const PlanOptions& options) {
  switch (dimension) {
    case SearchDimension::kMicroBatch:
      return absl::StrCat(
          "micro-batch size ", dims.micro_batch, " is not among the searched sizes (",
          absl::StrJoin(SearchedMicroBatchSizes(options), ", "), "); --micro_batches sets them");
    case SearchDimension::kVirtualPipeline:
      return absl::StrCat("virtual pipeline size ", dims.virtual_pipeline,
                          " is not among the searched sizes (",
                          absl::StrJoin(SearchedVirtualPipelineSizes(options), ", "),
                          "); --virtual_pipeline_sizes sets them");
    case SearchDimension::kRecompute: {
      std::vector<std::string> modes;
      for (Recompute mode : SearchedRecomputeModes(options)) modes.push_back(RecomputeName(mode));
      return absl::StrCat("recompute ", RecomputeName(dims.recompute),
                          " is not among the searched modes (", absl::StrJoin(modes, ", "),
                          "); --recompute_modes sets them");
    }
    case SearchDimension::kSequenceParallel:
      return absl::StrCat("sequence parallelism ", dims.sequence_parallel ? "on" : "off",
                          " with tp ", dims.tp,
                          ": plans use sequence parallelism exactly when tp > 1");
    case SearchDimension::kExpertParallel:
      return absl::StrCat("expert parallel size ", dims.ep, " is not among the searched sizes (",
                          absl::StrJoin(SearchedExpertParallelSizes(model, options), ", "),
                          "); --expert_parallel_sizes sets them");
    case SearchDimension::kExpertTensorParallel: {
      // 0 in the searched list is each configuration's tp.
      std::vector<std::string> sizes;
      for (int64_t etp : SearchedExpertTensorParallelSizes(model, options)) {
        sizes.push_back(etp == 0 ? "that of tp" : absl::StrCat(etp));
      }
      return absl::StrCat("expert tensor parallel size ", ExpertTensorParallel(dims),
                          " is not among the searched sizes (", absl::StrJoin(sizes, ", "),
                          "); --expert_tensor_parallel_sizes sets them");
    }
    case SearchDimension::kDpSharding: {
      std::vector<std::string> modes;
      for (DataParallelSharding mode : SearchedDataParallelShardings(training, options)) {
        modes.push_back(DataParallelShardingName(mode));
      }
      return absl::StrCat("data-parallel sharding ", DataParallelShardingName(dims.dp_sharding),
                          " is not among the searched modes (", absl::StrJoin(modes, ", "),
                          "); --dp_sharding_modes sets them");
    }
    case SearchDimension::kDpShardGroup:
      return absl::StrCat(
          "hybrid-sharding group ", dims.dp_shard_group, " is not among the searched groups (",
          absl::StrJoin(SearchedDpShardGroups(options), ", "), "); --dp_shard_groups sets them");
  }
  return "not searched";
}

v1::ExplainedOutcome OutcomeToProto(PlanOutcome outcome) {
  switch (outcome) {
    case PlanOutcome::kCandidate:
      return v1::EXPLAINED_CANDIDATE;
    case PlanOutcome::kRejected:
      return v1::EXPLAINED_REJECTED;
    case PlanOutcome::kOutsideSearchSpace:
      return v1::EXPLAINED_NOT_SEARCHED;
    case PlanOutcome::kOutOfMemory:
      return v1::EXPLAINED_OUT_OF_MEMORY;
    case PlanOutcome::kRisky:
      return v1::EXPLAINED_RISKY;
  }
  return v1::EXPLAINED_OUTCOME_UNSPECIFIED;
}

// Why `dims` is or is not among the plan's candidates, of which the plan table shows `shown`.
std::string DescribeExplanation(const ConfigurationExplanation& explanation,
                                const ParallelDims& dims, const ModelSpec& model,
                                const TrainingSpec& training, const ClusterSpec& cluster,
                                const PlanOptions& options, const Plan& plan, int64_t shown) {
  switch (explanation.outcome) {
    case PlanOutcome::kCandidate: {
      std::string reason = absl::StrFormat(
          "a candidate: #%d of %d in predicted order, %.1f TFLOP/s per GPU predicted",
          explanation.rank + 1, plan.candidates.size(), explanation.predicted.model_tflops_per_gpu);
      if (explanation.rank >= shown) {
        absl::StrAppend(&reason, "; beyond the ", shown, " the plan table shows (--limit)");
      }
      return reason;
    }
    case PlanOutcome::kRejected:
      return absl::StrCat("rejected by a validity rule: ",
                          DescribeRejection(explanation.rejection, model, training, cluster, dims));
    case PlanOutcome::kOutsideSearchSpace:
      return absl::StrCat("not enumerated: ",
                          OutsideSearchSpace(explanation.outside, dims, model, training, options));
    case PlanOutcome::kOutOfMemory:
      return absl::StrCat("pruned, out of memory: ", PeakSentence(explanation.memory),
                          " (OOM above 100%)");
    case PlanOutcome::kRisky:
      return absl::StrCat("pruned, RISKY: ", PeakSentence(explanation.memory), ", at or above the ",
                          Percent(options.memory.safe_fraction),
                          " SAFE threshold; --memory_policy=measure_risky (the default) keeps "
                          "RISKY configurations");
  }
  return "not explained";
}

}  // namespace

absl::StatusOr<v1::ExplainResponse> AnswerExplain(const v1::ExplainRequest& request) {
  PT_ASSIGN_OR_RETURN(const DetailedPlan detailed, AnswerPlanInDetail(request.plan()));
  const ResolvedSpec& spec = detailed.spec;
  PT_ASSIGN_OR_RETURN(const ParallelDims dims,
                      ParallelDimsFromProto(request.config(), spec.training));
  const ConfigurationExplanation explanation =
      ExplainConfiguration(spec.model, spec.training, spec.cluster, spec.plan_options,
                           detailed.params, detailed.plan, dims);
  v1::ExplainResponse response;
  response.set_outcome(OutcomeToProto(explanation.outcome));
  response.set_reason(DescribeExplanation(explanation, dims, spec.model, spec.training,
                                          spec.cluster, spec.plan_options, detailed.plan,
                                          detailed.response.candidates_size()));
  if (explanation.outcome == PlanOutcome::kCandidate) response.set_rank(explanation.rank + 1);
  if (explanation.has_memory) {
    *response.mutable_estimate()->mutable_memory() =
        MemoryEstimateToProto(explanation.memory, ParallelConfig::FromCheckedDims(dims),
                              spec.plan_options.memory.safe_fraction);
    *response.mutable_estimate()->mutable_performance() =
        PerformanceEstimateToProto(explanation.predicted);
  }
  return response;
}

}  // namespace paratune
