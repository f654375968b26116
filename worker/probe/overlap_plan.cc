#include "worker/probe/overlap_plan.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "worker/probe/gradient_buckets.h"

namespace paratune {
namespace {

// A parameter tensor at `offset` in the buffer, used by `unit`.
struct UnitTensor {
  int64_t offset = 0;
  int64_t unit = 0;
  bool shared_embedding = false;
};

// The stage's tensors in buffer order (forward order, LayoutParameters).
std::vector<UnitTensor> TensorsOf(const ParameterLayout& parameters,
                                  const std::vector<ChunkUnits>& chunks, bool shared_embedding) {
  std::vector<UnitTensor> tensors;
  if (parameters.embedding >= 0) {
    tensors.push_back({parameters.embedding, chunks.front().Embedding(), shared_embedding});
  }
  for (size_t c = 0; c < chunks.size(); ++c) {
    for (int64_t l = 0; l < chunks[c].layers; ++l) {
      const LayerParameterOffsets& layer = parameters.layers[parameters.first_layer[c] + l];
      std::vector<int64_t> offsets = {
          layer.attention_norm, layer.qkv,        layer.attention_output,
          layer.mlp_norm,       layer.gate_up,    layer.down,
          layer.router,         layer.shared_fc1, layer.shared_fc2};
      offsets.insert(offsets.end(), layer.expert_fc1.begin(), layer.expert_fc1.end());
      offsets.insert(offsets.end(), layer.expert_fc2.begin(), layer.expert_fc2.end());
      for (int64_t offset : offsets) {
        if (offset >= 0) tensors.push_back({offset, chunks[c].Layer(l), false});
      }
    }
  }
  if (parameters.final_norm >= 0) {
    tensors.push_back({parameters.final_norm, chunks.back().Loss(), false});
  }
  // A tied LM head on a single stage is the embedding, already listed.
  if (parameters.lm_head >= 0 && parameters.lm_head != parameters.embedding) {
    tensors.push_back({parameters.lm_head, chunks.back().Loss(), shared_embedding});
  }
  std::sort(tensors.begin(), tensors.end(),
            [](const UnitTensor& a, const UnitTensor& b) { return a.offset < b.offset; });
  return tensors;
}

// Megatron-LM's buckets of each chunk, as ranges of the buffer: each weight region (one per
// parameter dtype, parameter_layout.h, and one of the routed experts) bucketed on its own, the
// chunk's expert region first, then its fp8 region, then its bf16 one, so that a chunk's
// buckets run from its highest addresses down. Megatron-LM sizes the expert buffers' buckets
// as the dense ones (the same bucket_size) and pads them to the expert data-parallel size. A
// tensor's range runs to the next tensor's start (the last one's to the padded end), so the buckets
// tile the buffer. With fp8 parameters the bf16 region keeps one bucket: Megatron-LM merges every
// non-fp8 bucket into the group of the fp8 bucket holding the chunk's first layers
// (param_and_grad_buffer.py, partition_buckets), which the probe issues as a separate
// collective at the same point.
std::vector<ParameterBucket> BucketsOf(const ParameterLayout& parameters,
                                       const std::vector<UnitTensor>& tensors, int64_t stage,
                                       int64_t data_context_size, const OverlapOptions& options) {
  std::vector<const ParameterRegion*> regions;
  for (const ParameterRegion& region : parameters.regions) regions.push_back(&region);
  std::stable_sort(regions.begin(), regions.end(),
                   [](const ParameterRegion* a, const ParameterRegion* b) {
                     if (a->chunk != b->chunk) return a->chunk < b->chunk;
                     return a->start > b->start;
                   });
  const bool fp8_parameters = std::any_of(
      regions.begin(), regions.end(), [](const ParameterRegion* region) { return region->fp8; });
  std::vector<ParameterBucket> buckets;
  for (const ParameterRegion* region : regions) {
    std::vector<size_t> members;  // indices into `tensors`
    std::vector<GradientTensor> region_tensors;
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (tensors[i].offset < region->start || tensors[i].offset >= region->end) continue;
      const int64_t end =
          i + 1 < tensors.size() ? tensors[i + 1].offset : parameters.padded_elements;
      members.push_back(i);
      region_tensors.push_back(
          {end - tensors[i].offset, tensors[i].unit, tensors[i].shared_embedding});
    }
    const bool split = options.overlap_grad_reduce && stage == 0 && region->chunk == 0 &&
                       (region->fp8 || region->experts || !fp8_parameters);
    const std::optional<int64_t> bucket_elements =
        split ? std::optional<int64_t>(DefaultBucketElements(data_context_size)) : std::nullopt;
    // With the distributed optimizer the partition's shard count is its group's size.
    const ParameterPartition& partition = parameters.PartitionOf(region->start);
    const GradientBucketLayout layout = LayoutGradientBuckets(
        region_tensors, bucket_elements, partition.shard_count, options.distributed_optimizer);
    for (const GradientBucket& bucket : layout.buckets) {
      ParameterBucket& range = buckets.emplace_back();
      range.chunk = region->chunk;
      range.group = partition.group;
      range.start = parameters.padded_elements;
      for (int64_t t : bucket.tensors) {
        range.start = std::min(range.start, tensors[members[t]].offset);
        range.end = std::max(range.end, tensors[members[t]].offset + region_tensors[t].elements);
      }
      range.first_unit = bucket.first_layer;
      range.last_unit = bucket.last_layer;
    }
  }
  return buckets;
}

// Plan steps collected by point, then emitted in the order the runner reaches the points.
class StepCollector {
 public:
  void Add(PlanPoint point, PlanOperation operation, int64_t bucket) {
    at_[Key(point)].push_back({point, operation, bucket});
  }

