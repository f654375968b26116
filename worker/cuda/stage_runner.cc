#include "worker/cuda/stage_runner.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/cuda/cuda_status.h"
#include "worker/cuda/fill_kernels.h"
#include "worker/cuda/loss_kernels.h"
#include "worker/cuda/mlp_kernels.h"
#include "worker/cuda/norm_kernels.h"
#include "worker/cuda/optimizer_kernels.h"
#include "worker/probe/probe_report.h"
#include "worker/probe/step_plan.h"

namespace paratune {
namespace {

using bf16 = __nv_bfloat16;

// Scale of the uniform random weights: GPT-2's initializer standard deviation.
constexpr float kWeightScale = 0.02f;

}  // namespace

// In fp8 training attention_norm_output, mlp_norm_output and swiglu_output hold the fp8
// copies the layout describes (LayerActivationLayout).
struct StageRunner::LayerActivations {
  bf16* attention_norm_output;
  float* attention_norm_rstd;
  bf16* query;
  bf16* key_value;
  bf16* attention_output;
  float* softmax_lse;
  bf16* mlp_input;
  bf16* mlp_norm_output;
  float* mlp_norm_rstd;
  bf16* gate_up;
  bf16* swiglu_output;
  void* attention_output_fp8;
  float* fp8_scale_inverses;
};

StageRunner::StageRunner(const ProbeSpec& spec, const FootprintPlan& plan,
                         const DeviceFootprint& memory, const RankCommunicators& communicators,
                         ncclComm_t fp8_amax_group, Gemm* gemm, cudaStream_t stream,
                         cudaStream_t communication_stream,
                         cudaStream_t tensor_communication_stream, PhaseTimer* timer)
    : spec_(spec),
      plan_(plan),
      memory_(memory),
      communicators_(communicators),
      gemm_(gemm),
      stream_(stream),
      communication_stream_(communication_stream),
      tensor_communication_stream_(tensor_communication_stream),
      timer_(timer),
      attention_(gemm, plan.shapes(), plan.attention_query_chunk(),
                 communicators.group(RankGroup::kContext),
                 communicators.group_rank(RankGroup::kContext), spec.cp_comm_type(), stream, timer),
      shapes_(plan.shapes()),
      fp32_gradients_(spec.training().fp32_gradients()),
      reduce_gradients_(communicators.group_size(RankGroup::kDataContext) > 1 &&
                        !DataParallelModelled(spec)),
      shard_index_(communicators.group_rank(RankGroup::kDataContext)),
      shard_count_(spec.training().distributed_optimizer()
                       ? plan.parameters().padded_elements / plan.parameters().shard_elements
                       : 1),
      chunks_(ChunkUnitsOf(plan.stage_layers())),
      overlap_(spec.data_parallel_overlap()),
      overlapped_(reduce_gradients_ &&
                  (overlap_.overlap_grad_reduce || overlap_.overlap_param_gather)),
      weights_(memory.get<char>(ProbeBuffer::kWeights)) {
  SetMicroBatches(spec.micro_batches());
  // The buckets do not depend on the micro-batches.
  optimizer_buckets_ = overlapped_ ? data_parallel_plan_.buckets : RegionBuckets(plan.parameters());
  for (int64_t slot = plan.activation_slots() - 1; slot >= 0; --slot) free_slots_.push_back(slot);
  for (int64_t slot = plan.loss_slots() - 1; slot >= 0; --slot) free_loss_slots_.push_back(slot);
  if (plan.fp8()) {
    Fp8LinearBuffers buffers;
    buffers.weight_copies = memory.get<char>(ProbeBuffer::kFp8WeightCopies);
    buffers.scaling_state = memory.get<char>(ProbeBuffer::kFp8ScalingState);
    buffers.input = memory.get<void>(ProbeBuffer::kFp8Input);
    buffers.input_transposed = memory.get<void>(ProbeBuffer::kFp8InputTransposed);
    buffers.output_gradient = memory.get<void>(ProbeBuffer::kFp8OutputGradient);
    buffers.output_gradient_transposed =
        memory.get<void>(ProbeBuffer::kFp8OutputGradientTransposed);
    fp8_ = std::make_unique<Fp8Linears>(
        shapes_, plan.fp8_state(), plan.parameters().first_layer, buffers, gemm,
        shapes_.sequence_parallel ? communicators.group(RankGroup::kTensor) : nullptr,
        fp8_amax_group, kExportedFp8Recipe, stream, timer);
  }
  if (plan.fp8_state().fp8_parameters) {
    Fp8ParameterBuffers buffers;
    buffers.weights = weights_;
    buffers.weight_copies = memory.get<char>(ProbeBuffer::kFp8WeightCopies);
    buffers.scaling_state = memory.get<char>(ProbeBuffer::kFp8ScalingState);
    buffers.master_weights = memory.get<float>(ProbeBuffer::kMasterWeights);
    std::vector<OptimizerShard> shards;
    for (const ParameterBucket& bucket : optimizer_buckets_) {
      shards.push_back(OptimizerShardOf(bucket, shard_count_, shard_index_));
    }
    fp8_parameters_ = std::make_unique<Fp8Parameters>(
        shapes_, plan.parameters(), plan.fp8_state(), shards, buffers,
        reduce_gradients_ ? communicators.group(RankGroup::kDataContext) : nullptr, stream, timer);
  }
}

void* StageRunner::Gradient(int64_t offset) const {
  char* base = memory_.get<char>(ProbeBuffer::kGradients);
  return base + offset * (fp32_gradients_ ? sizeof(float) : sizeof(bf16));
}

int64_t StageRunner::StageLayer(int64_t chunk, int64_t layer_in_chunk) const {
  return plan_.parameters().first_layer[chunk] + layer_in_chunk;
}

bf16* StageRunner::LayerInput(int64_t slot, int64_t layer_in_chunk) const {
  char* block = memory_.get<char>(ProbeBuffer::kActivationSlots) + slot * plan_.slot_bytes() +
                layer_in_chunk * plan_.slot_layer_bytes();
  // Under full recomputation a slot keeps layer inputs alone.
  if (!plan_.full_recompute()) block += plan_.layer_activations().input;
  return reinterpret_cast<bf16*>(block);
}

StageRunner::LayerActivations StageRunner::Kept(int64_t slot, int64_t layer_in_chunk) const {
  char* block = plan_.full_recompute()
                    ? memory_.get<char>(ProbeBuffer::kRecomputeWorkspace)
                    : memory_.get<char>(ProbeBuffer::kActivationSlots) + slot * plan_.slot_bytes() +
                          layer_in_chunk * plan_.slot_layer_bytes();
  const LayerActivationLayout& at = plan_.layer_activations();
  auto half = [&](int64_t offset) { return reinterpret_cast<bf16*>(block + offset); };
  auto single = [&](int64_t offset) { return reinterpret_cast<float*>(block + offset); };
  return {half(at.attention_norm_output),
          single(at.attention_norm_rstd),
          half(at.query),
          half(at.key_value),
          half(at.attention_output),
          single(at.softmax_lse),
          half(at.mlp_input),
          half(at.mlp_norm_output),
          single(at.mlp_norm_rstd),
          half(at.gate_up),
          half(at.swiglu_output),
          block + at.attention_output_fp8,
          single(at.fp8_scale_inverses)};
}

std::array<Fp8LinearSite, kFp8LinearsPerLayer> StageRunner::Fp8Sites(
    int64_t chunk, int64_t layer_in_chunk, const LayerActivations& kept) const {
  const LayerParameterOffsets& w = plan_.parameters().layers[StageLayer(chunk, layer_in_chunk)];
  auto site = [&](Fp8Linear linear, int64_t weight, void* kept_input) {
    Fp8LinearSite site;
    site.chunk = chunk;
    site.layer_in_chunk = layer_in_chunk;
    site.linear = linear;
    site.weight = WeightBytes(weight);
    site.kept = kept_input;
    site.kept_scale_inverse =
        kept.fp8_scale_inverses + static_cast<int>(linear) * kFp8ScaleInverseStride;
    return site;
  };
  return {site(Fp8Linear::kQkv, w.qkv, kept.attention_norm_output),
          site(Fp8Linear::kAttentionOutput, w.attention_output, kept.attention_output_fp8),
          site(Fp8Linear::kGateUp, w.gate_up, kept.mlp_norm_output),
          site(Fp8Linear::kDown, w.down, kept.swiglu_output)};
}

AttentionBuffers StageRunner::AttentionBuffersOf(const LayerActivations& kept) const {
  AttentionBuffers buffers;
  buffers.query = kept.query;
  buffers.key_value = kept.key_value;
  buffers.lse = kept.softmax_lse;
  buffers.heads = memory_.get<bf16>(ProbeBuffer::kAttentionHeads);
  buffers.query_gradient = memory_.get<bf16>(ProbeBuffer::kQueryGradient);
  buffers.scores = memory_.get<float>(ProbeBuffer::kAttentionScores);
  buffers.probabilities = memory_.get<bf16>(ProbeBuffer::kAttentionProbabilities);
  buffers.gathered_key_value = memory_.get<bf16>(ProbeBuffer::kKeyValueGathered);
  buffers.key_value_gradients = memory_.get<float>(ProbeBuffer::kKeyValueGradients);
  buffers.row_sums = memory_.get<float>(ProbeBuffer::kAttentionRowSums);
  return buffers;
}

VocabularyShard StageRunner::Vocabulary() const {
  return {communicators_.group_rank(RankGroup::kTensor) * shapes_.vocab, shapes_.vocab};
}

char* StageRunner::LossSlot(int64_t loss_slot) const {
  return memory_.get<char>(ProbeBuffer::kLossSlots) + loss_slot * plan_.loss_activations().bytes;
}

absl::StatusOr<int64_t> StageRunner::SlotOf(int64_t chunk, int64_t micro_batch) {
  auto [it, added] = slots_.try_emplace({chunk, micro_batch}, -1);
  if (added) {
    if (free_slots_.empty()) {
      return absl::InternalError(
          absl::StrCat("no free activation slot for chunk ", chunk, " micro-batch ", micro_batch));
    }
    it->second = free_slots_.back();
    free_slots_.pop_back();
  }
  return it->second;
}

void StageRunner::ReleaseSlot(int64_t chunk, int64_t micro_batch) {
  auto it = slots_.find({chunk, micro_batch});
  free_slots_.push_back(it->second);
  slots_.erase(it);
}

absl::StatusOr<int64_t> StageRunner::LossSlotOf(int64_t micro_batch) {
  auto [it, added] = loss_slots_.try_emplace(micro_batch, -1);
  if (added) {
    if (free_loss_slots_.empty()) {
      return absl::InternalError(absl::StrCat("no free loss slot for micro-batch ", micro_batch));
    }
    it->second = free_loss_slots_.back();
    free_loss_slots_.pop_back();
  }
  return it->second;
}

void StageRunner::ReleaseLossSlot(int64_t micro_batch) {
  auto it = loss_slots_.find(micro_batch);
  free_loss_slots_.push_back(it->second);
  loss_slots_.erase(it);
}

absl::Status StageRunner::Initialize(uint64_t seed) {
  const ParameterLayout& parameters = plan_.parameters();
  // Every rank draws its own values: a distinct seed per global rank. Each element gets a
  // bf16 value; the fp8 regions' values, from which their fp8 weights are quantized, wait in
  // the gradients buffer (zeroed before every step) until then.
  const uint64_t rank_seed = seed * 1'000'003 + static_cast<uint64_t>(communicators_.rank());
  bf16* fp8_initial_values = static_cast<bf16*>(Gradient(0));
  auto initial_values = [&](int64_t element) {
    return parameters.RegionOf(element).fp8 ? fp8_initial_values + element : Weight(element);
  };
  for (const ParameterRegion& region : parameters.regions) {
    PT_RETURN_IF_ERROR(CudaStatus(
        FillUniformBf16(initial_values(region.start), region.end - region.start,
                        rank_seed + static_cast<uint64_t>(region.start), kWeightScale, stream_),
        "FillUniformBf16(weights)"));
  }
  const int64_t vocabulary = spec_.model().vocab_size();
  PT_RETURN_IF_ERROR(CudaStatus(FillTokens(memory_.get<int32_t>(ProbeBuffer::kTokens),
                                           shapes_.tokens, seed, vocabulary, stream_),
                                "FillTokens(tokens)"));
  PT_RETURN_IF_ERROR(CudaStatus(FillTokens(memory_.get<int32_t>(ProbeBuffer::kLabels),
                                           shapes_.tokens, seed + 1, vocabulary, stream_),
                                "FillTokens(labels)"));
  for (const ParameterBucket& bucket : optimizer_buckets_) {
    const OptimizerShard shard = OptimizerShardOf(bucket, shard_count_, shard_index_);
    PT_RETURN_IF_ERROR(
        CudaStatus(Bf16ToFloat(initial_values(shard.first),
                               memory_.get<float>(ProbeBuffer::kMasterWeights) + shard.state,
                               shard.count, stream_),
                   "Bf16ToFloat(master weights)"));
  }
  const int64_t shard = spec_.training().distributed_optimizer() ? parameters.shard_elements
                                                                 : parameters.padded_elements;
  for (ProbeBuffer moment : {ProbeBuffer::kAdamFirstMoment, ProbeBuffer::kAdamSecondMoment}) {
    PT_RETURN_IF_ERROR(
        CudaStatus(cudaMemsetAsync(memory_.get<float>(moment), 0, shard * sizeof(float), stream_),
                   "cudaMemsetAsync(Adam moments)"));
  }
  if (overlapped_) {
    DataParallelBuffers buffers;
    buffers.comm = communicators_.group(RankGroup::kDataContext);
    buffers.rank = shard_index_;
    buffers.shard_count = shard_count_;
    buffers.parameters = &plan_.parameters();
    buffers.weights = weights_;
    buffers.gradients = Gradient(0);
    buffers.fp32_gradients = fp32_gradients_;
    buffers.compute = stream_;
    buffers.communication = communication_stream_;
    PT_ASSIGN_OR_RETURN(data_parallel_sync_,
                        DataParallelSync::Create(buffers, optimizer_buckets_, timer_));
  }
  if (spec_.tp_comm_overlap()) {
    PT_ASSIGN_OR_RETURN(const TensorParallelOverlapPlan tp_plan,
                        TensorParallelOverlapPlanOf(shapes_.tensor_parallel, shapes_.hidden));
    tp_transport_ = std::make_unique<NcclTensorParallelTransport>(
        communicators_.group(RankGroup::kTensor), communicators_.group_size(RankGroup::kTensor),
        communicators_.group_rank(RankGroup::kTensor));
    PT_ASSIGN_OR_RETURN(tp_overlap_,
                        TensorParallelOverlap::Create(tp_plan, tp_transport_.get(), gemm_, stream_,
                                                      tensor_communication_stream_, timer_));
    // fp8's linears run the same overlap on their fp8 operands.
    if (fp8_ != nullptr) fp8_->set_overlap(tp_overlap_.get());
  }
  if (fp8_ != nullptr) PT_RETURN_IF_ERROR(fp8_->Initialize());
  // After the scales are set: the fp8 weights are quantized with them.
  if (fp8_parameters_ != nullptr) {
    PT_RETURN_IF_ERROR(fp8_parameters_->Initialize(fp8_initial_values));
  }
  return attention_.SelectKernel(plan_.placement(ProbeBuffer::kAttentionScores).bytes);
}

void StageRunner::SetMicroBatches(int64_t micro_batches) {
  const RankLayout& layout = communicators_.layout();
  const int64_t stage = layout.CoordinatesOf(communicators_.rank()).pp;
  schedule_ =
      PipelineScheduleOf(layout.pp(), spec_.config().virtual_pipeline(), micro_batches, stage);
  if (overlapped_) {
    data_parallel_plan_ = DataParallelPlanOf(
        plan_.parameters(), plan_.stage_layers(), spec_.model().tied_embeddings(), schedule_, stage,
        layout.pp(), communicators_.group_size(RankGroup::kDataContext), overlap_);
  }
}

absl::Status StageRunner::Reach(PlanPointKind kind, int64_t unit) {
  if (!overlapped_) return absl::OkStatus();
  return data_parallel_sync_->Reach(PlanPointOf(kind, pass_, unit));
}

absl::Status StageRunner::Step() {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  const size_t gradient_bytes = plan_.placement(ProbeBuffer::kGradients).bytes;
  PT_RETURN_IF_ERROR(CudaStatus(cudaMemsetAsync(Gradient(0), 0, gradient_bytes, stream_),
                                "cudaMemsetAsync(gradients)"));
  if (overlapped_) data_parallel_sync_->Start(&data_parallel_plan_.steps);
  if (fp8_ != nullptr) fp8_->StartStep();
  pass_ = 0;
  PT_RETURN_IF_ERROR(Reach(PlanPointKind::kStepStart));
  for (const ScheduleStep& step : schedule_) PT_RETURN_IF_ERROR(RunScheduleStep(step));
  PT_RETURN_IF_ERROR(Reach(PlanPointKind::kStepEnd));
  if (overlapped_) PT_RETURN_IF_ERROR(data_parallel_sync_->Finish());
  return OptimizerStep();
}

absl::Status StageRunner::RunScheduleStep(const ScheduleStep& step) {
  if (!step.transfers.empty()) {
    std::vector<PeerTransfer> transfers;
    const int64_t count = shapes_.residual_tokens * shapes_.hidden;
    for (const Transfer& t : step.transfers) {
      PeerTransfer& transfer = transfers.emplace_back();
      transfer.peer = static_cast<int>(t.peer_stage);
      transfer.count = count;
      switch (t.kind) {
        case TransferKind::kSendActivation:
          transfer.buffer = memory_.get<bf16>(ProbeBuffer::kPipelineSendActivation);
          break;
        case TransferKind::kReceiveActivation: {
          transfer.send = false;
          PT_ASSIGN_OR_RETURN(const int64_t slot, SlotOf(t.chunk, t.micro_batch));
          transfer.buffer = LayerInput(slot, 0);
          break;
        }
        case TransferKind::kSendGradient:
          transfer.buffer = memory_.get<bf16>(ProbeBuffer::kResidualGradient);
          break;
        case TransferKind::kReceiveGradient:
          transfer.send = false;
          transfer.buffer = memory_.get<bf16>(ProbeBuffer::kPipelineReceiveGradient);
          break;
      }
    }
    PT_RETURN_IF_ERROR(Mark(ProbePhase::kPpSendRecv));
    PT_RETURN_IF_ERROR(
        SendReceive(communicators_.group(RankGroup::kPipeline), transfers, ncclBfloat16, stream_));
  }
  if (!step.pass.has_value()) return absl::OkStatus();
  PT_RETURN_IF_ERROR(Reach(PlanPointKind::kBeforePass));
  PT_RETURN_IF_ERROR(step.pass->direction == PassDirection::kForward ? Forward(*step.pass)
                                                                     : Backward(*step.pass));
  PT_RETURN_IF_ERROR(Reach(PlanPointKind::kAfterPass));
  ++pass_;
  return absl::OkStatus();
}

absl::Status StageRunner::Forward(const PipelinePass& pass) {
  const StageLayers& stage = plan_.stage_layers();
  const bool embedding = stage.embedding && pass.chunk == 0;
  const bool loss =
      stage.lm_head && pass.chunk == static_cast<int64_t>(stage.chunk_layers.size()) - 1;
  PT_ASSIGN_OR_RETURN(const int64_t slot, SlotOf(pass.chunk, pass.micro_batch));
  char* loss_slot = nullptr;
  if (loss) {
    PT_ASSIGN_OR_RETURN(const int64_t index, LossSlotOf(pass.micro_batch));
    loss_slot = LossSlot(index);
  }
  bf16* chunk_output = loss ? reinterpret_cast<bf16*>(loss_slot + plan_.loss_activations().input)
                            : memory_.get<bf16>(ProbeBuffer::kPipelineSendActivation);
  const int64_t layers = stage.chunk_layers[pass.chunk];
  const ChunkUnits& units = chunks_[pass.chunk];
  if (embedding) {
    PT_RETURN_IF_ERROR(Reach(PlanPointKind::kBeforeForward, units.Embedding()));
    PT_RETURN_IF_ERROR(EmbeddingForward(layers > 0 ? LayerInput(slot, 0) : chunk_output));
  }
  if (layers == 0 && !embedding) {
    // An uneven split's chunk of no layers (pipeline_layout.h) passes its input on.
    PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
    PT_RETURN_IF_ERROR(
        CudaStatus(cudaMemcpyAsync(chunk_output, LayerInput(slot, 0),
                                   shapes_.residual_tokens * shapes_.hidden * sizeof(bf16),
                                   cudaMemcpyDeviceToDevice, stream_),
                   "cudaMemcpyAsync(chunk of no layers)"));
  }
  for (int64_t l = 0; l < layers; ++l) {
    bf16* output = l + 1 < layers ? LayerInput(slot, l + 1) : chunk_output;
    PT_RETURN_IF_ERROR(Reach(PlanPointKind::kBeforeForward, units.Layer(l)));
    PT_RETURN_IF_ERROR(LayerForward(pass.chunk, l, LayerInput(slot, l), Kept(slot, l), output));
  }
  // The exit of Megatron-LM's fp8_autocast around the chunk's transformer block.
  if (fp8_ != nullptr && layers > 0) PT_RETURN_IF_ERROR(fp8_->EndForward(pass.chunk));
  if (loss) {
    PT_RETURN_IF_ERROR(Reach(PlanPointKind::kBeforeForward, units.Loss()));
    PT_RETURN_IF_ERROR(LossForward(loss_slot));
  }
  return absl::OkStatus();
}

absl::Status StageRunner::Backward(const PipelinePass& pass) {
  const StageLayers& stage = plan_.stage_layers();
  const bool embedding = stage.embedding && pass.chunk == 0;
  const bool loss =
      stage.lm_head && pass.chunk == static_cast<int64_t>(stage.chunk_layers.size()) - 1;
  PT_ASSIGN_OR_RETURN(const int64_t slot, SlotOf(pass.chunk, pass.micro_batch));
  bf16* residual_gradient = memory_.get<bf16>(ProbeBuffer::kResidualGradient);
  const bf16* gradient = memory_.get<bf16>(ProbeBuffer::kPipelineReceiveGradient);
  const ChunkUnits& units = chunks_[pass.chunk];
  if (loss) {
    PT_ASSIGN_OR_RETURN(const int64_t index, LossSlotOf(pass.micro_batch));
    PT_RETURN_IF_ERROR(LossBackward(LossSlot(index)));
    PT_RETURN_IF_ERROR(Reach(PlanPointKind::kAfterBackward, units.Loss()));
    ReleaseLossSlot(pass.micro_batch);
    gradient = residual_gradient;
  }
  const int64_t layers = stage.chunk_layers[pass.chunk];
  for (int64_t l = layers - 1; l >= 0; --l) {
    if (plan_.full_recompute()) {
      // Rebuild the layer's activations from its kept input; its output is not needed.
      PT_RETURN_IF_ERROR(LayerForward(pass.chunk, l, LayerInput(slot, l), Kept(slot, l),
                                      memory_.get<bf16>(ProbeBuffer::kGathered)));
    }
    PT_RETURN_IF_ERROR(LayerBackward(pass.chunk, l, LayerInput(slot, l), Kept(slot, l), gradient));
    PT_RETURN_IF_ERROR(Reach(PlanPointKind::kAfterBackward, units.Layer(l)));
    gradient = residual_gradient;
  }
  // The backward of the block's first linear ends Transformer Engine's backward amax update.
  if (fp8_ != nullptr && layers > 0) PT_RETURN_IF_ERROR(fp8_->EndBackward(pass.chunk));
  if (gradient != residual_gradient) {
    // A chunk of no layers passes the received gradient on, from where sends take it.
    PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
    PT_RETURN_IF_ERROR(
        CudaStatus(cudaMemcpyAsync(residual_gradient, gradient,
                                   shapes_.residual_tokens * shapes_.hidden * sizeof(bf16),
                                   cudaMemcpyDeviceToDevice, stream_),
                   "cudaMemcpyAsync(chunk of no layers)"));
  }
  if (embedding) {
    PT_RETURN_IF_ERROR(EmbeddingBackward(residual_gradient));
    PT_RETURN_IF_ERROR(Reach(PlanPointKind::kAfterBackward, units.Embedding()));
  }
  ReleaseSlot(pass.chunk, pass.micro_batch);
  return absl::OkStatus();
}

absl::StatusOr<const bf16*> StageRunner::GatherResidual(const bf16* rows) {
  if (!shapes_.sequence_parallel) return rows;
  bf16* gathered = memory_.get<bf16>(ProbeBuffer::kGathered);
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kTpCollectives));
  PT_RETURN_IF_ERROR(AllGather(communicators_.group(RankGroup::kTensor), rows, gathered,
                               shapes_.residual_tokens * shapes_.hidden, ncclBfloat16, stream_));
  return gathered;
}

