#include "worker/cuda/cuda_device_ops.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/cuda/cuda_status.h"
#include "worker/cuda/fill_kernels.h"
#include "worker/cuda/mlp_kernels.h"
#include "worker/cuda/nccl_element_type.h"
#include "worker/cuda/norm_kernels.h"
#include "worker/cuda/optimizer_kernels.h"
#include "worker/probe/fp8_scaling.h"
#include "worker/probe/tensor_parallel_overlap_plan.h"

namespace paratune {
namespace {

using bf16 = __nv_bfloat16;

// Scale of the uniform random weights: GPT-2's initializer standard deviation.
constexpr float kWeightScale = 0.02f;

}  // namespace

absl::StatusOr<std::unique_ptr<CudaDeviceOps>> CudaDeviceOps::Create(
    const ProbeSpec& spec, const FootprintPlan& plan, const DeviceFootprint& memory,
    const RankCommunicators& communicators, ncclComm_t fp8_amax_group,
    const OptimizerLayout& optimizer, paratune::Gemm* gemm, cudaStream_t stream,
    cudaStream_t communication_stream, cudaStream_t tensor_communication_stream,
    PhaseTimer* timer) {
  const int64_t group_rank = communicators.group_rank(communicators.layout().DataShardGroup());
  if (optimizer.data_context_rank != group_rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "optimizer.data_context_rank ", optimizer.data_context_rank, " is not rank ",
        communicators.rank(), "'s place in the group its data x context states are sharded over, ",
        group_rank, ": the layout is another rank's"));
  }
  return std::unique_ptr<CudaDeviceOps>(
      new CudaDeviceOps(spec, plan, memory, communicators, fp8_amax_group, optimizer, gemm, stream,
                        communication_stream, tensor_communication_stream, timer));
}

CudaDeviceOps::CudaDeviceOps(const ProbeSpec& spec, const FootprintPlan& plan,
                             const DeviceFootprint& memory, const RankCommunicators& communicators,
                             ncclComm_t fp8_amax_group, const OptimizerLayout& optimizer,
                             paratune::Gemm* gemm, cudaStream_t stream,
                             cudaStream_t communication_stream,
                             cudaStream_t tensor_communication_stream, PhaseTimer* timer)
    : spec_(spec),
      plan_(plan),
      memory_(memory),
      communicators_(communicators),
      optimizer_(optimizer),
      shapes_(plan.shapes()),
      gemm_(gemm),
      stream_(stream),
      communication_stream_(communication_stream),
      tensor_communication_stream_(tensor_communication_stream),
      timer_(timer),
      fp32_gradients_(spec.training().fp32_gradients()),
      attention_(gemm, plan.shapes(), plan.attention_query_chunk(),
                 communicators.group(RankGroup::kContext),
                 communicators.group_rank(RankGroup::kContext), spec.cp_comm_type(), stream,
                 timer) {
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
    buffers.weights = memory.get<char>(ProbeBuffer::kWeights);
    buffers.weight_copies = memory.get<char>(ProbeBuffer::kFp8WeightCopies);
    buffers.scaling_state = memory.get<char>(ProbeBuffer::kFp8ScalingState);
    buffers.master_weights = memory.get<float>(ProbeBuffer::kMasterWeights);
    std::vector<OptimizerShard> shards;
    for (size_t bucket = 0; bucket < optimizer.buckets.size(); ++bucket) {
      shards.push_back(optimizer.ShardOf(bucket));
    }
    fp8_parameters_ = std::make_unique<Fp8Parameters>(
        shapes_, plan.parameters(), plan.fp8_state(), shards, buffers,
        optimizer.reduce_gradients ? communicators.group(RankGroup::kDataContext) : nullptr, stream,
        timer);
  }
}

bf16* CudaDeviceOps::Weight(int64_t offset) const {
  return reinterpret_cast<bf16*>(memory_.get<char>(ProbeBuffer::kWeights) +
                                 plan_.parameters().WeightByte(offset));
}

void* CudaDeviceOps::Gradient(int64_t offset) const {
  char* base = memory_.get<char>(ProbeBuffer::kGradients);
  return base + offset * GradientBytes();
}

VocabularyShard CudaDeviceOps::Vocabulary() const {
  return {communicators_.group_rank(RankGroup::kTensor) * shapes_.vocab, shapes_.vocab};
}