  void Emit(PlanPoint point, std::vector<PlanStep>& steps) {
    auto it = at_.find(Key(point));
    if (it == at_.end()) return;
    steps.insert(steps.end(), it->second.begin(), it->second.end());
    at_.erase(it);
  }

 private:
  using PointKey = std::tuple<int, int64_t, int64_t>;
  static PointKey Key(PlanPoint point) {
    return {static_cast<int>(point.kind), point.pass, point.unit};
  }
  std::map<PointKey, std::vector<PlanStep>> at_;
};

PlanPoint At(PlanPointKind kind, int64_t pass = 0, int64_t unit = 0) { return {kind, pass, unit}; }

}  // namespace

PlanPoint PlanPointOf(PlanPointKind kind, int64_t pass, int64_t unit) {
  const bool step_level = kind == PlanPointKind::kStepStart || kind == PlanPointKind::kStepEnd;
  return {kind, step_level ? 0 : pass, unit};
}

std::vector<ChunkUnits> ChunkUnitsOf(const StageLayers& stage_layers) {
  std::vector<ChunkUnits> chunks;
  const size_t count = stage_layers.chunk_layers.size();
  int64_t next = 0;
  for (size_t c = 0; c < count; ++c) {
    ChunkUnits& chunk = chunks.emplace_back();
    chunk.first = next;
    chunk.embedding = stage_layers.embedding && c == 0;
    chunk.layers = stage_layers.chunk_layers[c];
    chunk.loss = stage_layers.lm_head && c + 1 == count;
    next = chunk.end();
  }
  return chunks;
}

OptimizerShard OptimizerShardOf(const ParameterBucket& bucket, const ParameterPartition& partition,
                                int64_t group_rank) {
  const int64_t shard_count = partition.shard_count;
  OptimizerShard shard;
  shard.count = (bucket.end - bucket.start) / shard_count;
  // One shard is everyone's: the rank's place in the group says nothing about it.
  shard.first = bucket.start + (shard_count > 1 ? group_rank * shard.count : 0);
  shard.state = partition.state_start + (bucket.start - partition.start) / shard_count;
  return shard;
}