absl::StatusOr<const bf16*> StageRunner::ReduceResidual(bf16* partial) {
  if (shapes_.tensor_parallel == 1) return partial;
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kTpCollectives));
  ncclComm_t tensor = communicators_.group(RankGroup::kTensor);
  if (!shapes_.sequence_parallel) {
    PT_RETURN_IF_ERROR(AllReduce(tensor, partial, partial, shapes_.tokens * shapes_.hidden,
                                 ncclBfloat16, ncclSum, stream_));
    return partial;
  }
  bf16* reduced = memory_.get<bf16>(ProbeBuffer::kReduced);
  PT_RETURN_IF_ERROR(ReduceScatter(
      tensor, partial, reduced, shapes_.residual_tokens * shapes_.hidden, ncclBfloat16, stream_));
  return reduced;
}

absl::Status StageRunner::NormLinearForward(const PreNormLinear& layer, const bf16* x,
                                            bf16* norm_output, float* rstd, void* out,
                                            GemmOutput out_type, const Fp8LinearSite* fp8) {
  // In fp8 the norm's bf16 output is transient: the layer keeps its fp8 copy.
  bf16* normed_rows = fp8 != nullptr ? memory_.get<bf16>(ProbeBuffer::kLinearInput) : norm_output;
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  PT_RETURN_IF_ERROR(CudaStatus(RmsNormForward(x, Weight(layer.norm), normed_rows, rstd,
                                               shapes_.residual_tokens, shapes_.hidden, stream_),
                                "RmsNormForward"));
  if (fp8 != nullptr) return fp8_->ColumnForward(*fp8, normed_rows, static_cast<bf16*>(out));
  if (Overlapped(layer)) {
    // qkv_fprop / fc1_fprop: the ring exchange gathers the rows beside the GEMM's chunks.
    GemmArgs product =
        LinearForward(memory_.get<bf16>(ProbeBuffer::kGathered), Weight(layer.weight), nullptr,
                      shapes_.tokens, layer.outputs, shapes_.hidden);
    product.c = out;
    product.c_type = out_type;
    return tp_overlap_->AllGatherGemm(product, norm_output, shapes_.residual_tokens,
                                      /*keep_own=*/false);
  }
  PT_ASSIGN_OR_RETURN(const bf16* normed, GatherResidual(norm_output));
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kGemm));
  GemmArgs product = LinearForward(normed, Weight(layer.weight), nullptr, shapes_.tokens,
                                   layer.outputs, shapes_.hidden);
  product.c = out;
  product.c_type = out_type;
  return gemm_->Run(product, stream_);
}

