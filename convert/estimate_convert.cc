#include "convert/estimate_convert.h"

#include <cmath>

#include "convert/spec_convert.h"

namespace paratune {

v1::MemoryVerdict VerdictToProto(MemoryVerdict verdict) {
  switch (verdict) {
    case MemoryVerdict::kSafe:
      return v1::SAFE;
    case MemoryVerdict::kRisky:
      return v1::RISKY;
    case MemoryVerdict::kOutOfMemory:
      return v1::OUT_OF_MEMORY;
  }
  return v1::MEMORY_VERDICT_UNSPECIFIED;
}

namespace {

// Every term, zeros included, so that all stages list the same terms in the same order; the
// total is the sum of the rounded terms, as the API promises.
v1::StageMemory StageToProto(const StageMemory& stage) {
  v1::StageMemory proto;
  proto.set_stage(stage.stage);
  int64_t total = 0;
  for (int i = 0; i < static_cast<int>(MemoryTerm::kCount); ++i) {
    const int64_t bytes = std::llround(stage.bytes[i]);
    v1::MemoryTerm& term = *proto.add_terms();
    term.set_name(MemoryTermName(static_cast<MemoryTerm>(i)));
    term.set_bytes(bytes);
    total += bytes;
  }
  proto.set_total_bytes(total);
  return proto;
}

}  // namespace

v1::MemoryEstimate MemoryEstimateToProto(const MemoryEstimate& estimate,
                                         const ParallelConfig& config, double safe_fraction) {
  v1::MemoryEstimate proto;
  *proto.add_stages() = StageToProto(estimate.first_stage);
  if (config.pp() > 2) *proto.add_stages() = StageToProto(estimate.middle_stage);
  if (config.pp() > 1) *proto.add_stages() = StageToProto(estimate.last_stage);
  int peak_index = 0;
  if (estimate.peak_stage == estimate.middle_stage.stage && config.pp() > 2) peak_index = 1;
  if (estimate.peak_is_last_stage) peak_index = proto.stages_size() - 1;
  proto.set_peak_stage_index(peak_index);
  proto.set_peak_bytes(proto.stages(peak_index).total_bytes());
  proto.set_capacity_bytes(std::llround(estimate.capacity_bytes));
  proto.set_fraction_of_capacity(estimate.fraction_of_capacity);
  proto.set_safe_threshold(safe_fraction);
  proto.set_verdict(VerdictToProto(estimate.verdict));
  return proto;
}

v1::PerformanceEstimate PerformanceEstimateToProto(const PerformanceEstimate& estimate) {
  v1::PerformanceEstimate proto;
  proto.set_step_time_seconds(estimate.step_time_seconds);
  proto.set_compute_seconds(estimate.compute_seconds);
  proto.set_pipeline_bubble_seconds(estimate.pipeline_bubble_seconds);
  proto.set_tp_communication_seconds(estimate.tp_communication_seconds);
  proto.set_cp_communication_seconds(estimate.cp_communication_seconds);
  proto.set_ep_communication_seconds(estimate.ep_communication_seconds);
  proto.set_dp_communication_seconds(estimate.dp_communication_seconds);
  proto.set_pp_communication_seconds(estimate.pp_communication_seconds);
  proto.set_optimizer_seconds(estimate.optimizer_seconds);
  proto.set_tokens_per_second(estimate.tokens_per_second);
  proto.set_model_tflops_per_gpu(estimate.model_tflops_per_gpu);
  proto.set_mfu(estimate.mfu);
  proto.set_mfu_peak_tflops(estimate.mfu_peak_tflops);
  proto.set_mfu_peak_precision(estimate.mfu_peak_is_fp8 ? "fp8" : "bf16");
  proto.set_model_flops_per_step(estimate.model_flops_per_step);
  proto.set_relative_error(estimate.relative_error);
  return proto;
}

v1::PlanResponse PlanToProto(const Plan& plan, const PlanOptions& options, int64_t limit) {
  v1::PlanResponse proto;
  v1::SearchCounts& counts = *proto.mutable_counts();
  counts.set_enumerated(plan.counts.enumerated);
  counts.set_valid(plan.counts.valid);
  // SearchCounts.memory_safe counts what the search may probe: RISKY too when included.
  counts.set_memory_safe(plan.counts.safe + (options.include_risky ? plan.counts.risky : 0));
  counts.set_memory_risky(plan.counts.risky);
  counts.set_memory_out_of_memory(plan.counts.out_of_memory);
  const int64_t size = static_cast<int64_t>(plan.candidates.size());
  const int64_t shown = limit > 0 && limit < size ? limit : size;
  for (int64_t i = 0; i < shown; ++i) {
    const PlannedConfig& planned = plan.candidates[i];
    v1::Candidate& candidate = *proto.add_candidates();
    *candidate.mutable_config() = ParallelConfigToProto(planned.config);
    *candidate.mutable_memory() =
        MemoryEstimateToProto(planned.memory, planned.config, options.memory.safe_fraction);
    *candidate.mutable_predicted() = PerformanceEstimateToProto(planned.predicted);
    candidate.set_state(v1::CANDIDATE_PLANNED);
  }
  for (int i = 1; i < static_cast<int>(Rejection::kCount); ++i) {
    if (plan.rejections[i] == 0) continue;
    v1::RejectionCount& rejection = *proto.add_rejections();
    rejection.set_reason(RejectionRule(static_cast<Rejection>(i)));
    rejection.set_count(plan.rejections[i]);
  }
  return proto;
}

v1::PlanAdvice PlanAdviceToProto(const PlanAdvice& advice) {
  v1::PlanAdvice proto;
  switch (advice.kind) {
    case AdviceKind::kRecompute:
      proto.set_kind(v1::ADVICE_RECOMPUTE);
      for (Recompute mode : advice.recompute_modes) {
        proto.add_recompute_modes(RecomputeToProto(mode));
      }
      break;
    case AdviceKind::kNodes:
      proto.set_kind(v1::ADVICE_NODES);
      proto.set_num_nodes(advice.num_nodes);
      break;
    case AdviceKind::kGpuType:
      proto.set_kind(v1::ADVICE_GPU_TYPE);
      proto.set_gpu_type(advice.gpu_type);
      break;
    case AdviceKind::kFp8Parameters:
      proto.set_kind(v1::ADVICE_FP8_PARAMETERS);
      break;
    case AdviceKind::kSequenceLength:
      proto.set_kind(v1::ADVICE_SEQUENCE_LENGTH);
      proto.set_seq_len(advice.seq_len);
      break;
    case AdviceKind::kMicroBatchSizes:
      proto.set_kind(v1::ADVICE_MICRO_BATCH_SIZES);
      for (int64_t size : advice.micro_batch_sizes) proto.add_micro_batch_sizes(size);
      break;
  }
  proto.set_candidates(advice.candidates);
  return proto;
}

}  // namespace paratune