std::vector<ParameterBucket> RegionBuckets(const ParameterLayout& parameters) {
  std::vector<ParameterBucket> buckets;
  for (const ParameterRegion& region : parameters.regions) {
    ParameterBucket& bucket = buckets.emplace_back();
    bucket.chunk = region.chunk;
    bucket.group = parameters.PartitionOf(region.start).group;
    bucket.start = region.start;
    bucket.end = region.end;
  }
  return buckets;
}

std::vector<ParameterBucket> UnitBuckets(const ParameterLayout& parameters,
                                         const StageLayers& stage_layers, bool tied_embeddings,
                                         int64_t stages) {
  const std::vector<ChunkUnits> chunks = ChunkUnitsOf(stage_layers);
  std::vector<ParameterBucket> buckets;
  for (const UnitTensor& tensor : TensorsOf(parameters, chunks, tied_embeddings && stages > 1)) {
    if (!buckets.empty() && buckets.back().first_unit == tensor.unit) continue;
    if (!buckets.empty()) buckets.back().end = tensor.offset;
    ParameterBucket& bucket = buckets.emplace_back();
    bucket.start = tensor.offset;
    bucket.first_unit = tensor.unit;
    bucket.last_unit = tensor.unit;
    bucket.group = parameters.PartitionOf(tensor.offset).group;
    bucket.chunk = parameters.RegionOf(tensor.offset).chunk;
  }
  if (!buckets.empty()) buckets.back().end = parameters.padded_elements;
  return buckets;
}