GemmArgs CudaDeviceOps::ArgsOf(const LinearProduct& product) const {
  const bf16* a = At(product.a);
  const bf16* b = At(product.b);
  GemmArgs args;
  switch (product.role) {
    case GemmRole::kForward:
      args = LinearForward(a, b, nullptr, product.tokens, product.outputs, product.inputs);
      break;
    case GemmRole::kInputGradient:
      args = LinearInputGradient(a, b, nullptr, product.tokens, product.outputs, product.inputs);
      break;
    case GemmRole::kWeightGradient:
      return LinearWeightGradient(a, b, At<void>(product.c), product.float_output, product.tokens,
                                  product.outputs, product.inputs);
  }
  args.c = At<void>(product.c);
  args.c_type = product.float_output ? GemmOutput::kFloat : GemmOutput::kBf16;
  return args;
}

Fp8LinearSite CudaDeviceOps::SiteOf(const Fp8Site& site) const {
  Fp8LinearSite result;
  result.chunk = site.chunk;
  result.layer_in_chunk = site.layer_in_chunk;
  result.linear = site.linear;
  result.weight = At<void>(site.weight);
  result.kept = At<void>(site.kept);
  result.kept_scale_inverse = At<float>(site.kept_scale_inverse);
  return result;
}

AttentionBuffers CudaDeviceOps::BuffersOf(const AttentionKept& kept) const {
  AttentionBuffers buffers;
  buffers.query = At(kept.query);
  buffers.key_value = At(kept.key_value);
  buffers.lse = At<float>(kept.softmax_lse);
  buffers.heads = memory_.get<bf16>(ProbeBuffer::kAttentionHeads);
  buffers.query_gradient = memory_.get<bf16>(ProbeBuffer::kQueryGradient);
  buffers.scores = memory_.get<float>(ProbeBuffer::kAttentionScores);
  buffers.probabilities = memory_.get<bf16>(ProbeBuffer::kAttentionProbabilities);
  buffers.gathered_key_value = memory_.get<bf16>(ProbeBuffer::kKeyValueGathered);
  buffers.key_value_gradients = memory_.get<float>(ProbeBuffer::kKeyValueGradients);
  buffers.row_sums = memory_.get<float>(ProbeBuffer::kAttentionRowSums);
  return buffers;
}

absl::StatusOr<Fp8Linears*> CudaDeviceOps::Fp8() const {
  if (fp8_ == nullptr) {
    return absl::FailedPreconditionError("no fp8 linears: the spec trains in bf16");
  }
  return fp8_.get();
}

absl::StatusOr<TensorParallelOverlap*> CudaDeviceOps::TensorOverlap() const {
  if (tp_overlap_ == nullptr) {
    return absl::FailedPreconditionError(
        "no tensor-parallel overlap: the spec has no tp_comm_overlap, or Initialize has not run");
  }
  return tp_overlap_.get();
}

