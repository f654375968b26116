#include "worker/cuda/fp8_linear.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/cuda/communicators.h"
#include "worker/cuda/cuda_status.h"
#include "worker/cuda/fp8_kernels.h"

namespace paratune {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kInput = static_cast<int>(Fp8ForwardTensor::kInput);
constexpr int kWeight = static_cast<int>(Fp8ForwardTensor::kWeight);
constexpr int kOutputGradient = static_cast<int>(Fp8BackwardTensor::kOutputGradient);

bool ColumnParallel(Fp8Linear linear) {
  return linear == Fp8Linear::kQkv || linear == Fp8Linear::kGateUp;
}

const char* LinearName(Fp8Linear linear) {
  switch (linear) {
    case Fp8Linear::kQkv:
      return "QKV";
    case Fp8Linear::kAttentionOutput:
      return "attention output";
    case Fp8Linear::kGateUp:
      return "gate/up";
    case Fp8Linear::kDown:
      break;
  }
  return "down";
}

}  // namespace

Fp8Linears::Fp8Linears(const ShardShapes& shapes, const Fp8StateLayout& layout,
                       std::vector<int64_t> first_layer, const Fp8LinearBuffers& buffers,
                       Gemm* gemm, ncclComm_t tensor_group, ncclComm_t amax_group,
                       const DelayedScalingRecipe& recipe, cudaStream_t stream, PhaseTimer* timer)
    : shapes_(shapes),
      layout_(layout),
      first_layer_(std::move(first_layer)),
      buffers_(buffers),
      gemm_(gemm),
      tensor_group_(tensor_group),
      amax_group_(amax_group),
      recipe_(recipe),
      stream_(stream),
      timer_(timer),
      weights_cast_(layout.forward.size(), false) {}

float* Fp8Linears::Scaling(int64_t offset, int64_t index) const {
  return reinterpret_cast<float*>(buffers_.scaling_state + offset) + index;
}

const Fp8WeightCopy& Fp8Linears::CopyOf(const Fp8LinearSite& site) const {
  return layout_
      .weights[first_layer_[site.chunk] + site.layer_in_chunk][static_cast<int>(site.linear)];
}

absl::Status Fp8Linears::Initialize() {
  std::vector<float> state(layout_.scaling_bytes / sizeof(float), 0.0f);
  for (const std::vector<Fp8ScalingGroup>* groups : {&layout_.forward, &layout_.backward}) {
    for (const Fp8ScalingGroup& group : *groups) {
      for (int64_t t = 0; t < group.tensors; ++t) {
        state[group.scale / sizeof(float) + t] = 1.0f;
        state[group.ScaleInverse(t) / sizeof(float)] = 1.0f;
      }
    }
  }
  // On the rank's stream, then waited for: a cudaMemcpy from pageable memory runs on the legacy
  // default stream, which the probe's non-blocking streams do not wait for, and may return
  // before its DMA has landed, so the first casts could read the scales before they are set.
  PT_RETURN_IF_ERROR(
      CudaStatus(cudaMemcpyAsync(buffers_.scaling_state, state.data(), layout_.scaling_bytes,
                                 cudaMemcpyHostToDevice, stream_),
                 "cudaMemcpyAsync(fp8 scaling state)"));
  return CudaStatus(cudaStreamSynchronize(stream_), "cudaStreamSynchronize(fp8 scaling state)");
}

void Fp8Linears::StartStep() { weights_cast_.assign(weights_cast_.size(), false); }

absl::Status Fp8Linears::CastWeight(const Fp8LinearSite& site) {
  if (weights_cast_[site.chunk]) return absl::OkStatus();
  const LinearShape& shape = LinearShapeOf(shapes_, site.linear);
  const Fp8WeightCopy& copy = CopyOf(site);
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  if (layout_.fp8_parameters) {
    return CudaStatus(TransposeFp8(site.weight, shape.outputs, shape.inputs,
                                   buffers_.weight_copies + copy.transposed, stream_),
                      absl::StrCat("TransposeFp8(", LinearName(site.linear), " weight)"));
  }
  const Fp8ScalingGroup& group = layout_.forward[site.chunk];
  const int64_t index = group.Index(site.layer_in_chunk, site.linear, kWeight);
  return CudaStatus(
      CastToFp8(static_cast<const bf16*>(site.weight), shape.outputs, shape.inputs, group.format,
                Scaling(group.scale, index), buffers_.weight_copies + copy.weight,
                buffers_.weight_copies + copy.transposed, Scaling(group.amax_history, index),
                reinterpret_cast<float*>(buffers_.weight_copies + copy.scale_inverse), stream_),
      absl::StrCat("CastToFp8(", LinearName(site.linear), " weight)"));
}