DataParallelPlan DataParallelPlanOf(const ParameterLayout& parameters,
                                    const StageLayers& stage_layers, bool tied_embeddings,
                                    const std::vector<ScheduleStep>& schedule, int64_t stage,
                                    int64_t stages, int64_t data_context_size,
                                    const OverlapOptions& options, const ReducedGroups& groups) {
  DataParallelPlan plan;
  plan.chunks = ChunkUnitsOf(stage_layers);
  const int64_t chunk_count = static_cast<int64_t>(plan.chunks.size());
  const std::vector<UnitTensor> tensors =
      TensorsOf(parameters, plan.chunks, tied_embeddings && stages > 1);
  plan.buckets = BucketsOf(parameters, tensors, stage, data_context_size, options);
  const int64_t bucket_count = static_cast<int64_t>(plan.buckets.size());
  // The buckets reduced and gathered, by chunk, in buffer order.
  std::vector<std::vector<int64_t>> chunk_buckets(chunk_count);
  for (int64_t b = 0; b < bucket_count; ++b) {
    if (groups.Reduces(plan.buckets[b])) chunk_buckets[plan.buckets[b].chunk].push_back(b);
  }

  // The passes in order, and per chunk its first forward and last backward.
  std::vector<PipelinePass> passes;
  std::vector<int64_t> forwards, backwards;  // pass indices
  std::vector<int64_t> first_forward(chunk_count, -1), last_backward(chunk_count, -1);
  for (const ScheduleStep& step : schedule) {
    if (!step.pass.has_value()) continue;
    const int64_t index = static_cast<int64_t>(passes.size());
    passes.push_back(*step.pass);
    if (step.pass->direction == PassDirection::kForward) {
      forwards.push_back(index);
      if (first_forward[step.pass->chunk] < 0) first_forward[step.pass->chunk] = index;
    } else {
      backwards.push_back(index);
      last_backward[step.pass->chunk] = index;
    }
  }
  const bool interleaved = chunk_count > 1;
  StepCollector collect;

  // Gradients.
  std::vector<bool> reduced(chunk_count, false);
  auto reduce_chunk = [&](PlanPoint point, int64_t chunk) {
    for (int64_t b : chunk_buckets[chunk]) collect.Add(point, PlanOperation::kDispatchReduce, b);
    reduced[chunk] = true;
  };
  if (options.overlap_grad_reduce && !interleaved && stage == 0) {
    for (int64_t b : chunk_buckets[0]) {
      collect.Add(At(PlanPointKind::kAfterBackward, last_backward[0], plan.buckets[b].first_unit),
                  PlanOperation::kDispatchReduce, b);
    }
    reduced[0] = true;
  } else if (options.overlap_grad_reduce && interleaved) {
    for (size_t k = 0; k < backwards.size(); ++k) {
      const int64_t j = static_cast<int64_t>(k) - stage;
      if (j < 0) continue;
      const int64_t chunk = passes[backwards[j]].chunk;
      if (backwards[j] == last_backward[chunk]) {
        reduce_chunk(At(PlanPointKind::kAfterPass, backwards[k]), chunk);
      }
    }
  }
  for (int64_t c = 0; c < chunk_count; ++c) {
    if (!reduced[c]) reduce_chunk(At(PlanPointKind::kStepEnd), c);
  }
  collect.Add(At(PlanPointKind::kStepEnd), PlanOperation::kWaitReductions, 0);

  // Parameters.
  if (options.distributed_optimizer && options.overlap_param_gather) {
    auto wait_point = [&](int64_t b) {
      return At(PlanPointKind::kBeforeForward, first_forward[plan.buckets[b].chunk],
                plan.buckets[b].first_unit);
    };
    if (!interleaved) {
      // Forward order: the reverse of buffer order within a region; the expert region's
      // buckets, above every dense one, join the dense ones by the units they start at.
      std::vector<int64_t> forward(chunk_buckets[0].rbegin(), chunk_buckets[0].rend());
      std::stable_sort(forward.begin(), forward.end(), [&](int64_t a, int64_t b) {
        return plan.buckets[a].first_unit < plan.buckets[b].first_unit;
      });
      for (auto it = forward.begin(); it != forward.end(); ++it) {
        if (it == forward.begin()) {
          collect.Add(wait_point(*it), PlanOperation::kDispatchGather, *it);
        }
        collect.Add(wait_point(*it), PlanOperation::kWaitGather, *it);
        if (std::next(it) != forward.end()) {
          collect.Add(wait_point(*it), PlanOperation::kDispatchGather, *std::next(it));
        }
      }
    } else {
      auto gather_chunk = [&](PlanPoint point, int64_t chunk) {
        for (int64_t b : chunk_buckets[chunk])
          collect.Add(point, PlanOperation::kDispatchGather, b);
      };
      gather_chunk(At(PlanPointKind::kStepStart), 0);
      gather_chunk(At(PlanPointKind::kStepStart), 1);
      for (int64_t k = 1; k + 1 < chunk_count; ++k) {
        const int64_t first =
            std::find(forwards.begin(), forwards.end(), first_forward[k]) - forwards.begin();
        gather_chunk(At(PlanPointKind::kBeforePass, forwards[std::max<int64_t>(0, first - stage)]),
                     k + 1);
      }
      for (const std::vector<int64_t>& buckets : chunk_buckets) {
        for (int64_t b : buckets) collect.Add(wait_point(b), PlanOperation::kWaitGather, b);
      }
    }
  }

  // The runner's order of points.
  collect.Emit(At(PlanPointKind::kStepStart), plan.steps);
  for (int64_t p = 0; p < static_cast<int64_t>(passes.size()); ++p) {
    collect.Emit(At(PlanPointKind::kBeforePass, p), plan.steps);
    const ChunkUnits& units = plan.chunks[passes[p].chunk];
    if (passes[p].direction == PassDirection::kForward) {
      for (int64_t u = units.first; u < units.end(); ++u) {
        collect.Emit(At(PlanPointKind::kBeforeForward, p, u), plan.steps);
      }
    } else {
      for (int64_t u = units.end() - 1; u >= units.first; --u) {
        collect.Emit(At(PlanPointKind::kAfterBackward, p, u), plan.steps);
      }
    }
    collect.Emit(At(PlanPointKind::kAfterPass, p), plan.steps);
  }
  collect.Emit(At(PlanPointKind::kStepEnd), plan.steps);
  return plan;
}

}  // namespace paratune