absl::Status StageRunner::NormLinearBackward(const PreNormLinear& layer, const bf16* d_out,
                                             const bf16* x, const bf16* norm_output,
                                             const float* rstd, const bf16* residual,
                                             const Fp8LinearSite* fp8) {
  const int64_t R = shapes_.residual_tokens;
  const int64_t h = shapes_.hidden;
  bf16* partial = memory_.get<bf16>(ProbeBuffer::kProjectionOutput);
  bf16* reduced = memory_.get<bf16>(ProbeBuffer::kReduced);
  // The overlapped paths reduce-scatter the input gradient into `reduced` themselves; the
  // others leave partial sums for ReduceResidual.
  const bf16* d_normed = reduced;
  switch (NormLinearBackwardPathOf(fp8 != nullptr, Overlapped(layer))) {
    case NormLinearBackwardPath::kFp8Overlapped:
      PT_RETURN_IF_ERROR(fp8_->ColumnBackwardOverlapped(*fp8, d_out, partial, reduced,
                                                        Gradient(layer.weight), fp32_gradients_));
      break;
    case NormLinearBackwardPath::kFp8: {
      PT_RETURN_IF_ERROR(
          fp8_->Backward(*fp8, d_out, partial, Gradient(layer.weight), fp32_gradients_));
      PT_ASSIGN_OR_RETURN(d_normed, ReduceResidual(partial));
      break;
    }
    case NormLinearBackwardPath::kBf16Overlapped: {
      // qkv/fc1 dgrad and wgrad: the input's re-gather beside the input gradient, the input
      // gradient's reduce-scatter beside the weight gradient.
      bf16* gathered = memory_.get<bf16>(ProbeBuffer::kGathered);
      PT_RETURN_IF_ERROR(tp_overlap_->BulkBackward(
          norm_output, gathered, R * h,
          LinearInputGradient(d_out, Weight(layer.weight), partial, shapes_.tokens, layer.outputs,
                              h),
          LinearWeightGradient(d_out, gathered, Gradient(layer.weight), fp32_gradients_,
                               shapes_.tokens, layer.outputs, h),
          reduced, R * h));
      break;
    }
    case NormLinearBackwardPath::kBf16: {
      // With sequence parallelism the layer's input is gathered again rather than kept whole
      // (Korthikanti et al. 2022): the backward pass's extra all-gathers.
      PT_ASSIGN_OR_RETURN(const bf16* normed, GatherResidual(norm_output));
      PT_RETURN_IF_ERROR(Mark(ProbePhase::kGemm));
      PT_RETURN_IF_ERROR(
          gemm_->Run(LinearWeightGradient(d_out, normed, Gradient(layer.weight), fp32_gradients_,
                                          shapes_.tokens, layer.outputs, h),
                     stream_));
      PT_RETURN_IF_ERROR(gemm_->Run(LinearInputGradient(d_out, Weight(layer.weight), partial,
                                                        shapes_.tokens, layer.outputs, h),
                                    stream_));
      PT_ASSIGN_OR_RETURN(d_normed, ReduceResidual(partial));
      break;
    }
  }
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  PT_RETURN_IF_ERROR(CudaStatus(RmsNormWeightGradient(x, rstd, d_normed, Gradient(layer.norm),
                                                      fp32_gradients_, R, h, stream_),
                                "RmsNormWeightGradient"));
  return CudaStatus(
      RmsNormBackward(x, Weight(layer.norm), rstd, d_normed, residual,
                      memory_.get<bf16>(ProbeBuffer::kResidualGradient), R, h, stream_),
      "RmsNormBackward");
}