absl::Status CudaDeviceOps::Initialize(uint64_t seed) {
  const ParameterLayout& parameters = plan_.parameters();
  // Every rank draws its own values: a distinct seed per global rank. Each element gets a
  // bf16 value; the fp8 regions' values, from which their fp8 weights are quantized, wait in
  // the gradients buffer (zeroed before every step) until then.
  const uint64_t rank_seed = seed * 1'000'003 + static_cast<uint64_t>(communicators_.rank());
  bf16* fp8_initial_values = static_cast<bf16*>(Gradient(0));
  auto initial_values = [&](int64_t element) {
    return parameters.RegionOf(element).fp8 ? fp8_initial_values + element : Weight(element);
  };
  if (plan_.sharded_weights()) {
    PT_RETURN_IF_ERROR(InitializeShardedWeights(rank_seed));
  } else {
    for (const ParameterRegion& region : parameters.regions) {
      PT_RETURN_IF_ERROR(CudaStatus(
          FillUniformBf16(initial_values(region.start), region.end - region.start,
                          rank_seed + static_cast<uint64_t>(region.start), kWeightScale, stream_),
          "FillUniformBf16(weights)"));
    }
  }
  const int64_t vocabulary = spec_.model().vocab_size();
  PT_RETURN_IF_ERROR(CudaStatus(FillTokens(memory_.get<int32_t>(ProbeBuffer::kTokens),
                                           shapes_.tokens, seed, vocabulary, stream_),
                                "FillTokens(tokens)"));
  PT_RETURN_IF_ERROR(CudaStatus(FillTokens(memory_.get<int32_t>(ProbeBuffer::kLabels),
                                           shapes_.tokens, seed + 1, vocabulary, stream_),
                                "FillTokens(labels)"));
  for (size_t bucket = 0; bucket < optimizer_.buckets.size(); ++bucket) {
    const OptimizerShard shard = optimizer_.ShardOf(bucket);
    PT_RETURN_IF_ERROR(
        CudaStatus(Bf16ToFloat(plan_.sharded_weights() ? ShardWeights(static_cast<int64_t>(bucket))
                                                       : initial_values(shard.first),
                               memory_.get<float>(ProbeBuffer::kMasterWeights) + shard.state,
                               shard.count, stream_),
                   "Bf16ToFloat(master weights)"));
  }
  const int64_t shard = ShardsOptimizerStates(spec_.config().dp_sharding())
                            ? parameters.shard_elements
                            : parameters.padded_elements;
  for (ProbeBuffer moment : {ProbeBuffer::kAdamFirstMoment, ProbeBuffer::kAdamSecondMoment}) {
    PT_RETURN_IF_ERROR(
        CudaStatus(cudaMemsetAsync(memory_.get<float>(moment), 0, shard * sizeof(float), stream_),
                   "cudaMemsetAsync(Adam moments)"));
  }
  if (optimizer_.overlapped) {
    DataParallelBuffers buffers;
    buffers.data_context = DataParallelGroupOf(RankGroup::kDataContext);
    buffers.expert_data = DataParallelGroupOf(RankGroup::kExpertData);
    buffers.parameters = &parameters;
    buffers.weights = memory_.get<char>(ProbeBuffer::kWeights);
    buffers.gradients = Gradient(0);
    buffers.fp32_gradients = fp32_gradients_;
    buffers.compute = stream_;
    buffers.communication = communication_stream_;
    PT_ASSIGN_OR_RETURN(data_parallel_sync_,
                        DataParallelSync::Create(buffers, optimizer_.buckets, timer_));
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

absl::Status CudaDeviceOps::InitializeShardedWeights(uint64_t rank_seed) {
  for (size_t bucket = 0; bucket < optimizer_.buckets.size(); ++bucket) {
    const OptimizerShard shard = optimizer_.ShardOf(static_cast<int64_t>(bucket));
    // The values the region's fill gives these elements unsharded (Initialize).
    const ParameterRegion& region = plan_.parameters().RegionOf(shard.first);
    PT_RETURN_IF_ERROR(
        CudaStatus(FillUniformBf16Slice(ShardWeights(static_cast<int64_t>(bucket)), shard.count,
                                        rank_seed + static_cast<uint64_t>(region.start),
                                        shard.first - region.start, kWeightScale, stream_),
                   "FillUniformBf16Slice(weight shard)"));
  }
  const int64_t slot_bytes = plan_.gathered_weight_slot_bytes();
  char* slots = memory_.get<char>(ProbeBuffer::kGatheredWeights);
  PT_RETURN_IF_ERROR(CudaStatus(
      FillUniformBf16(reinterpret_cast<bf16*>(slots),
                      kGatheredWeightSlots * slot_bytes / static_cast<int64_t>(sizeof(bf16)),
                      rank_seed + static_cast<uint64_t>(plan_.parameters().padded_elements),
                      kWeightScale, stream_),
      "FillUniformBf16(gathered weight slots)"));
  WeightGatherBuffers buffers;
  // A dense model's buckets are all the data x context group's.
  if (optimizer_.reduce_gradients && optimizer_.reduced.data_context) {
    buffers.group = DataParallelGroupOf(RankGroup::kDataContext);
  }
  buffers.shards = memory_.get<char>(ProbeBuffer::kWeights);
  buffers.slots = slots;
  buffers.slot_bytes = slot_bytes;
  buffers.compute = stream_;
  buffers.communication = communication_stream_;
  PT_ASSIGN_OR_RETURN(weight_gathers_, WeightGathers::Create(buffers, timer_));
  return absl::OkStatus();
}

bf16* CudaDeviceOps::ShardWeights(int64_t bucket) const {
  return memory_.get<bf16>(ProbeBuffer::kWeights) + optimizer_.ShardOf(bucket).state;
}

// Where a call belongs in the step changes nothing the device runs: the context only places
// the recording's ops (recording_device_ops.h).
void CudaDeviceOps::SetContext(const StepOpContext&) {}

absl::Status CudaDeviceOps::ZeroGradients() {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(
      cudaMemsetAsync(Gradient(0), 0, plan_.placement(ProbeBuffer::kGradients).bytes, stream_),
      "cudaMemsetAsync(gradients)");
}

absl::Status CudaDeviceOps::StartFp8Step() {
  PT_ASSIGN_OR_RETURN(Fp8Linears * fp8, Fp8());
  fp8->StartStep();
  return absl::OkStatus();
}

absl::Status CudaDeviceOps::IssueDataParallel(const PlanStep& step) {
  if (data_parallel_sync_ == nullptr) {
    return absl::FailedPreconditionError(
        "no data-parallel sync: its collectives are not overlapped, or Initialize has not run");
  }
  return data_parallel_sync_->Issue(step);
}

absl::Status CudaDeviceOps::SendReceive(const std::vector<PipelineTransfer>& transfers) {
  std::vector<PeerTransfer> peers;
  for (const PipelineTransfer& t : transfers) {
    PeerTransfer& peer = peers.emplace_back();
    peer.send = t.transfer.kind == TransferKind::kSendActivation ||
                t.transfer.kind == TransferKind::kSendGradient;
    peer.peer = static_cast<int>(t.transfer.peer_stage);
    peer.buffer = At(t.buffer);
    peer.count = Rows();
  }
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kPpSendRecv));
  return paratune::SendReceive(communicators_.group(RankGroup::kPipeline), peers, ncclBfloat16,
                               stream_);
}

