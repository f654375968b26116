#include "worker/probe/fp8_state_layout.h"

namespace paratune {
namespace {

constexpr int64_t kAlignment = 256;
constexpr int64_t kFp32 = 4;

// Appends `bytes` to a buffer of `*end` bytes and returns their offset.
int64_t Place(int64_t* end, int64_t bytes) {
  const int64_t offset = *end;
  *end = (offset + bytes + kAlignment - 1) / kAlignment * kAlignment;
  return offset;
}

Fp8ScalingGroup PlaceGroup(int64_t* end, Fp8Format format, int64_t layers, int tensors_per_linear,
                           int64_t history_length) {
  Fp8ScalingGroup group;
  group.format = format;
  group.tensors_per_linear = tensors_per_linear;
  group.tensors = layers * kFp8LinearsPerLayer * tensors_per_linear;
  group.scale = Place(end, group.tensors * kFp32);
  group.scale_inverse = Place(end, group.tensors * kFp8ScaleInverseAlignment);
  group.amax_history = Place(end, history_length * group.tensors * kFp32);
  return group;
}

}  // namespace

const LinearShape& LinearShapeOf(const ShardShapes& shapes, Fp8Linear linear) {
  switch (linear) {
    case Fp8Linear::kQkv:
      return shapes.qkv;
    case Fp8Linear::kAttentionOutput:
      return shapes.attention_output;
    case Fp8Linear::kGateUp:
      return shapes.gate_up;
    case Fp8Linear::kDown:
      break;
  }
  return shapes.down;
}

Fp8StateLayout LayoutFp8State(const ShardShapes& shapes, const StageLayers& stage_layers,
                              const DelayedScalingRecipe& recipe, bool fp8_parameters) {
  Fp8StateLayout layout;
  layout.fp8_parameters = fp8_parameters;
  layout.history_length = recipe.amax_history_length;
  const int64_t layers = stage_layers.TotalLayers();
  for (int64_t layer = 0; layer < layers; ++layer) {
    std::array<Fp8WeightCopy, kFp8LinearsPerLayer>& copies = layout.weights.emplace_back();
    for (int l = 0; l < kFp8LinearsPerLayer; ++l) {
      const int64_t elements = LinearShapeOf(shapes, static_cast<Fp8Linear>(l)).WeightElements();
      copies[l].weight = fp8_parameters ? -1 : Place(&layout.weight_bytes, elements);
      copies[l].transposed = Place(&layout.weight_bytes, elements);
    }
  }
  // The scale inverses in one array after the copies, each in a slot a GEMM can read.
  int64_t inverse =
      Place(&layout.weight_bytes, layers * kFp8LinearsPerLayer * kFp8ScaleInverseAlignment);
  for (auto& copies : layout.weights) {
    for (Fp8WeightCopy& copy : copies) {
      copy.scale_inverse = inverse;
      inverse += kFp8ScaleInverseAlignment;
    }
  }
  for (int64_t chunk_layers : stage_layers.chunk_layers) {
    layout.forward.push_back(PlaceGroup(&layout.scaling_bytes, HybridFormat(false), chunk_layers,
                                        kFp8ForwardTensors, recipe.amax_history_length));
    layout.backward.push_back(PlaceGroup(&layout.scaling_bytes, HybridFormat(true), chunk_layers,
                                         kFp8BackwardTensors, recipe.amax_history_length));
  }
  return layout;
}

}  // namespace paratune