absl::Status StageRunner::RowLinearForward(const bf16* in, int64_t weight, int64_t inputs,
                                           const bf16* residual, bf16* out,
                                           const Fp8LinearSite* fp8) {
  bf16* partial = memory_.get<bf16>(ProbeBuffer::kProjectionOutput);
  if (tp_overlap_ != nullptr) {
    // proj_fprop / fc2_fprop: each column chunk's reduce-scatter follows its GEMM; the rows
    // reduced land in `out`, where the residual joins them.
    bf16* reduced = memory_.get<bf16>(ProbeBuffer::kReduced);
    if (fp8 != nullptr) {
      PT_RETURN_IF_ERROR(fp8_->RowForwardOverlapped(*fp8, in, partial, reduced, out));
    } else {
      PT_RETURN_IF_ERROR(tp_overlap_->GemmReduceScatter(
          LinearForward(in, Weight(weight), partial, shapes_.tokens, shapes_.hidden, inputs),
          shapes_.residual_tokens, reduced, out));
    }
    PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
    return CudaStatus(
        AddBf16(residual, out, out, shapes_.residual_tokens * shapes_.hidden, stream_),
        "AddBf16(residual)");
  }
  if (fp8 != nullptr) {
    PT_RETURN_IF_ERROR(fp8_->RowForward(*fp8, in, partial));
  } else {
    PT_RETURN_IF_ERROR(Mark(ProbePhase::kGemm));
    PT_RETURN_IF_ERROR(gemm_->Run(
        LinearForward(in, Weight(weight), partial, shapes_.tokens, shapes_.hidden, inputs),
        stream_));
  }
  PT_ASSIGN_OR_RETURN(const bf16* reduced, ReduceResidual(partial));
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(
      AddBf16(residual, reduced, out, shapes_.residual_tokens * shapes_.hidden, stream_),
      "AddBf16(residual)");
}