absl::Status CudaDeviceOps::CopyRows(DeviceRef from, DeviceRef to, std::string_view what) {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(
      cudaMemcpyAsync(At(to), At(from), Rows() * sizeof(bf16), cudaMemcpyDeviceToDevice, stream_),
      absl::StrCat("cudaMemcpyAsync(", std::string(what), ")"));
}

absl::Status CudaDeviceOps::TensorAllGather(DeviceRef rows, DeviceRef gathered, std::string_view) {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kTpCollectives));
  return AllGather(communicators_.group(RankGroup::kTensor), At(rows), At(gathered), Rows(),
                   ncclBfloat16, stream_);
}

absl::Status CudaDeviceOps::TensorReduceScatter(DeviceRef partial, DeviceRef reduced,
                                                std::string_view) {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kTpCollectives));
  return ReduceScatter(communicators_.group(RankGroup::kTensor), At(partial), At(reduced), Rows(),
                       ncclBfloat16, stream_);
}

absl::Status CudaDeviceOps::TensorAllReduce(DeviceRef partial, std::string_view) {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kTpCollectives));
  return AllReduce(communicators_.group(RankGroup::kTensor), At(partial), At(partial),
                   shapes_.tokens * shapes_.hidden, ncclBfloat16, ncclSum, stream_);
}

absl::Status CudaDeviceOps::EmbeddingForward(DeviceRef weight, DeviceRef partial) {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(paratune::EmbeddingForward(memory_.get<int32_t>(ProbeBuffer::kTokens),
                                               At(weight), At(partial), shapes_.tokens,
                                               shapes_.hidden, Vocabulary(), stream_),
                    "EmbeddingForward");
}

absl::Status CudaDeviceOps::EmbeddingBackward(DeviceRef output_gradient,
                                              DeviceRef weight_gradient) {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(
      paratune::EmbeddingBackward(memory_.get<int32_t>(ProbeBuffer::kTokens), At(output_gradient),
                                  At<void>(weight_gradient), fp32_gradients_, shapes_.tokens,
                                  shapes_.hidden, Vocabulary(), stream_),
      "EmbeddingBackward");
}

absl::Status CudaDeviceOps::RmsNormForward(DeviceRef x, DeviceRef weight, DeviceRef out,
                                           DeviceRef rstd) {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(paratune::RmsNormForward(At(x), At(weight), At(out), At<float>(rstd),
                                             shapes_.residual_tokens, shapes_.hidden, stream_),
                    "RmsNormForward");
}

absl::Status CudaDeviceOps::RmsNormWeightGradient(DeviceRef x, DeviceRef rstd, DeviceRef d_out,
                                                  DeviceRef weight_gradient) {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(paratune::RmsNormWeightGradient(
                        At(x), At<float>(rstd), At(d_out), At<void>(weight_gradient),
                        fp32_gradients_, shapes_.residual_tokens, shapes_.hidden, stream_),
                    "RmsNormWeightGradient");
}

absl::Status CudaDeviceOps::RmsNormBackward(DeviceRef x, DeviceRef weight, DeviceRef rstd,
                                            DeviceRef d_out, const DeviceRef* residual,
                                            DeviceRef d_x) {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(
      paratune::RmsNormBackward(At(x), At(weight), At<float>(rstd), At(d_out),
                                residual != nullptr ? At(*residual) : nullptr, At(d_x),
                                shapes_.residual_tokens, shapes_.hidden, stream_),
      "RmsNormBackward");
}

absl::Status CudaDeviceOps::AddRows(DeviceRef a, DeviceRef b, DeviceRef out) {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(AddBf16(At(a), At(b), At(out), Rows(), stream_), "AddBf16(residual)");
}

absl::Status CudaDeviceOps::SwigluForward(DeviceRef gate_up, DeviceRef out, int64_t ffn) {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(paratune::SwigluForward(At(gate_up), At(out), shapes_.tokens, ffn, stream_),
                    "SwigluForward");
}

