#include "worker/probe/parameter_layout.h"

#include <algorithm>
#include <numeric>

namespace paratune {
namespace {

int64_t RoundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// The layout being built: tensors go into `partition`, from element `cursor`.
struct Builder {
  ParameterLayout& layout;
  ParameterPartition* partition;
  int64_t cursor = 0;

  // Appends a tensor of `elements` and returns its offset.
  int64_t Place(int64_t elements) {
    const int64_t offset = cursor;
    cursor = partition->start +
             RoundUp(offset + elements - partition->start, partition->tensor_alignment);
    layout.elements += cursor - offset;
    return offset;
  }

  // Closes the open region at the layout's end, if it holds anything, and opens the next one.
  void CloseRegion(ParameterRegion next) {
    if (!layout.regions.empty()) {
      ParameterRegion& open = layout.regions.back();
      open.end = cursor;
      if (open.end == open.start) layout.regions.pop_back();
    }
    next.start = cursor;
    next.byte_start = 0;
    if (!layout.regions.empty()) {
      const ParameterRegion& last = layout.regions.back();
      next.byte_start = RoundUp(last.byte_start + (last.end - last.start) * last.bytes_per_element,
                                kWeightRegionAlignment);
    }
    layout.regions.push_back(next);
  }

  // Ends the open partition: pads it to equal shards, its last region holding the padding.
  void ClosePartition(int64_t state_start) {
    ParameterPartition& p = *partition;
    const int64_t elements = cursor - p.start;
    p.shard_elements = RoundUp((elements + p.shard_count - 1) / p.shard_count, kParameterAlignment);
    p.end = p.start + p.shard_elements * p.shard_count;
    p.state_start = state_start;
    // An empty region opened last gives the padding to the region before it.
    if (layout.regions.back().start == cursor && layout.regions.size() > 1) {
      layout.regions.pop_back();
    }
    layout.regions.back().end = p.end;
    cursor = p.end;
  }
};

ParameterPartition OpenPartition(RankGroup group, int64_t start, int64_t shard_count) {
  ParameterPartition partition;
  partition.group = group;
  partition.start = start;
  partition.shard_count = shard_count;
  partition.tensor_alignment = std::lcm(kParameterAlignment, shard_count);
  return partition;
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
  return LayoutParameters(shapes, MoeShardShapes(), stage_layers, tied_embeddings, shard_count,
                          /*expert_shard_count=*/1, fp8_parameters);
}

ParameterLayout LayoutParameters(const ShardShapes& shapes, const MoeShardShapes& moe,
                                 const StageLayers& stage_layers, bool tied_embeddings,
                                 int64_t shard_count, int64_t expert_shard_count,
                                 bool fp8_parameters) {
  ParameterLayout layout;
  layout.dense = OpenPartition(RankGroup::kDataContext, 0, shard_count);
  Builder build{layout, &layout.dense};
  const int64_t vocabulary = shapes.vocab * shapes.hidden;
  const int64_t chunks = static_cast<int64_t>(stage_layers.chunk_layers.size());
  auto is_moe = [&](int64_t layer) {
    return layer < static_cast<int64_t>(stage_layers.moe_layers.size()) &&
           stage_layers.moe_layers[layer];
  };
  // A dense layer's MLP, or an MoE layer's dense tensors: its router and shared experts.
  auto place_mlp = [&](LayerParameterOffsets& layer, bool moe_layer) {
    if (!moe_layer) {
      layer.gate_up = build.Place(shapes.gate_up.WeightElements());
      layer.down = build.Place(shapes.down.WeightElements());
      return;
    }
    layer.gate_up = layer.down = -1;
    layer.router = build.Place(moe.router.WeightElements());
    if (moe.shared_ffn > 0) {
      layer.shared_fc1 = build.Place(moe.shared_fc1.WeightElements());
      layer.shared_fc2 = build.Place(moe.shared_fc2.WeightElements());
    }
  };
  for (int64_t c = 0; c < chunks; ++c) {
    build.CloseRegion({c, false});
    if (stage_layers.embedding && c == 0) layout.embedding = build.Place(vocabulary);
    const int64_t first = static_cast<int64_t>(layout.layers.size());
    layout.first_layer.push_back(first);
    layout.layers.resize(first + stage_layers.chunk_layers[c]);
    for (int64_t i = first; i < static_cast<int64_t>(layout.layers.size()); ++i) {
      LayerParameterOffsets& layer = layout.layers[i];
      layer.attention_norm = build.Place(shapes.hidden);
      if (!fp8_parameters) {
        layer.qkv = build.Place(shapes.qkv.WeightElements());
        layer.attention_output = build.Place(shapes.attention_output.WeightElements());
      }
      layer.mlp_norm = build.Place(shapes.hidden);
      if (!fp8_parameters) place_mlp(layer, is_moe(i));
    }
    if (stage_layers.lm_head && c + 1 == chunks) {
      layout.final_norm = build.Place(shapes.hidden);
      // Megatron-LM keeps a copy of a tied embedding on the last stage when it is not stage 0.
      layout.lm_head =
          tied_embeddings && stage_layers.embedding ? layout.embedding : build.Place(vocabulary);
    }
    if (!fp8_parameters) continue;
    // The chunk's linear weights, in the forward order of its layers.
    build.CloseRegion({c, true, false, 0, 0, 0, 1});
    for (int64_t i = first; i < static_cast<int64_t>(layout.layers.size()); ++i) {
      LayerParameterOffsets& layer = layout.layers[i];
      layer.qkv = build.Place(shapes.qkv.WeightElements());
      layer.attention_output = build.Place(shapes.attention_output.WeightElements());
      place_mlp(layer, is_moe(i));
    }
  }
  build.ClosePartition(/*state_start=*/0);

  // The routed experts, chunk after chunk, each layer's local experts' fc1 then their fc2
  // (TEGroupedMLP's linear_fc1 and linear_fc2).
  layout.experts = OpenPartition(RankGroup::kExpertData, layout.dense.end, expert_shard_count);
  build.partition = &layout.experts;
  for (int64_t c = 0; c < chunks; ++c) {
    build.CloseRegion({c, false, true});
    const int64_t end =
        c + 1 < chunks ? layout.first_layer[c + 1] : static_cast<int64_t>(layout.layers.size());
    for (int64_t i = layout.first_layer[c]; i < end; ++i) {
      if (!is_moe(i)) continue;
      LayerParameterOffsets& layer = layout.layers[i];
      for (int64_t e = 0; e < moe.local_experts; ++e) {
        layer.expert_fc1.push_back(build.Place(moe.expert_fc1.WeightElements()));
      }
      for (int64_t e = 0; e < moe.local_experts; ++e) {
        layer.expert_fc2.push_back(build.Place(moe.expert_fc2.WeightElements()));
      }
    }
  }
  if (build.cursor == layout.experts.start) {
    // A dense model, or a stage without MoE layers: no expert partition.
    layout.regions.pop_back();
    layout.experts.end = layout.experts.start;
    layout.experts.state_start = layout.dense.shard_elements;
  } else {
    build.ClosePartition(/*state_start=*/layout.dense.shard_elements);
  }
  layout.padded_elements = layout.experts.end;
  layout.shard_elements = layout.dense.shard_elements + layout.experts.shard_elements;
  const ParameterRegion& last = layout.regions.back();
  layout.weight_bytes = last.byte_start + (last.end - last.start) * last.bytes_per_element;
  return layout;
}

}  // namespace paratune