absl::Status StageRunner::RowLinearBackward(const bf16* d_out, const bf16* in, int64_t weight,
                                            int64_t inputs, bf16* d_in, const Fp8LinearSite* fp8) {
  switch (
      RowLinearBackwardPathOf(fp8 != nullptr, tp_overlap_ != nullptr, shapes_.sequence_parallel)) {
    case RowLinearBackwardPath::kFp8Overlapped:
      // proj_dgrad / fc2_dgrad in fp8: the rank's rows cast to E5M2, then ring-gathered.
      return fp8_->RowBackwardOverlapped(*fp8, d_out, d_in, Gradient(weight), fp32_gradients_);
    case RowLinearBackwardPath::kBf16Overlapped: {
      // proj_dgrad / fc2_dgrad: the ring gathers the output gradient beside the input
      // gradient's chunks and keeps it whole for the weight gradient.
      bf16* gathered = memory_.get<bf16>(ProbeBuffer::kGathered);
      PT_RETURN_IF_ERROR(
          tp_overlap_->AllGatherGemm(LinearInputGradient(gathered, Weight(weight), d_in,
                                                         shapes_.tokens, shapes_.hidden, inputs),
                                     d_out, shapes_.residual_tokens, /*keep_own=*/true));
      PT_RETURN_IF_ERROR(Mark(ProbePhase::kGemm));
      return gemm_->Run(LinearWeightGradient(gathered, in, Gradient(weight), fp32_gradients_,
                                             shapes_.tokens, shapes_.hidden, inputs),
                        stream_);
    }
    case RowLinearBackwardPath::kFp8SequenceParallel:
      // The rank's rows cast to E5M2, then gathered in fp8 (grad_output_preprocess).
      return fp8_->RowBackwardSequenceParallel(*fp8, d_out, d_in, Gradient(weight),
                                               fp32_gradients_);
    case RowLinearBackwardPath::kFp8: {
      PT_ASSIGN_OR_RETURN(const bf16* d_gathered, GatherResidual(d_out));
      return fp8_->Backward(*fp8, d_gathered, d_in, Gradient(weight), fp32_gradients_);
    }
    case RowLinearBackwardPath::kBf16: {
      PT_ASSIGN_OR_RETURN(const bf16* d_gathered, GatherResidual(d_out));
      PT_RETURN_IF_ERROR(Mark(ProbePhase::kGemm));
      PT_RETURN_IF_ERROR(gemm_->Run(LinearInputGradient(d_gathered, Weight(weight), d_in,
                                                        shapes_.tokens, shapes_.hidden, inputs),
                                    stream_));
      return gemm_->Run(LinearWeightGradient(d_gathered, in, Gradient(weight), fp32_gradients_,
                                             shapes_.tokens, shapes_.hidden, inputs),
                        stream_);
    }
  }
  return absl::InternalError("unknown RowLinearBackwardPath");
}