absl::Status CudaDeviceOps::SwigluBackward(DeviceRef gate_up, DeviceRef d_out, DeviceRef d_gate_up,
                                           int64_t ffn) {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(
      paratune::SwigluBackward(At(gate_up), At(d_out), At(d_gate_up), shapes_.tokens, ffn, stream_),
      "SwigluBackward");
}

absl::Status CudaDeviceOps::Gemm(const LinearProduct& product) {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kGemm));
  return gemm_->Run(ArgsOf(product), stream_);
}

absl::Status CudaDeviceOps::AllGatherGemm(const LinearProduct& product, DeviceRef own,
                                          bool keep_own) {
  PT_ASSIGN_OR_RETURN(TensorParallelOverlap * overlap, TensorOverlap());
  return overlap->AllGatherGemm(ArgsOf(product), At(own), shapes_.residual_tokens, keep_own);
}

absl::Status CudaDeviceOps::GemmReduceScatter(const LinearProduct& product, DeviceRef reduced,
                                              DeviceRef out) {
  PT_ASSIGN_OR_RETURN(TensorParallelOverlap * overlap, TensorOverlap());
  return overlap->GemmReduceScatter(ArgsOf(product), shapes_.residual_tokens, At(reduced), At(out));
}

absl::Status CudaDeviceOps::BulkBackward(DeviceRef own, DeviceRef gathered,
                                         const LinearProduct& input_gradient,
                                         const LinearProduct& weight_gradient, DeviceRef reduced) {
  PT_ASSIGN_OR_RETURN(TensorParallelOverlap * overlap, TensorOverlap());
  return overlap->BulkBackward(At(own), At(gathered), Rows(), ArgsOf(input_gradient),
                               ArgsOf(weight_gradient), At(reduced), Rows());
}

absl::Status CudaDeviceOps::Fp8ColumnForward(const Fp8Site& site, DeviceRef normed, DeviceRef out) {
  PT_ASSIGN_OR_RETURN(Fp8Linears * fp8, Fp8());
  return fp8->ColumnForward(SiteOf(site), At(normed), At(out));
}

absl::Status CudaDeviceOps::Fp8RowForward(const Fp8Site& site, DeviceRef in, DeviceRef partial) {
  PT_ASSIGN_OR_RETURN(Fp8Linears * fp8, Fp8());
  return fp8->RowForward(SiteOf(site), At(in), At(partial));
}

absl::Status CudaDeviceOps::Fp8RowForwardOverlapped(const Fp8Site& site, DeviceRef in,
                                                    DeviceRef partial, DeviceRef reduced,
                                                    DeviceRef out) {
  PT_ASSIGN_OR_RETURN(Fp8Linears * fp8, Fp8());
  return fp8->RowForwardOverlapped(SiteOf(site), At(in), At(partial), At(reduced), At(out));
}

absl::Status CudaDeviceOps::Fp8Backward(const Fp8Site& site, DeviceRef d_out, DeviceRef d_in,
                                        DeviceRef weight_gradient) {
  PT_ASSIGN_OR_RETURN(Fp8Linears * fp8, Fp8());
  return fp8->Backward(SiteOf(site), At(d_out), At(d_in), At<void>(weight_gradient),
                       fp32_gradients_);
}

absl::Status CudaDeviceOps::Fp8ColumnBackwardOverlapped(const Fp8Site& site, DeviceRef d_out,
                                                        DeviceRef partial, DeviceRef reduced,
                                                        DeviceRef weight_gradient) {
  PT_ASSIGN_OR_RETURN(Fp8Linears * fp8, Fp8());
  return fp8->ColumnBackwardOverlapped(SiteOf(site), At(d_out), At(partial), At(reduced),
                                       At<void>(weight_gradient), fp32_gradients_);
}

absl::Status CudaDeviceOps::Fp8RowBackwardOverlapped(const Fp8Site& site, DeviceRef d_out,
                                                     DeviceRef d_in, DeviceRef weight_gradient) {
  PT_ASSIGN_OR_RETURN(Fp8Linears * fp8, Fp8());
  return fp8->RowBackwardOverlapped(SiteOf(site), At(d_out), At(d_in), At<void>(weight_gradient),
                                    fp32_gradients_);
}

absl::Status CudaDeviceOps::Fp8RowBackwardSequenceParallel(const Fp8Site& site, DeviceRef d_out,
                                                           DeviceRef d_in,
                                                           DeviceRef weight_gradient) {
  PT_ASSIGN_OR_RETURN(Fp8Linears * fp8, Fp8());
  return fp8->RowBackwardSequenceParallel(SiteOf(site), At(d_out), At(d_in),
                                          At<void>(weight_gradient), fp32_gradients_);
}

