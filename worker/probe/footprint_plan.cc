#include "worker/probe/footprint_plan.h"

#include <algorithm>
#include <utility>

#include "absl/status/statusor.h"
#include "worker/probe/attention_graph.h"
#include "worker/probe/context_parallel_ring.h"
#include "worker/probe/overlap_plan.h"
#include "worker/probe/pipeline_schedule.h"
#include "worker/probe/weight_gather_plan.h"

namespace paratune {

const char* ProbeBufferName(ProbeBuffer buffer) {
  switch (buffer) {
    case ProbeBuffer::kWeights:
      return "weights";
    case ProbeBuffer::kGradients:
      return "gradients";
    case ProbeBuffer::kGradientStaging:
      return "gradient_staging";
    case ProbeBuffer::kGatheredWeights:
      return "gathered_weights";
    case ProbeBuffer::kMasterWeights:
      return "master_weights";
    case ProbeBuffer::kAdamFirstMoment:
      return "adam_first_moment";
    case ProbeBuffer::kAdamSecondMoment:
      return "adam_second_moment";
    case ProbeBuffer::kActivationSlots:
      return "activation_slots";
    case ProbeBuffer::kRecomputeWorkspace:
      return "recompute_workspace";
    case ProbeBuffer::kLossSlots:
      return "loss_slots";
    case ProbeBuffer::kPipelineSendActivation:
      return "pipeline_send_activation";
    case ProbeBuffer::kPipelineReceiveGradient:
      return "pipeline_receive_gradient";
    case ProbeBuffer::kFp8WeightCopies:
      return "fp8_weight_copies";
    case ProbeBuffer::kFp8ScalingState:
      return "fp8_scaling_state";
    case ProbeBuffer::kMoePermutedTokens:
      return "moe_permuted_tokens";
    case ProbeBuffer::kMoePermutedProbabilities:
      return "moe_permuted_probabilities";
    case ProbeBuffer::kMoeReceivedTokens:
      return "moe_received_tokens";
    case ProbeBuffer::kMoeReceivedProbabilities:
      return "moe_received_probabilities";
    case ProbeBuffer::kMoeExpertOutput:
      return "moe_expert_output";
    case ProbeBuffer::kMoeCombinedTokens:
      return "moe_combined_tokens";
    case ProbeBuffer::kGemmWorkspace:
      return "gemm_workspace";
    case ProbeBuffer::kTokens:
      return "tokens";
    case ProbeBuffer::kLabels:
      return "labels";
    case ProbeBuffer::kGathered:
      return "gathered";
    case ProbeBuffer::kQkvProjection:
      return "qkv_projection";
    case ProbeBuffer::kAttentionHeads:
      return "attention_heads";
    case ProbeBuffer::kQueryGradient:
      return "query_gradient";
    case ProbeBuffer::kAttentionScores:
      return "attention_scores";
    case ProbeBuffer::kAttentionProbabilities:
      return "attention_probabilities";
    case ProbeBuffer::kKeyValueGathered:
      return "key_value_gathered";
    case ProbeBuffer::kKeyValueGradients:
      return "key_value_gradients";
    case ProbeBuffer::kAttentionRowSums:
      return "attention_row_sums";
    case ProbeBuffer::kProjectionOutput:
      return "projection_output";
    case ProbeBuffer::kReduced:
      return "reduced";
    case ProbeBuffer::kResidualGradient:
      return "residual_gradient";
    case ProbeBuffer::kMlpGradient:
      return "mlp_gradient";
    case ProbeBuffer::kSwigluGradient:
      return "swiglu_gradient";
    case ProbeBuffer::kQkvGradient:
      return "qkv_gradient";
    case ProbeBuffer::kAttentionOutputGradient:
      return "attention_output_gradient";
    case ProbeBuffer::kLogitsGradient:
      return "logits_gradient";
    case ProbeBuffer::kLossStatistics:
      return "loss_statistics";
    case ProbeBuffer::kMoeExpertGateUpGradient:
      return "moe_expert_gate_up_gradient";
    case ProbeBuffer::kMoeExpertSwigluGradient:
      return "moe_expert_swiglu_gradient";
    case ProbeBuffer::kMoeRouterLogitsGradient:
      return "moe_router_logits_gradient";
    case ProbeBuffer::kMoeProbabilityGradient:
      return "moe_probability_gradient";
    case ProbeBuffer::kLinearInput:
      return "linear_input";
    case ProbeBuffer::kFp8Input:
      return "fp8_input";
    case ProbeBuffer::kFp8InputTransposed:
      return "fp8_input_transposed";
    case ProbeBuffer::kFp8OutputGradient:
      return "fp8_output_gradient";
    case ProbeBuffer::kFp8OutputGradientTransposed:
      return "fp8_output_gradient_transposed";
    case ProbeBuffer::kCount:
      break;
  }
  return "?";
}

namespace {

constexpr int64_t kBufferAlignment = 256;
constexpr int64_t kBf16 = 2;
constexpr int64_t kFp32 = 4;
constexpr int64_t kInt32 = 4;
constexpr int64_t kFp8 = 1;

int64_t Align(int64_t bytes) {
  return (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

// Fills the terms and placements in order: a term, then the buffers it holds.
class TermBuilder {
 public:
  TermBuilder(std::vector<TermAllocation>* terms,
              std::array<BufferPlacement, static_cast<int>(ProbeBuffer::kCount)>* placements)
      : terms_(terms), placements_(placements) {}

  // A term the probe allocates; Add its buffers next.
  void Term(std::string name, double estimated_bytes) {
    TermAllocation& term = terms_->emplace_back();
    term.name = std::move(name);
    term.estimated_bytes = static_cast<int64_t>(estimated_bytes);
    term.allocated_bytes = term.estimated_bytes;
    allocated_by_probe_ = true;
  }

  // A term the CUDA runtime or NCCL allocates: estimated, never allocated by the probe.
  void RuntimeTerm(std::string name, double estimated_bytes) {
    Term(std::move(name), estimated_bytes);
    terms_->back().allocated_bytes = 0;
    allocated_by_probe_ = false;
  }

  void Add(ProbeBuffer buffer, int64_t bytes) {
    TermAllocation& term = terms_->back();
    BufferPlacement& placement = (*placements_)[static_cast<int>(buffer)];
    placement.term = static_cast<int>(terms_->size()) - 1;
    placement.offset = term.needed_bytes;
    placement.bytes = bytes;
    term.needed_bytes += Align(bytes);
    if (allocated_by_probe_) {
      term.allocated_bytes = std::max(term.allocated_bytes, term.needed_bytes);
    }
  }

 private:
  std::vector<TermAllocation>* terms_;
  std::array<BufferPlacement, static_cast<int>(ProbeBuffer::kCount)>* placements_;
  bool allocated_by_probe_ = true;
};

// Scores and probabilities have up to s columns, rows rounded up to 8 (attention_kernels.h).
int64_t AttentionRowStride(const ShardShapes& x) { return (x.sequence + 7) / 8 * 8; }

// The most queries of one sequence per attention chunk: a power of two at most the
// position-contiguous segment of the rank's tokens (with context parallelism each rank holds
// two: chunks i and 2c - 1 - i of the sequence) whose scores (fp32) and probabilities (bf16)
// against all s keys fit kAttentionWorkspaceBytes; at least 1.
int64_t AttentionQueryChunk(const ShardShapes& x) {
  const int64_t segment = x.context_parallel > 1 ? x.sequence_per_rank / 2 : x.sequence_per_rank;
  const int64_t bytes_per_query = x.query_heads * AttentionRowStride(x) * (kFp32 + kBf16);
  int64_t chunk = 1;
  while (chunk * 2 <= segment && chunk * 2 * bytes_per_query <= kAttentionWorkspaceBytes) {
    chunk *= 2;
  }
  return chunk;
}

}  // namespace

int64_t AttentionPlanWorkspaceBytes(const ShardShapes& x) {
  const int64_t query_accumulator =
      x.micro_batch * x.sequence_per_rank * x.query_heads * x.head_dim * kFp32;
  return query_accumulator + kAttentionPlanSlackBytes;
}

int64_t AttentionScoresBytes(const ShardShapes& x, CpCommType exchange) {
  const int64_t chunk_scores =
      AttentionQueryChunk(x) * x.query_heads * AttentionRowStride(x) * kFp32;
  const int64_t n = x.sequence_per_rank;
  const bool all_gather = x.context_parallel > 1 && exchange != CpCommType::kP2p;
  // The backward graph with the most workspace tensors (the most queries).
  absl::StatusOr<AttentionGraph> backward = absl::UnknownError("unset");
  if (x.context_parallel == 1) {
    backward = CausalAttentionBackwardGraph(x);
  } else if (!all_gather) {
    backward = AttentionBackwardGraph(x, {0, n, 0, n, RingMask::kCausal});
  } else {
    const absl::StatusOr<std::vector<RingProduct>> halves = AllGatherProducts(x, 0);
    backward = halves.ok() ? AttentionBackwardGraph(x, halves->back()) : halves.status();
  }
  if (!backward.ok()) return chunk_scores;  // the backward is chunked
  const int64_t reserved = all_gather ? AllGatherKeyValueBytes(x) : FusedBackwardGradientBytes(x);
  return std::max(chunk_scores,
                  reserved + backward->workspace_tensor_bytes + AttentionPlanWorkspaceBytes(x));
}

namespace {

const StageMemory& EstimateOfStage(const MemoryEstimate& estimate, int64_t stage, int64_t pp) {
  if (stage == 0) return estimate.first_stage;
  if (stage == pp - 1) return estimate.last_stage;
  return estimate.middle_stage;
}

}  // namespace

FootprintPlan FootprintPlan::OfStage(const ProbeSpec& spec, int64_t stage) {
  return Create(spec.model(), spec.training(), spec.cluster(), spec.config(), MemoryOptions(),
                stage);
}

FootprintPlan FootprintPlan::Create(const ModelSpec& model, const TrainingSpec& training,
                                    const ClusterSpec& cluster, const ParallelConfig& config,
                                    const MemoryOptions& memory_options, int64_t stage) {
  FootprintPlan plan(ComputeShardShapes(model, training, config),
                     StageLayersOf(model, config, stage));
  const ShardShapes& x = plan.shapes_;
  const bool distributed = ShardsOptimizerStates(config.dp_sharding());
  // The data x context ranks a replica's states are sharded over (estimator/parallel_config.h
  // DataParallelShardRanks: dp, or dp_shard_group under hybrid sharding, times cp).
  const int64_t shard_count = distributed ? config.dp_shard_ranks() * config.cp() : 1;
  if (model.is_moe()) {
    // ComputeMoeShardShapes accepts every configuration the probe runs (CheckCudaProbeRuns).
    plan.moe_ = *ComputeMoeShardShapes(model, training, config, x);
  }
  // The expert data-parallel size, tp cp dp / (etp ep) (estimator/moe_memory.h,
  // ExpertDataParallelSize).
  const int64_t expert_shard_count =
      distributed ? config.tp() * config.cp() * config.dp() / (config.etp() * config.ep()) : 1;
  plan.parameters_ = LayoutParameters(x, plan.moe_, plan.stage_layers_, model.tied_embeddings(),
                                      shard_count, expert_shard_count, training.fp8_param_gather());
  plan.layer_activations_ = LayoutLayerActivations(x, training.fp8());
  if (model.is_moe()) {
    plan.moe_layer_activations_ = LayoutMoeLayerActivations(x, plan.moe_);
    plan.moe_block_activations_ = LayoutMoeBlockActivations(x, plan.moe_);
  }
  if (training.fp8()) {
    plan.fp8_state_ =
        LayoutFp8State(x, plan.stage_layers_, kExportedFp8Recipe, training.fp8_param_gather());
  }
  plan.loss_activations_ = LayoutLossActivations(x);

  const int64_t v = config.virtual_pipeline();
  const std::vector<ScheduleStep> schedule =
      PipelineScheduleOf(config.pp(), v, config.NumMicroBatches(training), stage);
  plan.activation_slots_ = MaxPassesInFlight(schedule, std::nullopt);
  plan.loss_slots_ = plan.stage_layers_.lm_head ? MaxPassesInFlight(schedule, v - 1) : 0;
  plan.full_recompute_ = config.recompute() == Recompute::kFull;
  // At least one layer's room: a chunk of no layers (an uneven split's) still receives its
  // input into the slot.
  plan.slot_bytes_ = plan.full_recompute_ ? LayerInputBytes(x) : plan.layer_activations_.bytes;
  int64_t recompute_workspace = 0;
  int64_t layer = 0;
  for (int64_t layers : plan.stage_layers_.chunk_layers) {
    int64_t chunk_bytes = 0;
    for (int64_t end = layer + layers; layer < end; ++layer) {
      const int64_t block = plan.LayerActivationsOf(layer).bytes;
      plan.slot_layer_offsets_.push_back(chunk_bytes);
      chunk_bytes += plan.full_recompute_ ? LayerInputBytes(x) : block;
      recompute_workspace = std::max(recompute_workspace, block);
    }
    plan.slot_bytes_ = std::max(plan.slot_bytes_, chunk_bytes);
  }
  plan.attention_query_chunk_ = AttentionQueryChunk(x);

  const MemoryEstimate estimate = EstimateMemory(model, training, cluster, config, memory_options);
  const StageMemory& memory = EstimateOfStage(estimate, stage, config.pp());
  plan.estimated_bytes_ = memory.Total();

  TermBuilder terms(&plan.terms_, &plan.placements_);
  auto term = [&](MemoryTerm t) { terms.Term(MemoryTermName(t), memory.term(t)); };
  const int64_t parameters = plan.parameters_.padded_elements;
  const int64_t optimizer_elements = plan.parameters_.shard_elements;

  // Under sharded gradients the rank keeps its shard of them, and the unsharded gradients of
  // one unit at a time (UnitBuckets), as Megatron-FSDP's optim_grads does; under sharded
  // weights its shard of the bf16 weights too, and the units' weights gathered in
  // kGatheredWeightSlots slots (optim_grads_params; FSDP2).
  plan.sharded_gradients_ = ShardsGradients(config.dp_sharding());
  plan.sharded_weights_ = ShardsWeights(config.dp_sharding());
  int64_t largest_unit = 0;
  if (plan.sharded_gradients_) {
    for (const ParameterBucket& unit :
         UnitBuckets(plan.parameters_, plan.stage_layers_, model.tied_embeddings(), config.pp())) {
      largest_unit = std::max(largest_unit, unit.end - unit.start);
    }
  }
  if (plan.sharded_weights_) plan.gathered_weight_slot_bytes_ = largest_unit * kBf16;
  const int64_t gradient_bytes = training.fp32_gradients() ? kFp32 : kBf16;
  term(MemoryTerm::kWeights);
  terms.Add(ProbeBuffer::kWeights,
            plan.sharded_weights_ ? optimizer_elements * kBf16 : plan.parameters_.weight_bytes);
  term(MemoryTerm::kGradients);
  terms.Add(ProbeBuffer::kGradients,
            (plan.sharded_gradients_ ? optimizer_elements : parameters) * gradient_bytes);
  term(MemoryTerm::kOptimizerStates);
  terms.Add(ProbeBuffer::kMasterWeights, optimizer_elements * kFp32);
  terms.Add(ProbeBuffer::kAdamFirstMoment, optimizer_elements * kFp32);
  terms.Add(ProbeBuffer::kAdamSecondMoment, optimizer_elements * kFp32);
  term(MemoryTerm::kActivations);
  terms.Add(ProbeBuffer::kActivationSlots, plan.activation_slots_ * plan.slot_bytes_);
  terms.Add(ProbeBuffer::kRecomputeWorkspace, plan.full_recompute_ ? recompute_workspace : 0);
  term(MemoryTerm::kEmbeddingActivations);
  term(MemoryTerm::kOutputActivations);
  terms.Add(ProbeBuffer::kLossSlots, plan.loss_slots_ * plan.loss_activations_.bytes);
  terms.RuntimeTerm(MemoryTermName(MemoryTerm::kCudaContext),
                    memory.term(MemoryTerm::kCudaContext));
  terms.RuntimeTerm(MemoryTermName(MemoryTerm::kNcclBuffers),
                    memory.term(MemoryTerm::kNcclBuffers));
  term(MemoryTerm::kGradientBuckets);
  terms.Add(ProbeBuffer::kGradientStaging, largest_unit * gradient_bytes);
  term(MemoryTerm::kPipelineBuffers);
  const int64_t boundary = config.pp() > 1 ? PipelineBoundaryBytes(x) : 0;
  terms.Add(ProbeBuffer::kPipelineSendActivation, boundary);
  terms.Add(ProbeBuffer::kPipelineReceiveGradient, boundary);
  term(MemoryTerm::kFragmentation);
  // The memory model counts Transformer Engine's default amax history (1024 entries,
  // MemoryOptions::fp8_amax_history_len); the probe runs the exported recipe's (1), so the
  // scaling state's estimate is allocated and mostly unused.
  term(MemoryTerm::kFp8WeightCopies);
  terms.Add(ProbeBuffer::kFp8WeightCopies, plan.fp8_state_.weight_bytes);
  term(MemoryTerm::kFp8ScalingState);
  terms.Add(ProbeBuffer::kFp8ScalingState, plan.fp8_state_.scaling_bytes);
  const MoeShardShapes& moe = plan.moe_;
  const int64_t sent = moe.routed_copies;
  const int64_t computed = moe.received_copies;
  const int64_t received = moe.local_experts > 1            ? computed
                           : moe.expert_tensor_parallel > 1 ? sent
                                                            : 0;
  term(MemoryTerm::kMoeDispatcherBuffers);
  terms.Add(ProbeBuffer::kMoePermutedTokens, sent * x.hidden * kBf16);
  terms.Add(ProbeBuffer::kMoePermutedProbabilities, sent * kFp32);
  terms.Add(ProbeBuffer::kMoeReceivedTokens, received * x.hidden * kBf16);
  terms.Add(ProbeBuffer::kMoeReceivedProbabilities, received * kFp32);
  terms.Add(ProbeBuffer::kMoeExpertOutput, computed * x.hidden * kBf16);
  terms.Add(ProbeBuffer::kMoeCombinedTokens, sent * x.hidden * kBf16);
  term(MemoryTerm::kGatheredWeights);
  terms.Add(ProbeBuffer::kGatheredWeights, kGatheredWeightSlots * plan.gathered_weight_slot_bytes_);

  terms.Term("probe_workspace", 0);
  const int64_t T = x.tokens;
  const int64_t h = x.hidden;
  const int64_t query_values = T * x.query_heads * x.head_dim;
  // Context parallelism holds every rank's K and V (all-gather) or the ring's slots of them
  // (context_parallel_ring.h), in blocks of one rank's.
  const int64_t kv_block_values = 2 * T * x.kv_heads * x.head_dim;
  plan.context_parallel_ring_ =
      x.context_parallel > 1 && training.cp_comm_type() == CpCommType::kP2p;
  const bool ring = plan.context_parallel_ring_;
  const int64_t kv_blocks = ring ? RingKeyValueSlots(x.context_parallel) : x.context_parallel;
  const int64_t kv_gradient_blocks = ring ? kRingGradientSlots : x.context_parallel;
  const int64_t chunk_scores = plan.attention_query_chunk_ * x.query_heads * AttentionRowStride(x);
  terms.Add(ProbeBuffer::kGemmWorkspace, kGemmWorkspaceBytes);
  terms.Add(ProbeBuffer::kTokens, T * kInt32);
  terms.Add(ProbeBuffer::kLabels, T * kInt32);
  terms.Add(ProbeBuffer::kGathered, T * h * kBf16);
  terms.Add(ProbeBuffer::kQkvProjection, T * x.qkv.outputs * kBf16);
  terms.Add(ProbeBuffer::kAttentionHeads, query_values * kBf16);
  terms.Add(ProbeBuffer::kQueryGradient, query_values * kBf16);
  terms.Add(ProbeBuffer::kAttentionScores, AttentionScoresBytes(x, training.cp_comm_type()));
  terms.Add(ProbeBuffer::kAttentionProbabilities, chunk_scores * kBf16);
  terms.Add(ProbeBuffer::kKeyValueGathered,
            x.context_parallel > 1 ? kv_blocks * kv_block_values * kBf16 : 0);
  terms.Add(ProbeBuffer::kKeyValueGradients, kv_gradient_blocks * kv_block_values * kFp32);
  terms.Add(ProbeBuffer::kAttentionRowSums, T * x.query_heads * kFp32);
  terms.Add(ProbeBuffer::kProjectionOutput, T * h * kBf16);
  terms.Add(ProbeBuffer::kReduced, x.residual_tokens * h * kBf16);
  terms.Add(ProbeBuffer::kResidualGradient, x.residual_tokens * h * kBf16);
  terms.Add(ProbeBuffer::kMlpGradient,
            T * std::max(x.gate_up.outputs, moe.shared_fc1.outputs) * kBf16);
  terms.Add(ProbeBuffer::kSwigluGradient, T * std::max(x.ffn, moe.shared_ffn) * kBf16);
  terms.Add(ProbeBuffer::kQkvGradient, T * x.qkv.outputs * kBf16);
  terms.Add(ProbeBuffer::kAttentionOutputGradient, query_values * kBf16);
  terms.Add(ProbeBuffer::kLogitsGradient, plan.stage_layers_.lm_head ? T * x.vocab * kBf16 : 0);
  terms.Add(ProbeBuffer::kLossStatistics, plan.stage_layers_.lm_head ? 3 * T * kFp32 : 0);
  terms.Add(ProbeBuffer::kMoeExpertGateUpGradient, computed * moe.expert_fc1.outputs * kBf16);
  terms.Add(ProbeBuffer::kMoeExpertSwigluGradient, computed * moe.expert_ffn * kBf16);
  terms.Add(ProbeBuffer::kMoeRouterLogitsGradient, moe.routed_tokens * moe.experts * kBf16);
  // The experts' N copies' gradients, then the rank's R k copies' (a capacity below 1 drops
  // some: N < R k at etp 1).
  terms.Add(ProbeBuffer::kMoeProbabilityGradient,
            std::max(computed, moe.routed_tokens * moe.top_k) * kFp32);
  const bool fp8 = training.fp8();
  const int64_t widest_input = std::max({h, x.attention_output.inputs, x.ffn});
  const int64_t widest_output =
      std::max({x.qkv.outputs, x.attention_output.outputs, x.gate_up.outputs, x.down.outputs});
  terms.Add(ProbeBuffer::kLinearInput, fp8 ? T * std::max(h, x.ffn) * kBf16 : 0);
  terms.Add(ProbeBuffer::kFp8Input, fp8 ? T * widest_input * kFp8 : 0);
  terms.Add(ProbeBuffer::kFp8InputTransposed, fp8 && x.sequence_parallel ? h * T * kFp8 : 0);
  terms.Add(ProbeBuffer::kFp8OutputGradient, fp8 ? T * widest_output * kFp8 : 0);
  terms.Add(ProbeBuffer::kFp8OutputGradientTransposed, fp8 ? T * widest_output * kFp8 : 0);
  return plan;
}

}  // namespace paratune