absl::Status StageRunner::LayerForward(int64_t chunk, int64_t layer_in_chunk, const bf16* input,
                                       const LayerActivations& kept, bf16* output) {
  const LayerParameterOffsets& w = plan_.parameters().layers[StageLayer(chunk, layer_in_chunk)];
  const ShardShapes& x = shapes_;
  bf16* qkv = memory_.get<bf16>(ProbeBuffer::kQkvProjection);
  std::array<Fp8LinearSite, kFp8LinearsPerLayer> sites;
  if (fp8_ != nullptr) sites = Fp8Sites(chunk, layer_in_chunk, kept);
  auto site = [&](Fp8Linear linear) {
    return fp8_ != nullptr ? &sites[static_cast<int>(linear)] : nullptr;
  };
  // Attention block: mlp_input = input + out_proj(attention(qkv(norm(input)))).
  PT_RETURN_IF_ERROR(NormLinearForward({w.attention_norm, w.qkv, x.qkv.outputs, true}, input,
                                       kept.attention_norm_output, kept.attention_norm_rstd, qkv,
                                       GemmOutput::kBf16, site(Fp8Linear::kQkv)));
  PT_RETURN_IF_ERROR(attention_.Forward(qkv, kept.attention_output, AttentionBuffersOf(kept)));
  PT_RETURN_IF_ERROR(RowLinearForward(kept.attention_output, w.attention_output,
                                      x.attention_output.inputs, input, kept.mlp_input,
                                      site(Fp8Linear::kAttentionOutput)));
  // MLP block: output = mlp_input + down(swiglu(gate_up(norm(mlp_input)))).
  PT_RETURN_IF_ERROR(NormLinearForward({w.mlp_norm, w.gate_up, x.gate_up.outputs, true},
                                       kept.mlp_input, kept.mlp_norm_output, kept.mlp_norm_rstd,
                                       kept.gate_up, GemmOutput::kBf16, site(Fp8Linear::kGateUp)));
  // In fp8 the SwiGLU output is transient too: the down projection keeps its fp8 copy.
  bf16* swiglu_output =
      fp8_ != nullptr ? memory_.get<bf16>(ProbeBuffer::kLinearInput) : kept.swiglu_output;
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  PT_RETURN_IF_ERROR(CudaStatus(
      SwigluForward(kept.gate_up, swiglu_output, x.tokens, x.ffn, stream_), "SwigluForward"));
  return RowLinearForward(swiglu_output, w.down, x.ffn, kept.mlp_input, output,
                          site(Fp8Linear::kDown));
}