absl::Status CudaDeviceOps::EndFp8Forward(int64_t chunk) {
  PT_ASSIGN_OR_RETURN(Fp8Linears * fp8, Fp8());
  return fp8->EndForward(chunk);
}

absl::Status CudaDeviceOps::EndFp8Backward(int64_t chunk) {
  PT_ASSIGN_OR_RETURN(Fp8Linears * fp8, Fp8());
  return fp8->EndBackward(chunk);
}

absl::Status CudaDeviceOps::AttentionForward(DeviceRef qkv, DeviceRef out,
                                             const AttentionKept& kept) {
  return attention_.Forward(At(qkv), At(out), BuffersOf(kept));
}

absl::Status CudaDeviceOps::AttentionBackward(DeviceRef d_out, DeviceRef out, DeviceRef d_qkv,
                                              const AttentionKept& kept) {
  return attention_.Backward(At(d_out), At(out), At(d_qkv), BuffersOf(kept));
}

absl::Status CudaDeviceOps::LogitsRowMax(DeviceRef logits, DeviceRef row_max) {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(paratune::LogitsRowMax(At<float>(logits), At<float>(row_max), shapes_.tokens,
                                           Vocabulary(), stream_),
                    "LogitsRowMax");
}

absl::Status CudaDeviceOps::AllReduceLogitStatistic(DeviceRef values, Reduction reduction,
                                                    std::string_view) {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kTpCollectives));
  return AllReduce(communicators_.group(RankGroup::kTensor), At<float>(values), At<float>(values),
                   shapes_.tokens, ncclFloat32, reduction == Reduction::kMax ? ncclMax : ncclSum,
                   stream_);
}

absl::Status CudaDeviceOps::LogitsRowSumExp(DeviceRef logits, DeviceRef row_max,
                                            DeviceRef row_sum) {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(
      paratune::LogitsRowSumExp(At<float>(logits), At<float>(row_max), At<float>(row_sum),
                                shapes_.tokens, Vocabulary(), stream_),
      "LogitsRowSumExp");
}

absl::Status CudaDeviceOps::CrossEntropyBackward(DeviceRef logits, DeviceRef row_max,
                                                 DeviceRef row_sum, DeviceRef d_logits,
                                                 DeviceRef loss) {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(
      paratune::CrossEntropyBackward(At<float>(logits), At<float>(row_max), At<float>(row_sum),
                                     memory_.get<int32_t>(ProbeBuffer::kLabels), At(d_logits),
                                     At<float>(loss), 1.0f / static_cast<float>(shapes_.tokens),
                                     shapes_.tokens, Vocabulary(), stream_),
      "CrossEntropyBackward");
}

DataParallelGroup CudaDeviceOps::DataParallelGroupOf(RankGroup group) const {
  // A dense model's expert groups are not split (null): it has no expert buckets.
  if (group != RankGroup::kDataContext) {
    return {communicators_.group(group), communicators_.group_rank(group)};
  }
  // The dense buckets shard over the data x context group's shard group and, under hybrid
  // sharding, all-reduce their shards over its replicas (null without).
  const RankGroup shard = communicators_.layout().DataShardGroup();
  return {communicators_.group(shard), communicators_.group_rank(shard),
          communicators_.group(RankGroup::kDataReplica)};
}

RouterScoreFunction CudaDeviceOps::ScoreFunction() const {
  return spec_.model().moe().router_score == RouterScore::kSigmoid ? RouterScoreFunction::kSigmoid
                                                                   : RouterScoreFunction::kSoftmax;
}

absl::Status CudaDeviceOps::RouterTopK(DeviceRef logits, DeviceRef probabilities,
                                       DeviceRef indices) {
  const MoeShardShapes& moe = plan_.moe();
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(
      paratune::RouterTopK(At(logits), At<float>(probabilities), At<int32_t>(indices),
                           moe.routed_tokens, moe.experts, moe.top_k, ScoreFunction(), stream_),
      "RouterTopK");
}

absl::Status CudaDeviceOps::RouterTopKBackward(DeviceRef logits, DeviceRef probabilities,
                                               DeviceRef indices, DeviceRef d_probabilities,
                                               DeviceRef d_logits) {
  const MoeShardShapes& moe = plan_.moe();
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(
      paratune::RouterTopKBackward(At(logits), At<float>(probabilities), At<int32_t>(indices),
                                   At<float>(d_probabilities), At(d_logits), moe.routed_tokens,
                                   moe.experts, moe.top_k, ScoreFunction(), stream_),
      "RouterTopKBackward");
}