absl::Status Fp8Linears::CastInput(const Fp8LinearSite& site, const bf16* in, int64_t rows,
                                   int64_t columns, void* out, void* out_transposed) {
  const Fp8ScalingGroup& group = layout_.forward[site.chunk];
  const int64_t index = group.Index(site.layer_in_chunk, site.linear, kInput);
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(
      CastToFp8(in, rows, columns, group.format, Scaling(group.scale, index), out, out_transposed,
                Scaling(group.amax_history, index), site.kept_scale_inverse, stream_),
      absl::StrCat("CastToFp8(", LinearName(site.linear), " input)"));
}

absl::Status Fp8Linears::CastOutputGradient(const Fp8LinearSite& site, const bf16* d_out,
                                            int64_t rows, void* out, void* out_transposed) {
  const LinearShape& shape = LinearShapeOf(shapes_, site.linear);
  const Fp8ScalingGroup& backward = layout_.backward[site.chunk];
  const int64_t index = backward.Index(site.layer_in_chunk, site.linear, kOutputGradient);
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(
      CastToFp8(d_out, rows, shape.outputs, backward.format, Scaling(backward.scale, index), out,
                out_transposed, Scaling(backward.amax_history, index), nullptr, stream_),
      absl::StrCat("CastToFp8(", LinearName(site.linear), " output gradient)"));
}

Fp8GemmArgs Fp8Linears::ForwardProduct(const Fp8LinearSite& site, bf16* out) const {
  const LinearShape& shape = LinearShapeOf(shapes_, site.linear);
  const Fp8WeightCopy& copy = CopyOf(site);
  const Fp8Format format = layout_.forward[site.chunk].format;
  const void* weight = layout_.fp8_parameters ? site.weight : buffers_.weight_copies + copy.weight;
  return Fp8LinearForward(
      {buffers_.input, format, site.kept_scale_inverse},
      {weight, format, reinterpret_cast<const float*>(buffers_.weight_copies + copy.scale_inverse)},
      out, shape.rows, shape.outputs, shape.inputs);
}

Fp8GemmArgs Fp8Linears::InputGradientProduct(const Fp8LinearSite& site, bf16* d_in) const {
  const LinearShape& shape = LinearShapeOf(shapes_, site.linear);
  const Fp8ScalingGroup& backward = layout_.backward[site.chunk];
  const int64_t index = backward.Index(site.layer_in_chunk, site.linear, kOutputGradient);
  const Fp8WeightCopy& copy = CopyOf(site);
  // The scale cannot change before the GEMMs read the cast: the group's inverse serves.
  return Fp8LinearInputGradient(
      {buffers_.output_gradient, backward.format, Scaling(backward.ScaleInverse(index))},
      {buffers_.weight_copies + copy.transposed, layout_.forward[site.chunk].format,
       reinterpret_cast<const float*>(buffers_.weight_copies + copy.scale_inverse)},
      d_in, shape.rows, shape.outputs, shape.inputs);
}

Fp8GemmArgs Fp8Linears::WeightGradientProduct(const Fp8LinearSite& site, const void* in_t,
                                              void* weight_gradient, bool fp32_gradient) const {
  const LinearShape& shape = LinearShapeOf(shapes_, site.linear);
  const Fp8ScalingGroup& backward = layout_.backward[site.chunk];
  const int64_t index = backward.Index(site.layer_in_chunk, site.linear, kOutputGradient);
  return Fp8LinearWeightGradient(
      {buffers_.output_gradient_transposed, backward.format, Scaling(backward.ScaleInverse(index))},
      {in_t, layout_.forward[site.chunk].format, site.kept_scale_inverse}, weight_gradient,
      fp32_gradient, shape.rows, shape.outputs, shape.inputs);
}

absl::Status Fp8Linears::RequireOverlap() const {
  if (overlap_ == nullptr) {
    return absl::FailedPreconditionError(
        "fp8 linears have no tensor-parallel overlap (set_overlap) to run overlapped");
  }
  return absl::OkStatus();
}