absl::Status StageRunner::LayerBackward(int64_t chunk, int64_t layer_in_chunk, const bf16* input,
                                        const LayerActivations& kept, const bf16* output_gradient) {
  const LayerParameterOffsets& w = plan_.parameters().layers[StageLayer(chunk, layer_in_chunk)];
  const ShardShapes& x = shapes_;
  bf16* residual_gradient = memory_.get<bf16>(ProbeBuffer::kResidualGradient);
  bf16* swiglu_gradient = memory_.get<bf16>(ProbeBuffer::kSwigluGradient);
  bf16* mlp_gradient = memory_.get<bf16>(ProbeBuffer::kMlpGradient);
  bf16* attention_gradient = memory_.get<bf16>(ProbeBuffer::kAttentionOutputGradient);
  bf16* qkv_gradient = memory_.get<bf16>(ProbeBuffer::kQkvGradient);
  std::array<Fp8LinearSite, kFp8LinearsPerLayer> sites;
  if (fp8_ != nullptr) sites = Fp8Sites(chunk, layer_in_chunk, kept);
  auto site = [&](Fp8Linear linear) {
    return fp8_ != nullptr ? &sites[static_cast<int>(linear)] : nullptr;
  };
  // MLP block, then attention block, each ending in its norm's input gradient plus the
  // residual path's.
  PT_RETURN_IF_ERROR(RowLinearBackward(output_gradient, kept.swiglu_output, w.down, x.ffn,
                                       swiglu_gradient, site(Fp8Linear::kDown)));
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  PT_RETURN_IF_ERROR(CudaStatus(
      SwigluBackward(kept.gate_up, swiglu_gradient, mlp_gradient, x.tokens, x.ffn, stream_),
      "SwigluBackward"));
  PT_RETURN_IF_ERROR(NormLinearBackward(
      {w.mlp_norm, w.gate_up, x.gate_up.outputs, true}, mlp_gradient, kept.mlp_input,
      kept.mlp_norm_output, kept.mlp_norm_rstd, output_gradient, site(Fp8Linear::kGateUp)));
  PT_RETURN_IF_ERROR(RowLinearBackward(residual_gradient, kept.attention_output, w.attention_output,
                                       x.attention_output.inputs, attention_gradient,
                                       site(Fp8Linear::kAttentionOutput)));
  PT_RETURN_IF_ERROR(attention_.Backward(attention_gradient, kept.attention_output, qkv_gradient,
                                         AttentionBuffersOf(kept)));
  return NormLinearBackward({w.attention_norm, w.qkv, x.qkv.outputs, true}, qkv_gradient, input,
                            kept.attention_norm_output, kept.attention_norm_rstd, residual_gradient,
                            site(Fp8Linear::kQkv));
}

absl::Status StageRunner::EmbeddingForward(bf16* output) {
  const VocabularyShard shard = Vocabulary();
  bf16* partial = memory_.get<bf16>(ProbeBuffer::kProjectionOutput);
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  PT_RETURN_IF_ERROR(
      CudaStatus(paratune::EmbeddingForward(memory_.get<int32_t>(ProbeBuffer::kTokens),
                                            Weight(plan_.parameters().embedding), partial,
                                            shapes_.tokens, shapes_.hidden, shard, stream_),
                 "EmbeddingForward"));
  // Each rank looked up its vocabulary rows only: the sum over the tensor group is the
  // embedding (Megatron-LM's VocabParallelEmbedding).
  PT_ASSIGN_OR_RETURN(const bf16* embedded, ReduceResidual(partial));
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(
      cudaMemcpyAsync(output, embedded, shapes_.residual_tokens * shapes_.hidden * sizeof(bf16),
                      cudaMemcpyDeviceToDevice, stream_),
      "cudaMemcpyAsync(embedding output)");
}

absl::Status StageRunner::EmbeddingBackward(const bf16* input_gradient) {
  const VocabularyShard shard = Vocabulary();
  PT_ASSIGN_OR_RETURN(const bf16* gradient, GatherResidual(input_gradient));
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(
      paratune::EmbeddingBackward(memory_.get<int32_t>(ProbeBuffer::kTokens), gradient,
                                  Gradient(plan_.parameters().embedding), fp32_gradients_,
                                  shapes_.tokens, shapes_.hidden, shard, stream_),
      "EmbeddingBackward");
}

