#include "worker/probe/parameter_layout.h"

#include <numeric>

namespace paratune {
namespace {

int64_t RoundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// Appends a tensor of `elements` to the layout and returns its offset.
int64_t Place(ParameterLayout& layout, int64_t elements) {
  const int64_t offset = layout.elements;
  layout.elements = RoundUp(offset + elements, layout.tensor_alignment);
  return offset;
}

}  // namespace

ParameterLayout LayoutParameters(const ShardShapes& shapes, const StageLayers& stage_layers,
                                 bool tied_embeddings, int64_t shard_count) {
  ParameterLayout layout;
  layout.tensor_alignment = std::lcm(kParameterAlignment, shard_count);
  const int64_t vocabulary = shapes.vocab * shapes.hidden;
  if (stage_layers.embedding) layout.embedding = Place(layout, vocabulary);
  for (int64_t layers : stage_layers.chunk_layers) {
    layout.first_layer.push_back(static_cast<int64_t>(layout.layers.size()));
    for (int64_t i = 0; i < layers; ++i) {
      LayerParameterOffsets layer;
      layer.attention_norm = Place(layout, shapes.hidden);
      layer.qkv = Place(layout, shapes.qkv.WeightElements());
      layer.attention_output = Place(layout, shapes.attention_output.WeightElements());
      layer.mlp_norm = Place(layout, shapes.hidden);
      layer.gate_up = Place(layout, shapes.gate_up.WeightElements());
      layer.down = Place(layout, shapes.down.WeightElements());
      layout.layers.push_back(layer);
    }
  }
  if (stage_layers.lm_head) {
    layout.final_norm = Place(layout, shapes.hidden);
    // Megatron-LM keeps a copy of a tied embedding on the last stage when it is not stage 0.
    layout.lm_head =
        tied_embeddings && stage_layers.embedding ? layout.embedding : Place(layout, vocabulary);
  }
  layout.shard_elements =
      RoundUp((layout.elements + shard_count - 1) / shard_count, kParameterAlignment);
  layout.padded_elements = layout.shard_elements * shard_count;
  return layout;
}

}  // namespace paratune
