#include "worker/cuda/fp8_parameters.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/cuda/communicators.h"
#include "worker/cuda/cuda_status.h"
#include "worker/cuda/fp8_kernels.h"

namespace paratune {
namespace {

constexpr int kWeight = static_cast<int>(Fp8ForwardTensor::kWeight);

}  // namespace

Fp8Parameters::Fp8Parameters(const ShardShapes& shapes, const ParameterLayout& parameters,
                             const Fp8StateLayout& state, const std::vector<OptimizerShard>& shards,
                             const Fp8ParameterBuffers& buffers, ncclComm_t data_context,
                             cudaStream_t stream, PhaseTimer* timer)
    : shapes_(shapes),
      parameters_(parameters),
      state_(state),
      buffers_(buffers),
      data_context_(data_context),
      stream_(stream),
      timer_(timer) {
  for (const OptimizerShard& shard : shards) {
    for (const Fp8WeightRange& range :
         Fp8WeightRangesIn(parameters, shapes, shard.first, shard.first + shard.count)) {
      casts_.push_back(
          {range, shard.state + (range.start - shard.first), parameters.WeightByte(range.start)});
    }
  }
}

float* Fp8Parameters::Scaling(int64_t offset, int64_t index) const {
  return reinterpret_cast<float*>(buffers_.scaling_state + offset) + index;
}

absl::Status Fp8Parameters::Initialize(const __nv_bfloat16* initial) {
  for (const Fp8WeightRange& range :
       Fp8WeightRangesIn(parameters_, shapes_, 0, parameters_.padded_elements)) {
    const Fp8ScalingGroup& group = state_.forward[range.chunk];
    const int64_t index = group.Index(range.layer_in_chunk, range.linear, kWeight);
    const LinearShape& shape = LinearShapeOf(shapes_, range.linear);
    const Fp8WeightCopy& copy =
        state_.weights[parameters_.first_layer[range.chunk] + range.layer_in_chunk]
                      [static_cast<int>(range.linear)];
    PT_RETURN_IF_ERROR(CudaStatus(
        CastToFp8(initial + range.start, shape.outputs, shape.inputs, group.format,
                  Scaling(group.scale, index),
                  buffers_.weights + parameters_.WeightByte(range.start), nullptr,
                  Scaling(group.amax_history, index),
                  reinterpret_cast<float*>(buffers_.weight_copies + copy.scale_inverse), stream_),
        "CastToFp8(initial fp8 weight)"));
  }
  return absl::OkStatus();
}

absl::Status Fp8Parameters::CastMasterWeights() {
  PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kOptimizer));
  for (const MasterCast& cast : casts_) {
    const Fp8ScalingGroup& group = state_.forward[cast.range.chunk];
    const int64_t index = group.Index(cast.range.layer_in_chunk, cast.range.linear, kWeight);
    PT_RETURN_IF_ERROR(CudaStatus(
        CastMasterToFp8(buffers_.master_weights + cast.master, cast.range.count, group.format,
                        Scaling(group.scale, index), buffers_.weights + cast.weight_byte,
                        Scaling(group.amax_history, index), stream_),
        "CastMasterToFp8"));
  }
  for (size_t chunk = 0; chunk < state_.forward.size(); ++chunk) {
    const Fp8ScalingGroup& group = state_.forward[chunk];
    if (group.tensors == 0) continue;
    if (data_context_ != nullptr) {
      // Row 0 of the chunk's forward window, not only its weights' slots as Transformer
      // Engine packs them: the other slots are reduced over a group that includes this one
      // at the chunk's next forward pass anyway, where a maximum taken twice is the same.
      PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kDpCollectives));
      PT_RETURN_IF_ERROR(AllReduce(data_context_, Scaling(group.amax_history),
                                   Scaling(group.amax_history), group.tensors, ncclFloat32, ncclMax,
                                   stream_));
    }
    // The group keeps 1 / scale beside each scale (UpdateFp8Scales), strided over the
    // chunk's [layer, linear, tensor] slots; the copies' inverses are [layer, linear] slots.
    PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kOptimizer));
    const int64_t weights = group.tensors / group.tensors_per_linear;
    const Fp8WeightCopy& first = state_.weights[parameters_.first_layer[chunk]][0];
    PT_RETURN_IF_ERROR(CudaStatus(
        cudaMemcpy2DAsync(buffers_.weight_copies + first.scale_inverse, kFp8ScaleInverseAlignment,
                          Scaling(group.ScaleInverse(kWeight)),
                          group.tensors_per_linear * kFp8ScaleInverseAlignment, sizeof(float),
                          weights, cudaMemcpyDeviceToDevice, stream_),
        absl::StrCat("cudaMemcpy2DAsync(chunk ", chunk, " fp8 weight scale inverses)")));
  }
  return absl::OkStatus();
}

}  // namespace paratune
