#include "worker/probe/parameter_layout.h"

#include <algorithm>
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

// Closes the open region at the layout's end, if it holds anything, and opens the next one.
void CloseRegion(ParameterLayout& layout, ParameterRegion next) {
  ParameterRegion& open = layout.regions.back();
  open.end = layout.elements;
  if (open.end == open.start) layout.regions.pop_back();
  const ParameterRegion& last = layout.regions.empty() ? next : layout.regions.back();
  next.start = layout.elements;
  next.byte_start =
      layout.regions.empty()
          ? 0
          : RoundUp(last.byte_start + (last.end - last.start) * last.bytes_per_element,
                    kWeightRegionAlignment);
  layout.regions.push_back(next);
}

}  // namespace

const ParameterRegion& ParameterLayout::RegionOf(int64_t element) const {
  return *std::prev(std::upper_bound(
      regions.begin(), regions.end(), element,
      [](int64_t value, const ParameterRegion& region) { return value < region.start; }));
}

int64_t ParameterLayout::WeightByte(int64_t element) const {
  const ParameterRegion& region = RegionOf(element);
  return region.byte_start + (element - region.start) * region.bytes_per_element;
}

ParameterLayout LayoutParameters(const ShardShapes& shapes, const StageLayers& stage_layers,
                                 bool tied_embeddings, int64_t shard_count, bool fp8_parameters) {
  ParameterLayout layout;
  layout.tensor_alignment = std::lcm(kParameterAlignment, shard_count);
  layout.regions.push_back({});
  const int64_t vocabulary = shapes.vocab * shapes.hidden;
  const int64_t chunks = static_cast<int64_t>(stage_layers.chunk_layers.size());
  for (int64_t c = 0; c < chunks; ++c) {
    CloseRegion(layout, {c, false});
    if (stage_layers.embedding && c == 0) layout.embedding = Place(layout, vocabulary);
    const int64_t first = static_cast<int64_t>(layout.layers.size());
    layout.first_layer.push_back(first);
    layout.layers.resize(first + stage_layers.chunk_layers[c]);
    for (int64_t i = first; i < static_cast<int64_t>(layout.layers.size()); ++i) {
      LayerParameterOffsets& layer = layout.layers[i];
      layer.attention_norm = Place(layout, shapes.hidden);
      if (!fp8_parameters) {
        layer.qkv = Place(layout, shapes.qkv.WeightElements());
        layer.attention_output = Place(layout, shapes.attention_output.WeightElements());
      }
      layer.mlp_norm = Place(layout, shapes.hidden);
      if (!fp8_parameters) {
        layer.gate_up = Place(layout, shapes.gate_up.WeightElements());
        layer.down = Place(layout, shapes.down.WeightElements());
      }
    }
    if (stage_layers.lm_head && c + 1 == chunks) {
      layout.final_norm = Place(layout, shapes.hidden);
      // Megatron-LM keeps a copy of a tied embedding on the last stage when it is not stage 0.
      layout.lm_head =
          tied_embeddings && stage_layers.embedding ? layout.embedding : Place(layout, vocabulary);
    }
    if (!fp8_parameters) continue;
    // The chunk's linear weights, in the forward order of its layers.
    CloseRegion(layout, {c, true, 0, 0, 0, 1});
    for (int64_t i = first; i < static_cast<int64_t>(layout.layers.size()); ++i) {
      LayerParameterOffsets& layer = layout.layers[i];
      layer.qkv = Place(layout, shapes.qkv.WeightElements());
      layer.attention_output = Place(layout, shapes.attention_output.WeightElements());
      layer.gate_up = Place(layout, shapes.gate_up.WeightElements());
      layer.down = Place(layout, shapes.down.WeightElements());
    }
  }
  layout.shard_elements =
      RoundUp((layout.elements + shard_count - 1) / shard_count, kParameterAlignment);
  layout.padded_elements = layout.shard_elements * shard_count;
  // The end padding belongs to the last region that holds a tensor.
  if (layout.regions.size() > 1 && layout.regions.back().start == layout.elements) {
    layout.regions.pop_back();
  }
  ParameterRegion& last = layout.regions.back();
  last.end = layout.padded_elements;
  layout.weight_bytes = last.byte_start + (last.end - last.start) * last.bytes_per_element;
  return layout;
}

}  // namespace paratune