absl::Status CudaDeviceOps::PermuteTokens(DeviceRef rows, DeviceRef probabilities,
                                          DeviceRef permuted, DeviceRef permuted_probabilities) {
  const MoeShardShapes& moe = plan_.moe();
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(
      PermuteBalanced(At(rows), At<float>(probabilities), At(permuted),
                      At<float>(permuted_probabilities), moe.routed_tokens, shapes_.hidden,
                      moe.top_k, moe.experts, moe.expert_capacity, stream_),
      "PermuteBalanced");
}

absl::Status CudaDeviceOps::ScatterRowGradients(DeviceRef d_rows, DeviceRef d_permuted) {
  const MoeShardShapes& moe = plan_.moe();
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  // The sum of copies' backward is the permutation of the rows' gradients, probabilities aside.
  return CudaStatus(
      PermuteBalanced(At(d_rows), nullptr, At(d_permuted), nullptr, moe.routed_tokens,
                      shapes_.hidden, moe.top_k, moe.experts, moe.expert_capacity, stream_),
      "PermuteBalanced(gradients)");
}

absl::Status CudaDeviceOps::UnpermuteTokens(DeviceRef permuted, DeviceRef rows) {
  const MoeShardShapes& moe = plan_.moe();
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(UnpermuteBalanced(At(permuted), At(rows), moe.routed_tokens, shapes_.hidden,
                                      moe.top_k, moe.experts, moe.expert_capacity, stream_),
                    "UnpermuteBalanced");
}

absl::Status CudaDeviceOps::UnpermuteProbabilities(DeviceRef d_permuted_probabilities,
                                                   DeviceRef d_probabilities) {
  const MoeShardShapes& moe = plan_.moe();
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(paratune::UnpermuteProbabilities(
                        At<float>(d_permuted_probabilities), At<float>(d_probabilities),
                        moe.routed_tokens, moe.top_k, moe.experts, moe.expert_capacity, stream_),
                    "UnpermuteProbabilities");
}

absl::Status CudaDeviceOps::ExpertAllToAll(DeviceRef send, DeviceRef receive, int64_t rows,
                                           int64_t width, ElementType type, std::string_view) {
  const int64_t ranks = communicators_.group_size(RankGroup::kExpert);
  ncclComm_t comm = communicators_.group(RankGroup::kExpert);
  if (comm == nullptr) {
    // A group of one rank (ep 1) has no communicator: its own block is the whole exchange, a
    // copy.
    PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
    return CudaStatus(
        cudaMemcpyAsync(At<void>(receive), At<void>(send), rows * width * BytesOf(type),
                        cudaMemcpyDeviceToDevice, stream_),
        "cudaMemcpyAsync(expert all-to-all of one rank)");
  }
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kEpCollectives));
  return AllToAll(comm, ranks, At<void>(send), At<void>(receive), rows * width / ranks,
                  NcclTypeOf(type), stream_);
}

absl::Status CudaDeviceOps::ExpertTensorAllGather(DeviceRef own, DeviceRef gathered, int64_t rows,
                                                  int64_t width, ElementType type,
                                                  std::string_view) {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kEpCollectives));
  return AllGather(communicators_.group(RankGroup::kExpertTensor), At<void>(own),
                   At<void>(gathered), rows * width, NcclTypeOf(type), stream_);
}

absl::Status CudaDeviceOps::ExpertTensorReduceScatter(DeviceRef partial, DeviceRef reduced,
                                                      int64_t rows, int64_t width, ElementType type,
                                                      std::string_view) {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kEpCollectives));
  return ReduceScatter(communicators_.group(RankGroup::kExpertTensor), At<void>(partial),
                       At<void>(reduced), rows * width, NcclTypeOf(type), stream_);
}

absl::Status CudaDeviceOps::SortChunks(DeviceRef in, DeviceRef out, int64_t groups,
                                       int64_t local_experts, int64_t chunk_rows, int64_t width,
                                       ElementType type) {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  if (type == ElementType::kFloat32) {
    return CudaStatus(SortChunksFloat(At<float>(in), At<float>(out), groups, local_experts,
                                      chunk_rows, width, stream_),
                      "SortChunksFloat");
  }
  return CudaStatus(
      SortChunksBf16(At(in), At(out), groups, local_experts, chunk_rows, width, stream_),
      "SortChunksBf16");
}

absl::Status CudaDeviceOps::WeightedSwigluForward(DeviceRef gate_up, DeviceRef probabilities,
                                                  DeviceRef out, int64_t rows) {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(paratune::WeightedSwigluForward(At(gate_up), At<float>(probabilities), At(out),
                                                    rows, plan_.moe().expert_ffn, stream_),
                    "WeightedSwigluForward");
}