absl::Status StageRunner::LossForward(char* loss_slot) {
  const LossActivationLayout& at = plan_.loss_activations();
  const ParameterLayout& parameters = plan_.parameters();
  return NormLinearForward({parameters.final_norm, parameters.lm_head, shapes_.vocab},
                           reinterpret_cast<bf16*>(loss_slot + at.input),
                           reinterpret_cast<bf16*>(loss_slot + at.norm_output),
                           reinterpret_cast<float*>(loss_slot + at.norm_rstd),
                           loss_slot + at.logits, GemmOutput::kFloat, nullptr);
}

absl::Status StageRunner::LossBackward(char* loss_slot) {
  const LossActivationLayout& at = plan_.loss_activations();
  const ParameterLayout& parameters = plan_.parameters();
  const ShardShapes& x = shapes_;
  const float* logits = reinterpret_cast<float*>(loss_slot + at.logits);
  float* row_max = memory_.get<float>(ProbeBuffer::kLossStatistics);
  float* row_sum = row_max + x.tokens;
  float* loss = row_sum + x.tokens;
  bf16* d_logits = memory_.get<bf16>(ProbeBuffer::kLogitsGradient);
  ncclComm_t tensor = communicators_.group(RankGroup::kTensor);
  const VocabularyShard shard = Vocabulary();

  // Megatron-LM's vocab_parallel_cross_entropy: the maximum and the sum of exponentials
  // all-reduced over the tensor group, then softmax - one_hot on each rank's shard.
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  PT_RETURN_IF_ERROR(
      CudaStatus(LogitsRowMax(logits, row_max, x.tokens, shard, stream_), "LogitsRowMax"));
  if (tensor != nullptr) {
    PT_RETURN_IF_ERROR(Mark(ProbePhase::kTpCollectives));
    PT_RETURN_IF_ERROR(
        AllReduce(tensor, row_max, row_max, x.tokens, ncclFloat32, ncclMax, stream_));
    PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  }
  PT_RETURN_IF_ERROR(CudaStatus(LogitsRowSumExp(logits, row_max, row_sum, x.tokens, shard, stream_),
                                "LogitsRowSumExp"));
  if (tensor != nullptr) {
    PT_RETURN_IF_ERROR(Mark(ProbePhase::kTpCollectives));
    PT_RETURN_IF_ERROR(
        AllReduce(tensor, row_sum, row_sum, x.tokens, ncclFloat32, ncclSum, stream_));
    PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  }
  PT_RETURN_IF_ERROR(CudaStatus(
      CrossEntropyBackward(logits, row_max, row_sum, memory_.get<int32_t>(ProbeBuffer::kLabels),
                           d_logits, loss, 1.0f / static_cast<float>(x.tokens), x.tokens, shard,
                           stream_),
      "CrossEntropyBackward"));
  // The final norm's input feeds nothing else: no residual gradient joins.
  return NormLinearBackward({parameters.final_norm, parameters.lm_head, x.vocab}, d_logits,
                            reinterpret_cast<bf16*>(loss_slot + at.input),
                            reinterpret_cast<bf16*>(loss_slot + at.norm_output),
                            reinterpret_cast<float*>(loss_slot + at.norm_rstd), nullptr, nullptr);
}

absl::Status StageRunner::OptimizerStep() {
  const bool distributed = spec_.training().distributed_optimizer();
  const ncclDataType_t gradient_type = fp32_gradients_ ? ncclFloat32 : ncclBfloat16;
  ncclComm_t data = communicators_.group(RankGroup::kDataContext);
  if (reduce_gradients_ && !overlapped_) {
    PT_RETURN_IF_ERROR(Mark(ProbePhase::kDpCollectives));
    for (const ParameterBucket& bucket : optimizer_buckets_) {
      const OptimizerShard shard = OptimizerShardOf(bucket, shard_count_, shard_index_);
      if (distributed) {
        // In place: each rank's shard of the summed gradients lands where its own shard is.
        PT_RETURN_IF_ERROR(ReduceScatter(data, Gradient(bucket.start), Gradient(shard.first),
                                         shard.count, gradient_type, stream_));
      } else {
        PT_RETURN_IF_ERROR(AllReduce(data, Gradient(bucket.start), Gradient(bucket.start),
                                     shard.count, gradient_type, ncclSum, stream_));
      }
    }
  }
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kOptimizer));
  AdamParameters adam;
  adam.step = ++optimizer_step_;
  for (const ParameterBucket& bucket : optimizer_buckets_) {
    const OptimizerShard shard = OptimizerShardOf(bucket, shard_count_, shard_index_);
    // fp8 weights are cast from the updated master below, not rounded to bf16 here.
    const bool fp8_weights = plan_.parameters().RegionOf(bucket.start).fp8;
    PT_RETURN_IF_ERROR(CudaStatus(
        AdamStep(Gradient(shard.first), fp32_gradients_,
                 memory_.get<float>(ProbeBuffer::kMasterWeights) + shard.state,
                 memory_.get<float>(ProbeBuffer::kAdamFirstMoment) + shard.state,
                 memory_.get<float>(ProbeBuffer::kAdamSecondMoment) + shard.state,
                 fp8_weights ? nullptr : Weight(shard.first), shard.count, adam, stream_),
        "AdamStep"));
  }
  if (fp8_parameters_ != nullptr) PT_RETURN_IF_ERROR(fp8_parameters_->CastMasterWeights());
  // Overlapped, the next step's forward passes gather the parameters.
  if (reduce_gradients_ && distributed && !(overlapped_ && overlap_.overlap_param_gather)) {
    PT_RETURN_IF_ERROR(Mark(ProbePhase::kDpCollectives));
    for (const ParameterBucket& bucket : optimizer_buckets_) {
      PT_RETURN_IF_ERROR(AllGatherParameters(data, plan_.parameters(), bucket, shard_count_,
                                             shard_index_, weights_, stream_));
    }
  }
  return absl::OkStatus();
}

}  // namespace paratune
