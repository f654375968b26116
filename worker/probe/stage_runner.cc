#include "worker/probe/stage_runner.h"

#include <algorithm>
#include <memory>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/probe/fp8_scaling.h"

namespace paratune {

// In fp8 training attention_norm_output, mlp_norm_output and swiglu_output hold the fp8
// copies the layout describes (LayerActivationLayout).
struct StageRunner::LayerActivations {
  DeviceRef attention_norm_output;
  DeviceRef attention_norm_rstd;
  DeviceRef query;
  DeviceRef key_value;
  DeviceRef attention_output;
  DeviceRef softmax_lse;
  DeviceRef mlp_input;
  DeviceRef mlp_norm_output;
  DeviceRef mlp_norm_rstd;
  DeviceRef gate_up;
  DeviceRef swiglu_output;
  DeviceRef attention_output_fp8;
  DeviceRef fp8_scale_inverses;
  // A mixture-of-experts layer's MoE block (MoeBlockActivationLayout); unset in a dense layer.
  DeviceRef router_logits;
  DeviceRef router_probabilities;
  DeviceRef router_indices;
  DeviceRef expert_input;
  DeviceRef expert_probabilities;
  DeviceRef expert_gate_up;
  DeviceRef expert_swiglu_output;
  DeviceRef shared_gate_up;
  DeviceRef shared_swiglu_output;
};

namespace {

constexpr int64_t kBf16 = 2;
constexpr int64_t kFp32 = 4;

LinearProduct ProductOf(LinearWeight weight, GemmRole role, DeviceRef a, DeviceRef b, DeviceRef c,
                        int64_t tokens, int64_t outputs, int64_t inputs, bool float_output) {
  LinearProduct product;
  product.weight = weight;
  product.role = role;
  product.a = a;
  product.b = b;
  product.c = c;
  product.tokens = tokens;
  product.outputs = outputs;
  product.inputs = inputs;
  product.float_output = float_output;
  return product;
}

}  // namespace

absl::StatusOr<std::unique_ptr<StageRunner>> StageRunner::Create(const ProbeSpec& spec,
                                                                 const FootprintPlan& footprint,
                                                                 const OptimizerLayout& optimizer,
                                                                 int64_t rank, DeviceOps* ops) {
  PT_RETURN_IF_ERROR(CheckCudaProbeRuns(spec));
  return std::unique_ptr<StageRunner>(new StageRunner(spec, footprint, optimizer, rank, ops));
}

StageRunner::StageRunner(const ProbeSpec& spec, const FootprintPlan& footprint,
                         const OptimizerLayout& optimizer, int64_t rank, DeviceOps* ops)
    : spec_(spec),
      footprint_(footprint),
      optimizer_(optimizer),
      shapes_(footprint.shapes()),
      ops_(ops),
      rank_(rank),
      stage_(spec.layout().CoordinatesOf(rank).pp),
      fp8_(footprint.fp8()),
      chunks_(ChunkUnitsOf(footprint.stage_layers())) {
  if (optimizer_.sharded_gradients) {
    unit_buckets_.resize(optimizer_.buckets.size());
    for (size_t b = 0; b < optimizer_.buckets.size(); ++b) {
      unit_buckets_[optimizer_.buckets[b].first_unit] = static_cast<int64_t>(b);
    }
  }
  SetMicroBatches(spec.micro_batches());
}

void StageRunner::FreeEverySlot() {
  slots_.clear();
  loss_slots_.clear();
  free_slots_.clear();
  free_loss_slots_.clear();
  // Taken from the back: slot 0 first.
  for (int64_t slot = footprint_.activation_slots() - 1; slot >= 0; --slot) {
    free_slots_.push_back(slot);
  }
  for (int64_t slot = footprint_.loss_slots() - 1; slot >= 0; --slot) {
    free_loss_slots_.push_back(slot);
  }
}

DeviceRef StageRunner::Weight(int64_t offset) const {
  if (optimizer_.sharded_weights) {
    return {ProbeBuffer::kGatheredWeights,
            gathered_slot_ * footprint_.gathered_weight_slot_bytes() +
                (offset - gathered_start_) * kBf16};
  }
  return {ProbeBuffer::kWeights, footprint_.parameters().WeightByte(offset)};
}

DeviceRef StageRunner::Gradient(int64_t offset) const {
  if (optimizer_.sharded_gradients) {
    return {ProbeBuffer::kGradientStaging, (offset - staged_start_) * GradientBytes()};
  }
  return {ProbeBuffer::kGradients, offset * GradientBytes()};
}

absl::Status StageRunner::BeginUnitBackward(int64_t unit) {
  PT_RETURN_IF_ERROR(BeginUnitWeights(unit, PassDirection::kBackward));
  if (!optimizer_.sharded_gradients) return absl::OkStatus();
  staged_start_ = optimizer_.buckets[unit_buckets_[unit]].start;
  return ops_->ZeroStagedGradients(unit_buckets_[unit]);
}

absl::Status StageRunner::EndUnitBackward(int64_t unit) {
  if (!optimizer_.sharded_gradients) return absl::OkStatus();
  return ops_->ReduceStagedGradients(unit_buckets_[unit]);
}

absl::Status StageRunner::BeginUnitForward(int64_t unit, int64_t stage_layer) {
  if (!optimizer_.sharded_weights) return absl::OkStatus();
  context_.layer = stage_layer;
  SetContext();
  return BeginUnitWeights(unit, PassDirection::kForward);
}

WeightGather StageRunner::GatherOf(const WeightUse& use) const {
  return {unit_buckets_[use.unit], use.slot};
}

absl::Status StageRunner::DispatchFirstWeightGather() {
  next_weight_use_ = 0;
  if (!optimizer_.sharded_weights || weight_gathers_.uses.empty()) return absl::OkStatus();
  return ops_->DispatchWeightGather(GatherOf(weight_gathers_.uses.front()));
}

absl::Status StageRunner::BeginUnitWeights(int64_t unit, PassDirection direction) {
  if (!optimizer_.sharded_weights) return absl::OkStatus();
  const std::vector<WeightUse>& uses = weight_gathers_.uses;
  if (next_weight_use_ >= uses.size() || uses[next_weight_use_].pass != pass_ ||
      uses[next_weight_use_].unit != unit || uses[next_weight_use_].direction != direction) {
    return absl::InternalError(absl::StrCat("unit ", unit, "'s weights in pass ", pass_,
                                            " are not the weight gather plan's use ",
                                            next_weight_use_, " of ", uses.size()));
  }
  const WeightUse& use = uses[next_weight_use_++];
  PT_RETURN_IF_ERROR(ops_->WaitWeightGather(GatherOf(use)));
  gathered_slot_ = use.slot;
  gathered_start_ = optimizer_.buckets[unit_buckets_[unit]].start;
  if (next_weight_use_ == uses.size()) return absl::OkStatus();
  return ops_->DispatchWeightGather(GatherOf(uses[next_weight_use_]));
}

int64_t StageRunner::StageLayer(int64_t chunk, int64_t layer_in_chunk) const {
  return footprint_.parameters().first_layer[chunk] + layer_in_chunk;
}

bool StageRunner::IsLossChunk(int64_t chunk) const {
  const StageLayers& stage = footprint_.stage_layers();
  return stage.lm_head && chunk == static_cast<int64_t>(stage.chunk_layers.size()) - 1;
}

DeviceRef StageRunner::LayerBlock(int64_t slot, int64_t chunk, int64_t layer_in_chunk) const {
  const int64_t start = slot * footprint_.slot_bytes();
  // A chunk of no layers receives its input at the slot's start.
  if (footprint_.stage_layers().chunk_layers[chunk] == 0)
    return {ProbeBuffer::kActivationSlots, start};
  return {ProbeBuffer::kActivationSlots,
          start + footprint_.LayerSlotOffset(StageLayer(chunk, layer_in_chunk))};
}

DeviceRef StageRunner::LayerInput(int64_t slot, int64_t chunk, int64_t layer_in_chunk) const {
  const DeviceRef block = LayerBlock(slot, chunk, layer_in_chunk);
  // Under full recomputation a slot keeps layer inputs alone.
  if (footprint_.full_recompute()) return block;
  return block.At(footprint_.layer_activations().input);
}

StageRunner::LayerActivations StageRunner::Kept(int64_t slot, int64_t chunk,
                                                int64_t layer_in_chunk) const {
  const DeviceRef block = footprint_.full_recompute()
                              ? DeviceRef{ProbeBuffer::kRecomputeWorkspace, 0}
                              : LayerBlock(slot, chunk, layer_in_chunk);
  const LayerActivationLayout& at =
      footprint_.LayerActivationsOf(StageLayer(chunk, layer_in_chunk));
  LayerActivations kept{block.At(at.attention_norm_output),
                        block.At(at.attention_norm_rstd),
                        block.At(at.query),
                        block.At(at.key_value),
                        block.At(at.attention_output),
                        block.At(at.softmax_lse),
                        block.At(at.mlp_input),
                        block.At(at.mlp_norm_output),
                        block.At(at.mlp_norm_rstd),
                        block.At(at.gate_up),
                        block.At(at.swiglu_output),
                        block.At(at.attention_output_fp8),
                        block.At(at.fp8_scale_inverses)};
  if (at.moe_block >= 0) {
    const DeviceRef moe = block.At(at.moe_block);
    const MoeBlockActivationLayout& m = footprint_.moe_block_activations();
    kept.router_logits = moe.At(m.router_logits);
    kept.router_probabilities = moe.At(m.router_probabilities);
    kept.router_indices = moe.At(m.router_indices);
    kept.expert_input = moe.At(m.expert_input);
    kept.expert_probabilities = moe.At(m.expert_probabilities);
    kept.expert_gate_up = moe.At(m.expert_gate_up);
    kept.expert_swiglu_output = moe.At(m.expert_swiglu_output);
    kept.shared_gate_up = moe.At(m.shared_gate_up);
    kept.shared_swiglu_output = moe.At(m.shared_swiglu_output);
  }
  return kept;
}

std::vector<Fp8Site> StageRunner::Fp8SitesOf(int64_t chunk, int64_t layer_in_chunk,
                                             const LayerActivations& kept) const {
  if (!fp8_) return {};
  const LayerParameterOffsets& w =
      footprint_.parameters().layers[StageLayer(chunk, layer_in_chunk)];
  // Fp8Linear order: each linear's weight and the kept input its backward reads.
  const std::pair<int64_t, DeviceRef> linears[kFp8LinearsPerLayer] = {
      {w.qkv, kept.attention_norm_output},
      {w.attention_output, kept.attention_output_fp8},
      {w.gate_up, kept.mlp_norm_output},
      {w.down, kept.swiglu_output}};
  std::vector<Fp8Site> sites;
  for (int linear = 0; linear < kFp8LinearsPerLayer; ++linear) {
    Fp8Site& site = sites.emplace_back();
    site.chunk = chunk;
    site.layer_in_chunk = layer_in_chunk;
    site.linear = static_cast<Fp8Linear>(linear);
    site.weight = Weight(linears[linear].first);
    site.kept = linears[linear].second;
    site.kept_scale_inverse = kept.fp8_scale_inverses.At(linear * kFp8ScaleInverseStride *
                                                         static_cast<int64_t>(sizeof(float)));
  }
  return sites;
}

absl::StatusOr<int64_t> StageRunner::SlotOf(int64_t chunk, int64_t micro_batch) {
  auto [it, added] = slots_.try_emplace({chunk, micro_batch}, -1);
  if (added) {
    if (free_slots_.empty()) {
      slots_.erase(it);
      return absl::InternalError(
          absl::StrCat("no free activation slot for chunk ", chunk, " micro-batch ", micro_batch,
                       " (the footprint holds ", footprint_.activation_slots(), ")"));
    }
    it->second = free_slots_.back();
    free_slots_.pop_back();
    tally_.most_activation_slots =
        std::max<int64_t>(tally_.most_activation_slots, static_cast<int64_t>(slots_.size()));
  }
  return it->second;
}

void StageRunner::ReleaseSlot(int64_t chunk, int64_t micro_batch) {
  auto it = slots_.find({chunk, micro_batch});
  free_slots_.push_back(it->second);
  slots_.erase(it);
}

absl::StatusOr<DeviceRef> StageRunner::LossSlotOf(int64_t micro_batch) {
  auto [it, added] = loss_slots_.try_emplace(micro_batch, -1);
  if (added) {
    if (free_loss_slots_.empty()) {
      loss_slots_.erase(it);
      return absl::InternalError(absl::StrCat("no free loss slot for micro-batch ", micro_batch,
                                              " (the footprint holds ", footprint_.loss_slots(),
                                              ")"));
    }
    it->second = free_loss_slots_.back();
    free_loss_slots_.pop_back();
    tally_.most_loss_slots =
        std::max<int64_t>(tally_.most_loss_slots, static_cast<int64_t>(loss_slots_.size()));
  }
  return DeviceRef{ProbeBuffer::kLossSlots, it->second * footprint_.loss_activations().bytes};
}

void StageRunner::ReleaseLossSlot(int64_t micro_batch) {
  auto it = loss_slots_.find(micro_batch);
  free_loss_slots_.push_back(it->second);
  loss_slots_.erase(it);
}

void StageRunner::SetMicroBatches(int64_t micro_batches) {
  const RankLayout& layout = spec_.layout();
  schedule_ =
      PipelineScheduleOf(layout.pp(), spec_.config().virtual_pipeline(), micro_batches, stage_);
  if (optimizer_.overlapped) {
    data_parallel_plan_ = DataParallelPlanOf(footprint_.parameters(), footprint_.stage_layers(),
                                             spec_.model().tied_embeddings(), schedule_, stage_,
                                             layout.pp(), layout.GroupSize(RankGroup::kDataContext),
                                             optimizer_.overlap, optimizer_.reduced);
  }
  if (optimizer_.sharded_weights) weight_gathers_ = WeightGatherPlanOf(schedule_, chunks_);
}

void StageRunner::SetContext() { ops_->SetContext(context_); }

absl::Status StageRunner::Reach(PlanPointKind kind, int64_t unit) {
  if (!optimizer_.overlapped) return absl::OkStatus();
  const PlanPoint point = PlanPointOf(kind, pass_, unit);
  const std::vector<PlanStep>& steps = data_parallel_plan_.steps;
  while (next_plan_step_ < steps.size() && steps[next_plan_step_].point == point) {
    PT_RETURN_IF_ERROR(ops_->IssueDataParallel(steps[next_plan_step_++]));
  }
  return absl::OkStatus();
}

absl::Status StageRunner::Step() {
  tally_ = StepTally();
  // Every pass gave its slots back by the end of the last step (or that step failed): each
  // step takes them in the same order, so that every step asks for the same work.
  FreeEverySlot();
  next_plan_step_ = 0;
  pass_ = 0;
  context_ = StepOpContext();
  SetContext();
  PT_RETURN_IF_ERROR(ops_->ZeroGradients());
  PT_RETURN_IF_ERROR(DispatchFirstWeightGather());
  if (fp8_) PT_RETURN_IF_ERROR(ops_->StartFp8Step());
  PT_RETURN_IF_ERROR(Reach(PlanPointKind::kStepStart));
  for (const ScheduleStep& step : schedule_) PT_RETURN_IF_ERROR(RunScheduleStep(step));
  context_ = StepOpContext();
  SetContext();
  PT_RETURN_IF_ERROR(Reach(PlanPointKind::kStepEnd));
  if (next_plan_step_ != data_parallel_plan_.steps.size()) {
    return absl::InternalError(absl::StrCat("data-parallel plan step ", next_plan_step_, " of ",
                                            data_parallel_plan_.steps.size(),
                                            " was never reached"));
  }
  if (next_weight_use_ != weight_gathers_.uses.size()) {
    return absl::InternalError(absl::StrCat("weight gather plan use ", next_weight_use_, " of ",
                                            weight_gathers_.uses.size(), " was never reached"));
  }
  return OptimizerStep();
}

absl::Status StageRunner::RunScheduleStep(const ScheduleStep& step) {
  context_ = StepOpContext();
  context_.pass = pass_;
  SetContext();
  if (!step.transfers.empty()) {
    std::vector<PipelineTransfer> transfers;
    for (const Transfer& t : step.transfers) {
      PipelineTransfer& transfer = transfers.emplace_back();
      transfer.transfer = t;
      switch (t.kind) {
        case TransferKind::kSendActivation:
          transfer.buffer = Buffer(ProbeBuffer::kPipelineSendActivation);
          break;
        case TransferKind::kReceiveActivation: {
          PT_ASSIGN_OR_RETURN(const int64_t slot, SlotOf(t.chunk, t.micro_batch));
          transfer.buffer = LayerInput(slot, t.chunk, 0);
          break;
        }
        case TransferKind::kSendGradient:
          transfer.buffer = Buffer(ProbeBuffer::kResidualGradient);
          break;
        case TransferKind::kReceiveGradient:
          transfer.buffer = Buffer(ProbeBuffer::kPipelineReceiveGradient);
          break;
      }
    }
    PT_RETURN_IF_ERROR(ops_->SendReceive(transfers));
  }
  if (!step.pass.has_value()) return absl::OkStatus();
  const PipelinePass& pass = *step.pass;
  context_.chunk = pass.chunk;
  context_.micro_batch = pass.micro_batch;
  PT_ASSIGN_OR_RETURN(context_.slot, SlotOf(pass.chunk, pass.micro_batch));
  SetContext();
  PT_RETURN_IF_ERROR(Reach(PlanPointKind::kBeforePass));
  PT_RETURN_IF_ERROR(pass.direction == PassDirection::kForward ? Forward(pass) : Backward(pass));
  context_.layer = -1;
  context_.recompute = false;
  SetContext();
  PT_RETURN_IF_ERROR(Reach(PlanPointKind::kAfterPass));
  ++pass_;
  return absl::OkStatus();
}

absl::Status StageRunner::Forward(const PipelinePass& pass) {
  const StageLayers& stage = footprint_.stage_layers();
  const bool embedding = stage.embedding && pass.chunk == 0;
  const bool loss = IsLossChunk(pass.chunk);
  const int64_t slot = context_.slot;
  DeviceRef loss_slot;
  if (loss) {
    PT_ASSIGN_OR_RETURN(loss_slot, LossSlotOf(pass.micro_batch));
  }
  const DeviceRef chunk_output = loss ? loss_slot.At(footprint_.loss_activations().input)
                                      : Buffer(ProbeBuffer::kPipelineSendActivation);
  const int64_t layers = stage.chunk_layers[pass.chunk];
  const ChunkUnits& units = chunks_[pass.chunk];
  if (embedding) {
    PT_RETURN_IF_ERROR(Reach(PlanPointKind::kBeforeForward, units.Embedding()));
    PT_RETURN_IF_ERROR(BeginUnitForward(units.Embedding(), -1));
    PT_RETURN_IF_ERROR(
        EmbeddingForward(layers > 0 ? LayerInput(slot, pass.chunk, 0) : chunk_output));
  }
  if (layers == 0 && !embedding) {
    // An uneven split's chunk of no layers (pipeline_layout.h) passes its input on.
    PT_RETURN_IF_ERROR(
        ops_->CopyRows(LayerInput(slot, pass.chunk, 0), chunk_output, "copy chunk of no layers"));
  }
  for (int64_t l = 0; l < layers; ++l) {
    const DeviceRef output = l + 1 < layers ? LayerInput(slot, pass.chunk, l + 1) : chunk_output;
    PT_RETURN_IF_ERROR(Reach(PlanPointKind::kBeforeForward, units.Layer(l)));
    PT_RETURN_IF_ERROR(BeginUnitForward(units.Layer(l), StageLayer(pass.chunk, l)));
    PT_RETURN_IF_ERROR(LayerForward(pass.chunk, l, LayerInput(slot, pass.chunk, l),
                                    Kept(slot, pass.chunk, l), output,
                                    /*recompute=*/false));
  }
  context_.layer = -1;
  SetContext();
  // The exit of Megatron-LM's fp8_autocast around the chunk's transformer block.
  if (fp8_ && layers > 0) PT_RETURN_IF_ERROR(ops_->EndFp8Forward(pass.chunk));
  if (loss) {
    PT_RETURN_IF_ERROR(Reach(PlanPointKind::kBeforeForward, units.Loss()));
    PT_RETURN_IF_ERROR(BeginUnitForward(units.Loss(), -1));
    PT_RETURN_IF_ERROR(LossForward(loss_slot));
  }
  return absl::OkStatus();
}

absl::Status StageRunner::Backward(const PipelinePass& pass) {
  const StageLayers& stage = footprint_.stage_layers();
  const bool embedding = stage.embedding && pass.chunk == 0;
  const int64_t slot = context_.slot;
  const DeviceRef residual_gradient = Buffer(ProbeBuffer::kResidualGradient);
  DeviceRef gradient = Buffer(ProbeBuffer::kPipelineReceiveGradient);
  bool received_gradient_pending = true;
  const ChunkUnits& units = chunks_[pass.chunk];
  if (IsLossChunk(pass.chunk)) {
    PT_ASSIGN_OR_RETURN(const DeviceRef loss_slot, LossSlotOf(pass.micro_batch));
    PT_RETURN_IF_ERROR(BeginUnitBackward(units.Loss()));
    PT_RETURN_IF_ERROR(LossBackward(loss_slot));
    PT_RETURN_IF_ERROR(EndUnitBackward(units.Loss()));
    PT_RETURN_IF_ERROR(Reach(PlanPointKind::kAfterBackward, units.Loss()));
    ReleaseLossSlot(pass.micro_batch);
    gradient = residual_gradient;
    received_gradient_pending = false;
  }
  const int64_t layers = stage.chunk_layers[pass.chunk];
  for (int64_t l = layers - 1; l >= 0; --l) {
    context_.layer = StageLayer(pass.chunk, l);
    SetContext();
    PT_RETURN_IF_ERROR(BeginUnitBackward(units.Layer(l)));
    if (footprint_.full_recompute()) {
      // Rebuild the layer's activations from its kept input; its output is not needed.
      PT_RETURN_IF_ERROR(LayerForward(pass.chunk, l, LayerInput(slot, pass.chunk, l),
                                      Kept(slot, pass.chunk, l), Buffer(ProbeBuffer::kGathered),
                                      /*recompute=*/true));
    }
    PT_RETURN_IF_ERROR(LayerBackward(pass.chunk, l, LayerInput(slot, pass.chunk, l),
                                     Kept(slot, pass.chunk, l), gradient));
    PT_RETURN_IF_ERROR(EndUnitBackward(units.Layer(l)));
    PT_RETURN_IF_ERROR(Reach(PlanPointKind::kAfterBackward, units.Layer(l)));
    gradient = residual_gradient;
    received_gradient_pending = false;
  }
  context_.layer = -1;
  SetContext();
  // The backward of the block's first linear ends Transformer Engine's backward amax update.
  if (fp8_ && layers > 0) PT_RETURN_IF_ERROR(ops_->EndFp8Backward(pass.chunk));
  if (received_gradient_pending) {
    // A chunk of no layers passes the received gradient on, from where sends take it.
    PT_RETURN_IF_ERROR(ops_->CopyRows(gradient, residual_gradient, "copy chunk of no layers"));
  }
  if (embedding) {
    PT_RETURN_IF_ERROR(BeginUnitBackward(units.Embedding()));
    PT_RETURN_IF_ERROR(EmbeddingBackward(residual_gradient));
    PT_RETURN_IF_ERROR(EndUnitBackward(units.Embedding()));
    PT_RETURN_IF_ERROR(Reach(PlanPointKind::kAfterBackward, units.Embedding()));
  }
  ReleaseSlot(pass.chunk, pass.micro_batch);
  return absl::OkStatus();
}

absl::StatusOr<DeviceRef> StageRunner::GatherResidual(DeviceRef rows, std::string_view what) {
  if (!shapes_.sequence_parallel) return rows;
  const DeviceRef gathered = Buffer(ProbeBuffer::kGathered);
  PT_RETURN_IF_ERROR(ops_->TensorAllGather(rows, gathered, what));
  return gathered;
}

absl::StatusOr<DeviceRef> StageRunner::ReduceResidual(DeviceRef partial, std::string_view what) {
  return ReduceResidual(partial, Buffer(ProbeBuffer::kReduced), what);
}

absl::StatusOr<DeviceRef> StageRunner::ReduceResidual(DeviceRef partial, DeviceRef reduced,
                                                      std::string_view what) {
  if (shapes_.tensor_parallel == 1) return partial;
  if (!shapes_.sequence_parallel) {
    PT_RETURN_IF_ERROR(ops_->TensorAllReduce(partial, what));
    return partial;
  }
  PT_RETURN_IF_ERROR(ops_->TensorReduceScatter(partial, reduced, what));
  return reduced;
}

absl::Status StageRunner::NormLinearForward(const PreNormLinear& linear, DeviceRef x,
                                            DeviceRef norm_output, DeviceRef rstd, DeviceRef out,
                                            bool float_output, const Fp8Site* fp8) {
  // In fp8 the norm's bf16 output is transient: the layer keeps its fp8 copy.
  const DeviceRef normed_rows = fp8 != nullptr ? Buffer(ProbeBuffer::kLinearInput) : norm_output;
  PT_RETURN_IF_ERROR(ops_->RmsNormForward(x, Weight(linear.norm), normed_rows, rstd));
  if (fp8 != nullptr) return ops_->Fp8ColumnForward(*fp8, normed_rows, out);
  return ColumnLinearForward(linear, norm_output, out, float_output);
}

absl::Status StageRunner::ColumnLinearForward(const PreNormLinear& linear, DeviceRef norm_output,
                                              DeviceRef out, bool float_output) {
  const std::string name = LinearWeightName(linear.weight);
  auto product = [&](DeviceRef input) {
    return ProductOf(linear.weight, GemmRole::kForward, input, Weight(linear.offset), out,
                     shapes_.tokens, linear.outputs, shapes_.hidden, float_output);
  };
  if (Overlapped(linear)) {
    // qkv_fprop / fc1_fprop: the ring exchange gathers the rows beside the GEMM's chunks.
    return ops_->AllGatherGemm(product(Buffer(ProbeBuffer::kGathered)), norm_output,
                               /*keep_own=*/false);
  }
  PT_ASSIGN_OR_RETURN(const DeviceRef normed,
                      GatherResidual(norm_output, absl::StrCat(name, " input")));
  return ops_->Gemm(product(normed));
}

absl::Status StageRunner::NormLinearBackward(const PreNormLinear& linear, DeviceRef d_out,
                                             DeviceRef x, DeviceRef norm_output, DeviceRef rstd,
                                             const DeviceRef* residual, const Fp8Site* fp8) {
  PT_ASSIGN_OR_RETURN(
      const DeviceRef d_normed,
      ColumnLinearBackward(linear, d_out, norm_output, Buffer(ProbeBuffer::kReduced), fp8));
  PT_RETURN_IF_ERROR(ops_->RmsNormWeightGradient(x, rstd, d_normed, Gradient(linear.norm)));
  return ops_->RmsNormBackward(x, Weight(linear.norm), rstd, d_normed, residual,
                               Buffer(ProbeBuffer::kResidualGradient));
}

absl::StatusOr<DeviceRef> StageRunner::ColumnLinearBackward(const PreNormLinear& linear,
                                                            DeviceRef d_out, DeviceRef norm_output,
                                                            DeviceRef reduced, const Fp8Site* fp8) {
  const int64_t h = shapes_.hidden;
  const bool fp32_gradients = spec_.training().fp32_gradients();
  const DeviceRef partial = Buffer(ProbeBuffer::kProjectionOutput);
  const std::string name = LinearWeightName(linear.weight);
  const LinearProduct input_gradient =
      ProductOf(linear.weight, GemmRole::kInputGradient, d_out, Weight(linear.offset), partial,
                shapes_.tokens, linear.outputs, h, /*float_output=*/false);
  auto weight_gradient = [&](DeviceRef input) {
    return ProductOf(linear.weight, GemmRole::kWeightGradient, d_out, input,
                     Gradient(linear.offset), shapes_.tokens, linear.outputs, h, fp32_gradients);
  };
  // The overlapped paths reduce-scatter the input gradient into `reduced` themselves; the
  // others leave partial sums for ReduceResidual.
  DeviceRef d_normed = reduced;
  const NormLinearBackwardPath path = NormLinearBackwardPathOf(fp8 != nullptr, Overlapped(linear));
  tally_.norm_linear_backward_paths.push_back(path);
  switch (path) {
    case NormLinearBackwardPath::kFp8Overlapped:
      PT_RETURN_IF_ERROR(ops_->Fp8ColumnBackwardOverlapped(*fp8, d_out, partial, reduced,
                                                           Gradient(linear.offset)));
      break;
    case NormLinearBackwardPath::kFp8: {
      PT_RETURN_IF_ERROR(ops_->Fp8Backward(*fp8, d_out, partial, Gradient(linear.offset)));
      PT_ASSIGN_OR_RETURN(d_normed,
                          ReduceResidual(partial, reduced, absl::StrCat(name, " input gradient")));
      break;
    }
    case NormLinearBackwardPath::kBf16Overlapped: {
      // qkv/fc1 dgrad and wgrad: the input's re-gather beside the input gradient, the input
      // gradient's reduce-scatter beside the weight gradient.
      const DeviceRef gathered = Buffer(ProbeBuffer::kGathered);
      PT_RETURN_IF_ERROR(ops_->BulkBackward(norm_output, gathered, input_gradient,
                                            weight_gradient(gathered), reduced));
      break;
    }
    case NormLinearBackwardPath::kBf16: {
      // With sequence parallelism the layer's input is gathered again rather than kept whole
      // (Korthikanti et al. 2022): the backward pass's extra all-gathers.
      PT_ASSIGN_OR_RETURN(const DeviceRef normed,
                          GatherResidual(norm_output, absl::StrCat(name, " input again")));
      PT_RETURN_IF_ERROR(ops_->Gemm(weight_gradient(normed)));
      PT_RETURN_IF_ERROR(ops_->Gemm(input_gradient));
      PT_ASSIGN_OR_RETURN(d_normed,
                          ReduceResidual(partial, reduced, absl::StrCat(name, " input gradient")));
      break;
    }
  }
  return d_normed;
}

absl::Status StageRunner::RowLinearForward(LinearWeight weight, DeviceRef in, int64_t offset,
                                           int64_t inputs, DeviceRef residual, DeviceRef out,
                                           const Fp8Site* fp8) {
  const DeviceRef partial = Buffer(ProbeBuffer::kProjectionOutput);
  const LinearProduct product =
      ProductOf(weight, GemmRole::kForward, in, Weight(offset), partial, shapes_.tokens,
                shapes_.hidden, inputs, /*float_output=*/false);
  if (spec_.tp_comm_overlap()) {
    // proj_fprop / fc2_fprop: each column chunk's reduce-scatter follows its GEMM; the rows
    // reduced land in `out`, where the residual joins them.
    const DeviceRef reduced = Buffer(ProbeBuffer::kReduced);
    if (fp8 != nullptr) {
      PT_RETURN_IF_ERROR(ops_->Fp8RowForwardOverlapped(*fp8, in, partial, reduced, out));
    } else {
      PT_RETURN_IF_ERROR(ops_->GemmReduceScatter(product, reduced, out));
    }
    return ops_->AddRows(residual, out, out);
  }
  if (fp8 != nullptr) {
    PT_RETURN_IF_ERROR(ops_->Fp8RowForward(*fp8, in, partial));
  } else {
    PT_RETURN_IF_ERROR(ops_->Gemm(product));
  }
  PT_ASSIGN_OR_RETURN(const DeviceRef reduced,
                      ReduceResidual(partial, absl::StrCat(LinearWeightName(weight), " output")));
  return ops_->AddRows(residual, reduced, out);
}

absl::Status StageRunner::RowLinearBackward(LinearWeight weight, DeviceRef d_out, DeviceRef in,
                                            int64_t offset, int64_t inputs, DeviceRef d_in,
                                            const Fp8Site* fp8) {
  const int64_t h = shapes_.hidden;
  const bool fp32_gradients = spec_.training().fp32_gradients();
  const std::string name = LinearWeightName(weight);
  auto input_gradient = [&](DeviceRef output_gradient) {
    return ProductOf(weight, GemmRole::kInputGradient, output_gradient, Weight(offset), d_in,
                     shapes_.tokens, h, inputs, /*float_output=*/false);
  };
  auto weight_gradient = [&](DeviceRef output_gradient) {
    return ProductOf(weight, GemmRole::kWeightGradient, output_gradient, in, Gradient(offset),
                     shapes_.tokens, h, inputs, fp32_gradients);
  };
  const RowLinearBackwardPath path =
      RowLinearBackwardPathOf(fp8 != nullptr, spec_.tp_comm_overlap(), shapes_.sequence_parallel);
  tally_.row_linear_backward_paths.push_back(path);
  switch (path) {
    case RowLinearBackwardPath::kFp8Overlapped:
      // proj_dgrad / fc2_dgrad in fp8: the rank's rows cast to E5M2, then ring-gathered.
      return ops_->Fp8RowBackwardOverlapped(*fp8, d_out, d_in, Gradient(offset));
    case RowLinearBackwardPath::kBf16Overlapped: {
      // proj_dgrad / fc2_dgrad: the ring gathers the output gradient beside the input
      // gradient's chunks and keeps it whole for the weight gradient.
      const DeviceRef gathered = Buffer(ProbeBuffer::kGathered);
      PT_RETURN_IF_ERROR(ops_->AllGatherGemm(input_gradient(gathered), d_out, /*keep_own=*/true));
      return ops_->Gemm(weight_gradient(gathered));
    }
    case RowLinearBackwardPath::kFp8SequenceParallel:
      // The rank's rows cast to E5M2, then gathered in fp8 (grad_output_preprocess).
      return ops_->Fp8RowBackwardSequenceParallel(*fp8, d_out, d_in, Gradient(offset));
    case RowLinearBackwardPath::kFp8: {
      PT_ASSIGN_OR_RETURN(const DeviceRef d_gathered,
                          GatherResidual(d_out, absl::StrCat(name, " output gradient")));
      return ops_->Fp8Backward(*fp8, d_gathered, d_in, Gradient(offset));
    }
    case RowLinearBackwardPath::kBf16: {
      PT_ASSIGN_OR_RETURN(const DeviceRef d_gathered,
                          GatherResidual(d_out, absl::StrCat(name, " output gradient")));
      PT_RETURN_IF_ERROR(ops_->Gemm(input_gradient(d_gathered)));
      return ops_->Gemm(weight_gradient(d_gathered));
    }
  }
  return absl::InternalError("unknown RowLinearBackwardPath");
}

absl::Status StageRunner::LayerForward(int64_t chunk, int64_t layer_in_chunk, DeviceRef input,
                                       const LayerActivations& kept, DeviceRef output,
                                       bool recompute) {
  context_.layer = StageLayer(chunk, layer_in_chunk);
  context_.recompute = recompute;
  SetContext();
  const LayerParameterOffsets& w = footprint_.parameters().layers[context_.layer];
  const ShardShapes& x = shapes_;
  const DeviceRef qkv = Buffer(ProbeBuffer::kQkvProjection);
  const std::vector<Fp8Site> sites = Fp8SitesOf(chunk, layer_in_chunk, kept);
  auto site = [&](Fp8Linear linear) { return SiteIn(sites, linear); };
  // Attention block: mlp_input = input + out_proj(attention(qkv(norm(input)))).
  PT_RETURN_IF_ERROR(NormLinearForward(
      {LinearWeight::kQkv, w.attention_norm, w.qkv, x.qkv.outputs, /*layer=*/true}, input,
      kept.attention_norm_output, kept.attention_norm_rstd, qkv, /*float_output=*/false,
      site(Fp8Linear::kQkv)));
  PT_RETURN_IF_ERROR(ops_->AttentionForward(qkv, kept.attention_output,
                                            {kept.query, kept.key_value, kept.softmax_lse}));
  PT_RETURN_IF_ERROR(RowLinearForward(LinearWeight::kAttentionOutput, kept.attention_output,
                                      w.attention_output, x.attention_output.inputs, input,
                                      kept.mlp_input, site(Fp8Linear::kAttentionOutput)));
  if (w.moe()) return MoeForward(w, kept, output);
  // MLP block: output = mlp_input + down(swiglu(gate_up(norm(mlp_input)))).
  PT_RETURN_IF_ERROR(NormLinearForward(
      {LinearWeight::kGateUp, w.mlp_norm, w.gate_up, x.gate_up.outputs, /*layer=*/true},
      kept.mlp_input, kept.mlp_norm_output, kept.mlp_norm_rstd, kept.gate_up,
      /*float_output=*/false, site(Fp8Linear::kGateUp)));
  // In fp8 the SwiGLU output is transient too: the down projection keeps its fp8 copy.
  const DeviceRef swiglu_output = fp8_ ? Buffer(ProbeBuffer::kLinearInput) : kept.swiglu_output;
  PT_RETURN_IF_ERROR(ops_->SwigluForward(kept.gate_up, swiglu_output, x.ffn));
  return RowLinearForward(LinearWeight::kDown, swiglu_output, w.down, x.ffn, kept.mlp_input, output,
                          site(Fp8Linear::kDown));
}

absl::Status StageRunner::LayerBackward(int64_t chunk, int64_t layer_in_chunk, DeviceRef input,
                                        const LayerActivations& kept, DeviceRef output_gradient) {
  context_.layer = StageLayer(chunk, layer_in_chunk);
  context_.recompute = false;
  SetContext();
  const LayerParameterOffsets& w = footprint_.parameters().layers[context_.layer];
  const ShardShapes& x = shapes_;
  const DeviceRef residual_gradient = Buffer(ProbeBuffer::kResidualGradient);
  const DeviceRef swiglu_gradient = Buffer(ProbeBuffer::kSwigluGradient);
  const DeviceRef mlp_gradient = Buffer(ProbeBuffer::kMlpGradient);
  const DeviceRef attention_gradient = Buffer(ProbeBuffer::kAttentionOutputGradient);
  const DeviceRef qkv_gradient = Buffer(ProbeBuffer::kQkvGradient);
  const std::vector<Fp8Site> sites = Fp8SitesOf(chunk, layer_in_chunk, kept);
  auto site = [&](Fp8Linear linear) { return SiteIn(sites, linear); };
  // MLP (or MoE) block, then attention block, each ending in its norm's input gradient plus
  // the residual path's.
  if (w.moe()) {
    PT_RETURN_IF_ERROR(MoeBackward(w, kept, output_gradient));
  } else {
    PT_RETURN_IF_ERROR(RowLinearBackward(LinearWeight::kDown, output_gradient, kept.swiglu_output,
                                         w.down, x.ffn, swiglu_gradient, site(Fp8Linear::kDown)));
    PT_RETURN_IF_ERROR(ops_->SwigluBackward(kept.gate_up, swiglu_gradient, mlp_gradient, x.ffn));
    PT_RETURN_IF_ERROR(NormLinearBackward(
        {LinearWeight::kGateUp, w.mlp_norm, w.gate_up, x.gate_up.outputs, /*layer=*/true},
        mlp_gradient, kept.mlp_input, kept.mlp_norm_output, kept.mlp_norm_rstd, &output_gradient,
        site(Fp8Linear::kGateUp)));
  }
  PT_RETURN_IF_ERROR(RowLinearBackward(
      LinearWeight::kAttentionOutput, residual_gradient, kept.attention_output, w.attention_output,
      x.attention_output.inputs, attention_gradient, site(Fp8Linear::kAttentionOutput)));
  PT_RETURN_IF_ERROR(ops_->AttentionBackward(attention_gradient, kept.attention_output,
                                             qkv_gradient,
                                             {kept.query, kept.key_value, kept.softmax_lse}));
  return NormLinearBackward(
      {LinearWeight::kQkv, w.attention_norm, w.qkv, x.qkv.outputs, /*layer=*/true}, qkv_gradient,
      input, kept.attention_norm_output, kept.attention_norm_rstd, &residual_gradient,
      site(Fp8Linear::kQkv));
}

StageRunner::MoeSizes StageRunner::MoeSizesOf() const {
  const MoeShardShapes& moe = footprint_.moe();
  MoeSizes z;
  z.etp = moe.expert_tensor_parallel;
  z.etp_rank = spec_.layout().GroupRank(RankGroup::kExpertTensor, rank_);
  z.sorted = moe.local_experts > 1;
  z.sources = z.etp * moe.expert_parallel;
  // Every source rank sends each local expert S / E copies.
  z.chunk_rows = moe.routed_copies / moe.experts;
  z.h = shapes_.hidden;
  z.S = moe.routed_copies;
  z.N = moe.received_copies;
  z.n = moe.copies_per_local_expert;
  return z;
}

// Megatron-Core's MoELayer with the all-to-all dispatcher (token_dispatcher.py
// MoEAlltoAllTokenDispatcher, experts.py TEGroupedMLP), on the rank's R rows: the shared
// experts first, as MoELayer.forward computes them before it routes, the router and
// its top-k, the permutation, the dispatch all-to-all over the expert group (and with etp > 1
// the all-gather over the expert tensor group), the sort by local expert, each local expert's
// fc1, weighted SwiGLU and fc2, the sort back, the reduce-scatter over the expert tensor
// group, the combine all-to-all, the sum of each row's copies, the residual add.
absl::Status StageRunner::MoeForward(const LayerParameterOffsets& w, const LayerActivations& kept,
                                     DeviceRef output) {
  const MoeShardShapes& moe = footprint_.moe();
  const MoeSizes z = MoeSizesOf();
  const auto [h, S, N, n] = std::tuple(z.h, z.S, z.N, z.n);
  PT_RETURN_IF_ERROR(ops_->RmsNormForward(kept.mlp_input, Weight(w.mlp_norm), kept.mlp_norm_output,
                                          kept.mlp_norm_rstd));
  PT_RETURN_IF_ERROR(SharedExpertForward(w, kept, output));
  PT_RETURN_IF_ERROR(
      ops_->Gemm(ProductOf(LinearWeight::kRouter, GemmRole::kForward, kept.mlp_norm_output,
                           Weight(w.router), kept.router_logits, moe.routed_tokens, moe.experts, h,
                           /*float_output=*/false)));
  PT_RETURN_IF_ERROR(
      ops_->RouterTopK(kept.router_logits, kept.router_probabilities, kept.router_indices));
  const DeviceRef permuted = Buffer(ProbeBuffer::kMoePermutedTokens);
  const DeviceRef permuted_probabilities = Buffer(ProbeBuffer::kMoePermutedProbabilities);
  PT_RETURN_IF_ERROR(ops_->PermuteTokens(kept.mlp_norm_output, kept.router_probabilities, permuted,
                                         permuted_probabilities));
  // The copies received in source order: straight into the kept expert input with one local
  // expert, else into the received buffer for the sort; with etp > 1 at this rank's place of
  // the gathered rows, gathered in place.
  const DeviceRef received_tokens =
      z.sorted ? Buffer(ProbeBuffer::kMoeReceivedTokens) : kept.expert_input;
  const DeviceRef received_probabilities =
      z.sorted ? Buffer(ProbeBuffer::kMoeReceivedProbabilities) : kept.expert_probabilities;
  PT_RETURN_IF_ERROR(ops_->ExpertAllToAll(permuted, received_tokens.At(z.etp_rank * S * h * kBf16),
                                          S, h, ElementType::kBf16, "dispatch tokens"));
  PT_RETURN_IF_ERROR(ops_->ExpertAllToAll(permuted_probabilities,
                                          received_probabilities.At(z.etp_rank * S * kFp32), S, 1,
                                          ElementType::kFloat32, "dispatch probabilities"));
  if (z.etp > 1) {
    PT_RETURN_IF_ERROR(ops_->ExpertTensorAllGather(received_tokens.At(z.etp_rank * S * h * kBf16),
                                                   received_tokens, S, h, ElementType::kBf16,
                                                   "dispatched tokens"));
    PT_RETURN_IF_ERROR(ops_->ExpertTensorAllGather(
        received_probabilities.At(z.etp_rank * S * kFp32), received_probabilities, S, 1,
        ElementType::kFloat32, "dispatched probabilities"));
  }
  if (z.sorted) {
    PT_RETURN_IF_ERROR(ops_->SortChunks(received_tokens, kept.expert_input, z.sources,
                                        moe.local_experts, z.chunk_rows, h, ElementType::kBf16));
    PT_RETURN_IF_ERROR(ops_->SortChunks(received_probabilities, kept.expert_probabilities,
                                        z.sources, moe.local_experts, z.chunk_rows, 1,
                                        ElementType::kFloat32));
  }
  const int64_t fc1_outputs = moe.expert_fc1.outputs;
  const int64_t f = moe.expert_ffn;
  for (int64_t e = 0; e < moe.local_experts; ++e) {
    PT_RETURN_IF_ERROR(ops_->Gemm(ProductOf(
        LinearWeight::kExpertFc1, GemmRole::kForward, kept.expert_input.At(e * n * h * kBf16),
        Weight(w.expert_fc1[e]), kept.expert_gate_up.At(e * n * fc1_outputs * kBf16), n,
        fc1_outputs, h, /*float_output=*/false)));
  }
  PT_RETURN_IF_ERROR(ops_->WeightedSwigluForward(kept.expert_gate_up, kept.expert_probabilities,
                                                 kept.expert_swiglu_output, N));
  const DeviceRef expert_output = Buffer(ProbeBuffer::kMoeExpertOutput);
  for (int64_t e = 0; e < moe.local_experts; ++e) {
    PT_RETURN_IF_ERROR(ops_->Gemm(
        ProductOf(LinearWeight::kExpertFc2, GemmRole::kForward,
                  kept.expert_swiglu_output.At(e * n * f * kBf16), Weight(w.expert_fc2[e]),
                  expert_output.At(e * n * h * kBf16), n, h, f, /*float_output=*/false)));
  }
  DeviceRef combine = expert_output;
  if (z.sorted) {
    combine = Buffer(ProbeBuffer::kMoeReceivedTokens);
    PT_RETURN_IF_ERROR(ops_->SortChunks(expert_output, combine, moe.local_experts, z.sources,
                                        z.chunk_rows, h, ElementType::kBf16));
  }
  if (z.etp > 1) {
    PT_RETURN_IF_ERROR(ops_->ExpertTensorReduceScatter(combine, permuted, S, h, ElementType::kBf16,
                                                       "experts' output"));
    combine = permuted;
  }
  const DeviceRef combined = Buffer(ProbeBuffer::kMoeCombinedTokens);
  PT_RETURN_IF_ERROR(
      ops_->ExpertAllToAll(combine, combined, S, h, ElementType::kBf16, "combine tokens"));
  const DeviceRef routed = Buffer(ProbeBuffer::kReduced);
  PT_RETURN_IF_ERROR(ops_->UnpermuteTokens(combined, routed));
  // The shared experts' output joined the residual in `output` already (postprocess adds the
  // two; the layer's bias-dropout-add the residual).
  return ops_->AddRows(moe.shared_ffn > 0 ? output : kept.mlp_input, routed, output);
}

absl::Status StageRunner::SharedExpertForward(const LayerParameterOffsets& w,
                                              const LayerActivations& kept, DeviceRef output) {
  const MoeShardShapes& moe = footprint_.moe();
  if (moe.shared_ffn == 0) return absl::OkStatus();
  PT_RETURN_IF_ERROR(ColumnLinearForward(
      {LinearWeight::kSharedFc1, w.mlp_norm, w.shared_fc1, moe.shared_fc1.outputs, /*layer=*/true},
      kept.mlp_norm_output, kept.shared_gate_up, /*float_output=*/false));
  PT_RETURN_IF_ERROR(
      ops_->SwigluForward(kept.shared_gate_up, kept.shared_swiglu_output, moe.shared_ffn));
  return RowLinearForward(LinearWeight::kSharedFc2, kept.shared_swiglu_output, w.shared_fc2,
                          moe.shared_ffn, kept.mlp_input, output, /*fp8=*/nullptr);
}

absl::Status StageRunner::SharedExpertBackward(const LayerParameterOffsets& w,
                                               const LayerActivations& kept,
                                               DeviceRef output_gradient, DeviceRef d_normed) {
  const MoeShardShapes& moe = footprint_.moe();
  if (moe.shared_ffn == 0) return absl::OkStatus();
  const DeviceRef swiglu_gradient = Buffer(ProbeBuffer::kSwigluGradient);
  const DeviceRef gate_up_gradient = Buffer(ProbeBuffer::kMlpGradient);
  PT_RETURN_IF_ERROR(RowLinearBackward(LinearWeight::kSharedFc2, output_gradient,
                                       kept.shared_swiglu_output, w.shared_fc2, moe.shared_ffn,
                                       swiglu_gradient, /*fp8=*/nullptr));
  PT_RETURN_IF_ERROR(
      ops_->SwigluBackward(kept.shared_gate_up, swiglu_gradient, gate_up_gradient, moe.shared_ffn));
  // kReduced holds the routed path's gradient (`d_normed`): fc1's input gradient is
  // reduce-scattered into kGathered, free again once fc1's weight gradient read the input
  // gathered there.
  PT_ASSIGN_OR_RETURN(
      const DeviceRef d_shared,
      ColumnLinearBackward(
          {LinearWeight::kSharedFc1, w.mlp_norm, w.shared_fc1, moe.shared_fc1.outputs,
           /*layer=*/true},
          gate_up_gradient, kept.mlp_norm_output, Buffer(ProbeBuffer::kGathered), /*fp8=*/nullptr));
  return ops_->AddRows(d_normed, d_shared, d_normed);
}

// MoeForward's backward, each step's in reverse; leaves the MoE block's input gradient plus
// `output_gradient` (the residual path's) in kResidualGradient.
absl::Status StageRunner::MoeBackward(const LayerParameterOffsets& w, const LayerActivations& kept,
                                      DeviceRef output_gradient) {
  const MoeShardShapes& moe = footprint_.moe();
  const MoeSizes z = MoeSizesOf();
  const auto [h, S, N, n] = std::tuple(z.h, z.S, z.N, z.n);
  const bool fp32_gradients = spec_.training().fp32_gradients();
  const DeviceRef permuted = Buffer(ProbeBuffer::kMoePermutedTokens);
  const DeviceRef permuted_probabilities = Buffer(ProbeBuffer::kMoePermutedProbabilities);
  const DeviceRef received = Buffer(ProbeBuffer::kMoeReceivedTokens);
  const DeviceRef received_probabilities = Buffer(ProbeBuffer::kMoeReceivedProbabilities);
  const DeviceRef expert_gradient = Buffer(ProbeBuffer::kMoeExpertOutput);
  const DeviceRef combined = Buffer(ProbeBuffer::kMoeCombinedTokens);
  const DeviceRef probability_gradient = Buffer(ProbeBuffer::kMoeProbabilityGradient);

  // The sum of copies' and the combine's backward: each row's gradient to its copies, sent
  // back to the experts (gathered over etp), z.sorted by local expert.
  PT_RETURN_IF_ERROR(ops_->ScatterRowGradients(output_gradient, combined));
  const DeviceRef arrived = z.sorted ? received : expert_gradient;
  PT_RETURN_IF_ERROR(ops_->ExpertAllToAll(combined, arrived.At(z.etp_rank * S * h * kBf16), S, h,
                                          ElementType::kBf16, "combine gradients"));
  if (z.etp > 1) {
    PT_RETURN_IF_ERROR(ops_->ExpertTensorAllGather(arrived.At(z.etp_rank * S * h * kBf16), arrived,
                                                   S, h, ElementType::kBf16, "combine gradients"));
  }
  if (z.sorted) {
    PT_RETURN_IF_ERROR(ops_->SortChunks(received, expert_gradient, z.sources, moe.local_experts,
                                        z.chunk_rows, h, ElementType::kBf16));
  }
  // The experts: every fc2's products, the weighted SwiGLU's backward, every fc1's products
  // (fc1's input gradients overwrite fc2's output gradients, all read by then).
  const int64_t fc1_outputs = moe.expert_fc1.outputs;
  const int64_t f = moe.expert_ffn;
  const DeviceRef swiglu_gradient = Buffer(ProbeBuffer::kMoeExpertSwigluGradient);
  const DeviceRef gate_up_gradient = Buffer(ProbeBuffer::kMoeExpertGateUpGradient);
  for (int64_t e = 0; e < moe.local_experts; ++e) {
    const DeviceRef d_out = expert_gradient.At(e * n * h * kBf16);
    PT_RETURN_IF_ERROR(ops_->Gemm(ProductOf(LinearWeight::kExpertFc2, GemmRole::kInputGradient,
                                            d_out, Weight(w.expert_fc2[e]),
                                            swiglu_gradient.At(e * n * f * kBf16), n, h, f,
                                            /*float_output=*/false)));
    PT_RETURN_IF_ERROR(ops_->Gemm(ProductOf(LinearWeight::kExpertFc2, GemmRole::kWeightGradient,
                                            d_out, kept.expert_swiglu_output.At(e * n * f * kBf16),
                                            Gradient(w.expert_fc2[e]), n, h, f, fp32_gradients)));
  }
  PT_RETURN_IF_ERROR(ops_->WeightedSwigluBackward(kept.expert_gate_up, kept.expert_probabilities,
                                                  swiglu_gradient, gate_up_gradient,
                                                  probability_gradient, N));
  for (int64_t e = 0; e < moe.local_experts; ++e) {
    const DeviceRef d_out = gate_up_gradient.At(e * n * fc1_outputs * kBf16);
    PT_RETURN_IF_ERROR(ops_->Gemm(ProductOf(
        LinearWeight::kExpertFc1, GemmRole::kInputGradient, d_out, Weight(w.expert_fc1[e]),
        expert_gradient.At(e * n * h * kBf16), n, fc1_outputs, h, /*float_output=*/false)));
    PT_RETURN_IF_ERROR(
        ops_->Gemm(ProductOf(LinearWeight::kExpertFc1, GemmRole::kWeightGradient, d_out,
                             kept.expert_input.At(e * n * h * kBf16), Gradient(w.expert_fc1[e]), n,
                             fc1_outputs, h, fp32_gradients)));
  }
  // The dispatch's backward: z.sorted back, reduce-scattered over etp, sent back to the copies'
  // ranks, tokens and probabilities alike.
  DeviceRef tokens = expert_gradient;
  DeviceRef probabilities = probability_gradient;
  if (z.sorted) {
    PT_RETURN_IF_ERROR(ops_->SortChunks(expert_gradient, received, moe.local_experts, z.sources,
                                        z.chunk_rows, h, ElementType::kBf16));
    PT_RETURN_IF_ERROR(ops_->SortChunks(probability_gradient, received_probabilities,
                                        moe.local_experts, z.sources, z.chunk_rows, 1,
                                        ElementType::kFloat32));
    tokens = received;
    probabilities = received_probabilities;
  }
  DeviceRef d_permuted = permuted;
  DeviceRef d_permuted_probabilities = permuted_probabilities;
  if (z.etp > 1) {
    PT_RETURN_IF_ERROR(ops_->ExpertTensorReduceScatter(tokens, permuted, S, h, ElementType::kBf16,
                                                       "dispatch gradients"));
    PT_RETURN_IF_ERROR(ops_->ExpertTensorReduceScatter(probabilities, permuted_probabilities, S, 1,
                                                       ElementType::kFloat32,
                                                       "dispatch probability gradients"));
    tokens = permuted;
    probabilities = permuted_probabilities;
    d_permuted = combined;
    d_permuted_probabilities = received_probabilities;
  }
  PT_RETURN_IF_ERROR(
      ops_->ExpertAllToAll(tokens, d_permuted, S, h, ElementType::kBf16, "dispatch gradients"));
  PT_RETURN_IF_ERROR(ops_->ExpertAllToAll(probabilities, d_permuted_probabilities, S, 1,
                                          ElementType::kFloat32, "dispatch probability gradients"));
  // The permutation's backward: each row's copies summed, the probabilities' gradients to the
  // router, whose products add the router path's share of the norm output's gradient.
  const DeviceRef d_normed = Buffer(ProbeBuffer::kReduced);
  PT_RETURN_IF_ERROR(ops_->UnpermuteTokens(d_permuted, d_normed));
  PT_RETURN_IF_ERROR(ops_->UnpermuteProbabilities(d_permuted_probabilities, probability_gradient));
  const DeviceRef d_logits = Buffer(ProbeBuffer::kMoeRouterLogitsGradient);
  PT_RETURN_IF_ERROR(ops_->RouterTopKBackward(kept.router_logits, kept.router_probabilities,
                                              kept.router_indices, probability_gradient, d_logits));
  const DeviceRef router_input_gradient = Buffer(ProbeBuffer::kProjectionOutput);
  PT_RETURN_IF_ERROR(ops_->Gemm(ProductOf(LinearWeight::kRouter, GemmRole::kWeightGradient,
                                          d_logits, kept.mlp_norm_output, Gradient(w.router),
                                          moe.routed_tokens, moe.experts, h, fp32_gradients)));
  PT_RETURN_IF_ERROR(ops_->Gemm(ProductOf(LinearWeight::kRouter, GemmRole::kInputGradient, d_logits,
                                          Weight(w.router), router_input_gradient,
                                          moe.routed_tokens, moe.experts, h,
                                          /*float_output=*/false)));
  PT_RETURN_IF_ERROR(ops_->AddRows(d_normed, router_input_gradient, d_normed));
  PT_RETURN_IF_ERROR(SharedExpertBackward(w, kept, output_gradient, d_normed));
  PT_RETURN_IF_ERROR(ops_->RmsNormWeightGradient(kept.mlp_input, kept.mlp_norm_rstd, d_normed,
                                                 Gradient(w.mlp_norm)));
  return ops_->RmsNormBackward(kept.mlp_input, Weight(w.mlp_norm), kept.mlp_norm_rstd, d_normed,
                               &output_gradient, Buffer(ProbeBuffer::kResidualGradient));
}

absl::Status StageRunner::EmbeddingForward(DeviceRef output) {
  const DeviceRef partial = Buffer(ProbeBuffer::kProjectionOutput);
  PT_RETURN_IF_ERROR(ops_->EmbeddingForward(Weight(footprint_.parameters().embedding), partial));
  // Each rank looked up its vocabulary rows only: the sum over the tensor group is the
  // embedding (Megatron-LM's VocabParallelEmbedding).
  PT_ASSIGN_OR_RETURN(const DeviceRef embedded, ReduceResidual(partial, "embedding"));
  return ops_->CopyRows(embedded, output, "copy embedding output");
}

absl::Status StageRunner::EmbeddingBackward(DeviceRef input_gradient) {
  PT_ASSIGN_OR_RETURN(const DeviceRef gradient,
                      GatherResidual(input_gradient, "embedding output gradient"));
  return ops_->EmbeddingBackward(gradient, Gradient(footprint_.parameters().embedding));
}

absl::Status StageRunner::LossForward(DeviceRef loss_slot) {
  const LossActivationLayout& at = footprint_.loss_activations();
  const ParameterLayout& parameters = footprint_.parameters();
  return NormLinearForward(
      {LinearWeight::kLmHead, parameters.final_norm, parameters.lm_head, shapes_.vocab},
      loss_slot.At(at.input), loss_slot.At(at.norm_output), loss_slot.At(at.norm_rstd),
      loss_slot.At(at.logits), /*float_output=*/true, nullptr);
}

absl::Status StageRunner::LossBackward(DeviceRef loss_slot) {
  const LossActivationLayout& at = footprint_.loss_activations();
  const ParameterLayout& parameters = footprint_.parameters();
  const DeviceRef logits = loss_slot.At(at.logits);
  // kLossStatistics: the rows' maxima, sums of exponentials and losses, [T] fp32 each.
  const int64_t statistic_bytes = shapes_.tokens * static_cast<int64_t>(sizeof(float));
  const DeviceRef row_max = Buffer(ProbeBuffer::kLossStatistics);
  const DeviceRef row_sum = row_max.At(statistic_bytes);
  const DeviceRef loss = row_sum.At(statistic_bytes);
  const DeviceRef d_logits = Buffer(ProbeBuffer::kLogitsGradient);
  const bool tensor_group = shapes_.tensor_parallel > 1;
  // Megatron-LM's vocab_parallel_cross_entropy: the maximum and the sum of exponentials
  // all-reduced over the tensor group, then softmax - one_hot on each rank's shard.
  PT_RETURN_IF_ERROR(ops_->LogitsRowMax(logits, row_max));
  if (tensor_group) {
    PT_RETURN_IF_ERROR(
        ops_->AllReduceLogitStatistic(row_max, DeviceOps::Reduction::kMax, "logits max"));
  }
  PT_RETURN_IF_ERROR(ops_->LogitsRowSumExp(logits, row_max, row_sum));
  if (tensor_group) {
    PT_RETURN_IF_ERROR(
        ops_->AllReduceLogitStatistic(row_sum, DeviceOps::Reduction::kSum, "logits sum"));
  }
  PT_RETURN_IF_ERROR(ops_->CrossEntropyBackward(logits, row_max, row_sum, d_logits, loss));
  // The final norm's input feeds nothing else: no residual gradient joins.
  return NormLinearBackward(
      {LinearWeight::kLmHead, parameters.final_norm, parameters.lm_head, shapes_.vocab}, d_logits,
      loss_slot.At(at.input), loss_slot.At(at.norm_output), loss_slot.At(at.norm_rstd), nullptr,
      nullptr);
}

absl::Status StageRunner::OptimizerStep() {
  const bool distributed = ShardsOptimizerStates(spec_.config().dp_sharding());
  const int64_t buckets = static_cast<int64_t>(optimizer_.buckets.size());
  // Under sharded gradients each unit's backward reduced its gradients already.
  if (!optimizer_.overlapped && !optimizer_.sharded_gradients) {
    for (int64_t i = 0; i < buckets; ++i) {
      if (!optimizer_.Reduces(i)) continue;
      // With the distributed optimizer each rank's shard of the summed gradients lands in
      // place, where its own shard is.
      PT_RETURN_IF_ERROR(distributed ? ops_->ReduceScatterGradients(i)
                                     : ops_->AllReduceGradients(i));
    }
  }
  const int64_t step = ++optimizer_step_;
  for (int64_t i = 0; i < buckets; ++i) {
    const OptimizerShard shard = optimizer_.ShardOf(i);
    const int64_t state_byte = shard.state * static_cast<int64_t>(sizeof(float));
    AdamUpdate update;
    update.bucket = i;
    update.shard = shard;
    update.step = step;
    // Under sharded gradients the rank's shard of them sits where its optimizer states do.
    update.gradients = optimizer_.sharded_gradients
                           ? DeviceRef{ProbeBuffer::kGradients, shard.state * GradientBytes()}
                           : Gradient(shard.first);
    update.master_weights = {ProbeBuffer::kMasterWeights, state_byte};
    update.first_moment = {ProbeBuffer::kAdamFirstMoment, state_byte};
    update.second_moment = {ProbeBuffer::kAdamSecondMoment, state_byte};
    // fp8 weights are cast from the updated master below, not rounded to bf16 here.
    update.update_weights = !footprint_.parameters().RegionOf(optimizer_.buckets[i].start).fp8;
    // Under sharded weights the rank's shard of them, which no gather follows.
    update.weights = optimizer_.sharded_weights
                         ? DeviceRef{ProbeBuffer::kWeights, shard.state * kBf16}
                         : Weight(shard.first);
    PT_RETURN_IF_ERROR(ops_->Adam(update));
  }
  if (footprint_.fp8_state().fp8_parameters) PT_RETURN_IF_ERROR(ops_->CastMasterWeights());
  // Overlapped, the next step's forward passes gather the parameters; sharded, each use does.
  if (distributed && !optimizer_.sharded_weights &&
      !(optimizer_.overlapped && optimizer_.overlap.overlap_param_gather)) {
    for (int64_t i = 0; i < buckets; ++i) {
      if (optimizer_.Reduces(i)) PT_RETURN_IF_ERROR(ops_->GatherParameters(i));
    }
  }
  return absl::OkStatus();
}

}  // namespace paratune