absl::Status CudaDeviceOps::WeightedSwigluBackward(DeviceRef gate_up, DeviceRef probabilities,
                                                   DeviceRef d_out, DeviceRef d_gate_up,
                                                   DeviceRef d_probabilities, int64_t rows) {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(paratune::WeightedSwigluBackward(
                        At(gate_up), At<float>(probabilities), At(d_out), At(d_gate_up),
                        At<float>(d_probabilities), rows, plan_.moe().expert_ffn, stream_),
                    "WeightedSwigluBackward");
}

absl::Status CudaDeviceOps::ReduceScatterGradients(int64_t bucket) {
  const ParameterBucket& range = optimizer_.buckets[bucket];
  const OptimizerShard shard = optimizer_.ShardOf(bucket);
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kDpCollectives));
  // In place: each rank's shard of the summed gradients lands where its own shard is.
  return ReduceScatterShard(DataParallelGroupOf(range.group), Gradient(range.start),
                            Gradient(shard.first), shard.count, NcclTypeOf(GradientType()),
                            stream_);
}

absl::Status CudaDeviceOps::AllReduceGradients(int64_t bucket) {
  const ParameterBucket& range = optimizer_.buckets[bucket];
  const OptimizerShard shard = optimizer_.ShardOf(bucket);
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kDpCollectives));
  return AllReduce(communicators_.group(range.group), Gradient(range.start), Gradient(range.start),
                   shard.count, NcclTypeOf(GradientType()), ncclSum, stream_);
}

absl::Status CudaDeviceOps::DispatchWeightGather(const WeightGather& gather) {
  if (weight_gathers_ == nullptr) {
    return absl::FailedPreconditionError(
        "no weight gathers: the spec's weights are not sharded, or Initialize has not run");
  }
  return weight_gathers_->Dispatch(optimizer_.buckets[gather.bucket],
                                   optimizer_.ShardOf(gather.bucket), gather.slot);
}

absl::Status CudaDeviceOps::WaitWeightGather(const WeightGather& gather) {
  if (weight_gathers_ == nullptr) {
    return absl::FailedPreconditionError(
        "no weight gathers: the spec's weights are not sharded, or Initialize has not run");
  }
  return weight_gathers_->Wait(gather.slot);
}

absl::Status CudaDeviceOps::ZeroStagedGradients(int64_t bucket) {
  const ParameterBucket& range = optimizer_.buckets[bucket];
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(cudaMemsetAsync(memory_.get<char>(ProbeBuffer::kGradientStaging), 0,
                                    (range.end - range.start) * GradientBytes(), stream_),
                    "cudaMemsetAsync(staged gradients)");
}

absl::Status CudaDeviceOps::ReduceStagedGradients(int64_t bucket) {
  const ParameterBucket& range = optimizer_.buckets[bucket];
  const OptimizerShard shard = optimizer_.ShardOf(bucket);
  char* staged = memory_.get<char>(ProbeBuffer::kGradientStaging);
  // The rank's slice of the staged unit, where the in-place reduce-scatter leaves its sum.
  char* own = staged + (shard.first - range.start) * GradientBytes();
  if (optimizer_.Reduces(bucket)) {
    PT_RETURN_IF_ERROR(Mark(ProbePhase::kDpCollectives));
    PT_RETURN_IF_ERROR(ReduceScatterShard(DataParallelGroupOf(range.group), staged, own,
                                          shard.count, NcclTypeOf(GradientType()), stream_));
  }
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(
      AddGradients(own, memory_.get<char>(ProbeBuffer::kGradients) + shard.state * GradientBytes(),
                   fp32_gradients_, shard.count, stream_),
      "AddGradients");
}

absl::Status CudaDeviceOps::Adam(const AdamUpdate& update) {
  AdamParameters adam;
  adam.step = update.step;
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kOptimizer));
  return CudaStatus(
      AdamStep(At<void>(update.gradients), fp32_gradients_, At<float>(update.master_weights),
               At<float>(update.first_moment), At<float>(update.second_moment),
               update.update_weights ? At(update.weights) : nullptr, update.shard.count, adam,
               stream_),
      "AdamStep");
}

absl::Status CudaDeviceOps::CastMasterWeights() {
  if (fp8_parameters_ == nullptr) {
    return absl::FailedPreconditionError("no fp8 parameters: the spec has no fp8_param_gather");
  }
  return fp8_parameters_->CastMasterWeights();
}

absl::Status CudaDeviceOps::GatherParameters(int64_t bucket) {
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kDpCollectives));
  const ParameterBucket& range = optimizer_.buckets[bucket];
  return AllGatherParameters(DataParallelGroupOf(range.group), plan_.parameters(), range,
                             memory_.get<char>(ProbeBuffer::kWeights), stream_);
}

}  // namespace paratune