absl::Status Fp8Linears::ColumnForward(const Fp8LinearSite& site, const bf16* normed, bf16* out) {
  const LinearShape& shape = LinearShapeOf(shapes_, site.linear);
  PT_RETURN_IF_ERROR(CastWeight(site));
  const Fp8GemmArgs product = ForwardProduct(site, out);
  if (shapes_.sequence_parallel) {
    // Cast the rank's rows, then gather them in fp8 (Transformer Engine's LayerNormLinear
    // gathers its fp8 input with sequence parallelism).
    PT_RETURN_IF_ERROR(
        CastInput(site, normed, shapes_.residual_tokens, shape.inputs, site.kept, nullptr));
    if (overlap_ != nullptr) {
      // qkv_fprop / fc1_fprop. The gathered rows need not end whole: the backward gathers the
      // kept ones again.
      return overlap_->AllGatherGemm(product, site.kept, shapes_.residual_tokens,
                                     /*keep_own=*/false);
    }
    PT_RETURN_IF_ERROR(Mark(ProbePhase::kTpCollectives));
    PT_RETURN_IF_ERROR(AllGather(tensor_group_, site.kept, buffers_.input,
                                 shapes_.residual_tokens * shape.inputs, ncclUint8, stream_));
  } else {
    PT_RETURN_IF_ERROR(
        CastInput(site, normed, shape.rows, shape.inputs, buffers_.input, site.kept));
  }
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kGemm));
  return gemm_->RunFp8(product, stream_);
}

absl::Status Fp8Linears::RowForward(const Fp8LinearSite& site, const bf16* in, bf16* out) {
  const LinearShape& shape = LinearShapeOf(shapes_, site.linear);
  PT_RETURN_IF_ERROR(CastWeight(site));
  PT_RETURN_IF_ERROR(CastInput(site, in, shape.rows, shape.inputs, buffers_.input, site.kept));
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kGemm));
  return gemm_->RunFp8(ForwardProduct(site, out), stream_);
}

absl::Status Fp8Linears::RowForwardOverlapped(const Fp8LinearSite& site, const bf16* in,
                                              bf16* partial, bf16* reduced, bf16* out) {
  PT_RETURN_IF_ERROR(RequireOverlap());
  const LinearShape& shape = LinearShapeOf(shapes_, site.linear);
  PT_RETURN_IF_ERROR(CastWeight(site));
  PT_RETURN_IF_ERROR(CastInput(site, in, shape.rows, shape.inputs, buffers_.input, site.kept));
  return overlap_->GemmReduceScatter(ForwardProduct(site, partial), shapes_.residual_tokens,
                                     reduced, out);
}

absl::Status Fp8Linears::Backward(const Fp8LinearSite& site, const bf16* d_out, bf16* d_in,
                                  void* weight_gradient, bool fp32_gradient) {
  const LinearShape& shape = LinearShapeOf(shapes_, site.linear);
  PT_RETURN_IF_ERROR(CastOutputGradient(site, d_out, shape.rows, buffers_.output_gradient,
                                        buffers_.output_gradient_transposed));
  // The input's transpose: kept so, or with sequence parallelism the rank's rows, gathered
  // again and transposed (Transformer Engine's backward does the same in fp8).
  const void* in_t = site.kept;
  if (ColumnParallel(site.linear) && shapes_.sequence_parallel) {
    PT_RETURN_IF_ERROR(Mark(ProbePhase::kTpCollectives));
    PT_RETURN_IF_ERROR(AllGather(tensor_group_, site.kept, buffers_.input,
                                 shapes_.residual_tokens * shape.inputs, ncclUint8, stream_));
    PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
    PT_RETURN_IF_ERROR(CudaStatus(
        TransposeFp8(buffers_.input, shape.rows, shape.inputs, buffers_.input_transposed, stream_),
        "TransposeFp8(gathered input)"));
    in_t = buffers_.input_transposed;
  }
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kGemm));
  PT_RETURN_IF_ERROR(gemm_->RunFp8(InputGradientProduct(site, d_in), stream_));
  return gemm_->RunFp8(WeightGradientProduct(site, in_t, weight_gradient, fp32_gradient), stream_);
}

absl::Status Fp8Linears::RowBackwardSequenceParallel(const Fp8LinearSite& site, const bf16* d_out,
                                                     bf16* d_in, void* weight_gradient,
                                                     bool fp32_gradient) {
  if (ColumnParallel(site.linear)) {
    return absl::InvalidArgumentError(absl::StrCat("site.linear (", LinearName(site.linear),
                                                   ") is column-parallel, not row-parallel"));
  }
  if (!shapes_.sequence_parallel || tensor_group_ == nullptr) {
    return absl::FailedPreconditionError(
        "fp8 linears without sequence parallelism have no output gradient rows to gather");
  }
  const LinearShape& shape = LinearShapeOf(shapes_, site.linear);
  const int64_t R = shapes_.residual_tokens;
  int rank = 0;
  PT_RETURN_IF_ERROR(NcclStatus(ncclCommUserRank(tensor_group_, &rank),
                                "ncclCommUserRank(tensor group)", tensor_group_));
  // The rank's rows cast in their place of the gathered gradient, gathered there in place.
  void* own = static_cast<char*>(buffers_.output_gradient) + rank * R * shape.outputs;
  PT_RETURN_IF_ERROR(CastOutputGradient(site, d_out, R, own, nullptr));
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kTpCollectives));
  PT_RETURN_IF_ERROR(AllGather(tensor_group_, own, buffers_.output_gradient, R * shape.outputs,
                               ncclUint8, stream_));
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kGemm));
  PT_RETURN_IF_ERROR(gemm_->RunFp8(InputGradientProduct(site, d_in), stream_));
  return GatheredWeightGradient(site, weight_gradient, fp32_gradient);
}

absl::Status Fp8Linears::GatheredWeightGradient(const Fp8LinearSite& site, void* weight_gradient,
                                                bool fp32_gradient) {
  const LinearShape& shape = LinearShapeOf(shapes_, site.linear);
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  PT_RETURN_IF_ERROR(CudaStatus(TransposeFp8(buffers_.output_gradient, shape.rows, shape.outputs,
                                             buffers_.output_gradient_transposed, stream_),
                                "TransposeFp8(gathered output gradient)"));
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kGemm));
  return gemm_->RunFp8(WeightGradientProduct(site, site.kept, weight_gradient, fp32_gradient),
                       stream_);
}

absl::Status Fp8Linears::ColumnBackwardOverlapped(const Fp8LinearSite& site, const bf16* d_out,
                                                  bf16* partial, bf16* reduced,
                                                  void* weight_gradient, bool fp32_gradient) {
  PT_RETURN_IF_ERROR(RequireOverlap());
  const LinearShape& shape = LinearShapeOf(shapes_, site.linear);
  const int64_t R = shapes_.residual_tokens;
  PT_RETURN_IF_ERROR(CastOutputGradient(site, d_out, shape.rows, buffers_.output_gradient,
                                        buffers_.output_gradient_transposed));
  return overlap_->BulkBackward(
      site.kept, buffers_.input, R, shape.inputs, buffers_.input_transposed,
      InputGradientProduct(site, partial),
      WeightGradientProduct(site, buffers_.input_transposed, weight_gradient, fp32_gradient),
      reduced, R * shape.inputs);
}

absl::Status Fp8Linears::RowBackwardOverlapped(const Fp8LinearSite& site, const bf16* d_out,
                                               bf16* d_in, void* weight_gradient,
                                               bool fp32_gradient) {
  PT_RETURN_IF_ERROR(RequireOverlap());
  const LinearShape& shape = LinearShapeOf(shapes_, site.linear);
  const int64_t R = shapes_.residual_tokens;
  // The rank's rows cast in their place of the gathered gradient, which the ring fills.
  void* own = static_cast<char*>(buffers_.output_gradient) + overlap_->rank() * R * shape.outputs;
  PT_RETURN_IF_ERROR(CastOutputGradient(site, d_out, R, own, nullptr));
  PT_RETURN_IF_ERROR(
      overlap_->AllGatherGemm(InputGradientProduct(site, d_in), own, R, /*keep_own=*/false));
  return GatheredWeightGradient(site, weight_gradient, fp32_gradient);
}

absl::Status Fp8Linears::EndPass(const Fp8ScalingGroup& group) {
  if (group.tensors == 0) return absl::OkStatus();
  float* current = Scaling(group.amax_history);  // row 0: this pass's amaxes
  if (amax_group_ != nullptr) {
    PT_RETURN_IF_ERROR(Mark(ProbePhase::kDpCollectives));
    PT_RETURN_IF_ERROR(
        AllReduce(amax_group_, current, current, group.tensors, ncclFloat32, ncclMax, stream_));
  }
  PT_RETURN_IF_ERROR(Mark(ProbePhase::kElementwise));
  return CudaStatus(UpdateFp8Scales(current, layout_.history_length, group.tensors,
                                    ScaledFp8Max(group.format, recipe_.margin),
                                    Scaling(group.scale), Scaling(group.scale_inverse), stream_),
                    "UpdateFp8Scales");
}

absl::Status Fp8Linears::EndForward(int64_t chunk) {
  weights_cast_[chunk] = true;
  return EndPass(layout_.forward[chunk]);
}

absl::Status Fp8Linears::EndBackward(int64_t chunk) { return EndPass(layout_.backward[chunk]); }

}  // namespace paratune
