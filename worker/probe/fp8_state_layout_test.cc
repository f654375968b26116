#include "worker/probe/fp8_state_layout.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "estimator/cluster_spec.h"
#include "estimator/memory_model.h"
#include "estimator/parallel_config.h"
#include "gtest/gtest.h"
#include "worker/probe/fp8_scaling.h"

namespace paratune {
namespace {

struct Stage {
  ShardShapes shapes;
  StageLayers layers;
  StageMemory estimate;
};

// Stage 0 of an fp8 configuration of `preset` on 8 x H100, with fp8 parameters
// (training.fp8_param_gather) or bf16 ones.
Stage Fp8Stage(const char* preset, int64_t tp, int64_t pp, int64_t vp,
               bool fp8_parameters = false) {
  const ModelSpec model = *FindModelPreset(preset);
  TrainingOptions options;
  options.global_batch_size = 16;
  options.seq_len = 4096;
  options.fp8 = true;
  options.fp8_param_gather = fp8_parameters;
  const TrainingSpec training = *TrainingSpec::Create(options);
  const ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 1, tp * pp);
  ParallelDims dims;
  dims.tp = tp;
  dims.pp = pp;
  dims.virtual_pipeline = vp;
  const absl::StatusOr<ParallelConfig> config =
      ParallelConfig::Create(model, training, cluster, PlacementRules(), dims);
  EXPECT_TRUE(config.ok()) << config.status();
  return {ComputeShardShapes(model, training, *config), StageLayersOf(model, *config, 0),
          EstimateMemory(model, training, cluster, *config, MemoryOptions()).first_stage};
}

// [offset, offset + bytes) ranges do not overlap and start at multiples of 256.
void ExpectDisjointAndAligned(std::vector<std::pair<int64_t, int64_t>> ranges, int64_t end) {
  std::sort(ranges.begin(), ranges.end());
  int64_t previous_end = 0;
  for (const auto& [offset, bytes] : ranges) {
    EXPECT_EQ(offset % 256, 0) << offset;
    EXPECT_GE(offset, previous_end);
    previous_end = offset + bytes;
  }
  EXPECT_LE(previous_end, end);
}

TEST(Fp8StateLayoutTest, WeightCopiesAreTheMemoryModelsTerm) {
  for (bool fp8_parameters : {false, true}) {
    for (int64_t tp : {1, 2, 8}) {
      SCOPED_TRACE(testing::Message() << "tp " << tp << ", fp8 parameters " << fp8_parameters);
      const Stage s = Fp8Stage("llama3.1-8b", tp, 2, 1, fp8_parameters);
      const Fp8StateLayout layout =
          LayoutFp8State(s.shapes, s.layers, kExportedFp8Recipe, fp8_parameters);
      EXPECT_EQ(layout.fp8_parameters, fp8_parameters);
      ASSERT_EQ(static_cast<int64_t>(layout.weights.size()), s.layers.TotalLayers());
      std::vector<std::pair<int64_t, int64_t>> ranges;
      int64_t copied = 0;
      for (const auto& copies : layout.weights) {
        for (int l = 0; l < kFp8LinearsPerLayer; ++l) {
          const int64_t elements =
              LinearShapeOf(s.shapes, static_cast<Fp8Linear>(l)).WeightElements();
          // fp8 weights are their own forward copy: only the transpose is kept.
          if (fp8_parameters) {
            EXPECT_EQ(copies[l].weight, -1);
          } else {
            ranges.push_back({copies[l].weight, elements});
            copied += elements;
          }
          ranges.push_back({copies[l].transposed, elements});
          copied += elements;
        }
      }
      ExpectDisjointAndAligned(ranges, layout.weight_bytes);
      // Scale inverses: one fp32 each in a slot a GEMM can read, distinct, after the copies.
      std::set<int64_t> inverses;
      for (const auto& copies : layout.weights) {
        for (const Fp8WeightCopy& copy : copies) {
          EXPECT_EQ(copy.scale_inverse % kFp8ScaleInverseAlignment, 0);
          EXPECT_GE(copy.scale_inverse, ranges.back().first);
          EXPECT_LE(copy.scale_inverse + kFp8ScaleInverseAlignment, layout.weight_bytes);
          inverses.insert(copy.scale_inverse);
        }
      }
      EXPECT_EQ(static_cast<int64_t>(inverses.size()), 4 * s.layers.TotalLayers());
      // One byte per linear weight element, twice (once with fp8 parameters): exactly the
      // model's term (8 kv heads: no replication up to tp 8); the buffer adds alignment and
      // the scale inverses.
      const double estimate = s.estimate.term(MemoryTerm::kFp8WeightCopies);
      EXPECT_DOUBLE_EQ(static_cast<double>(copied), estimate);
      EXPECT_GE(static_cast<double>(layout.weight_bytes), estimate);
      EXPECT_LE(static_cast<double>(layout.weight_bytes),
                estimate + 16 * 256 * layout.weights.size());
    }
  }
}

TEST(Fp8StateLayoutTest, ScalingGroupsFollowTheChunksAndTheHybridFormat) {
  const Stage s = Fp8Stage("llama3.1-8b", 1, 4, 2);  // 4 layers per chunk, 2 chunks
  const Fp8StateLayout layout = LayoutFp8State(s.shapes, s.layers, kExportedFp8Recipe, false);
  EXPECT_EQ(layout.history_length, 1);
  ASSERT_EQ(layout.forward.size(), 2u);
  ASSERT_EQ(layout.backward.size(), 2u);
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (size_t chunk = 0; chunk < 2; ++chunk) {
    const int64_t layers = s.layers.chunk_layers[chunk];
    for (const Fp8ScalingGroup* group : {&layout.forward[chunk], &layout.backward[chunk]}) {
      const bool backward = group == &layout.backward[chunk];
      EXPECT_EQ(group->format, backward ? Fp8Format::kE5M2 : Fp8Format::kE4M3);
      EXPECT_EQ(group->tensors_per_linear, backward ? 2 : 3);
      EXPECT_EQ(group->tensors, layers * 4 * group->tensors_per_linear);
      ranges.push_back({group->scale, 4 * group->tensors});
      ranges.push_back({group->scale_inverse, kFp8ScaleInverseAlignment * group->tensors});
      ranges.push_back({group->amax_history, 4 * group->tensors * layout.history_length});
      // Every (layer, linear, tensor) has its own index in [0, tensors).
      std::set<int64_t> indices;
      for (int64_t layer = 0; layer < layers; ++layer) {
        for (int l = 0; l < kFp8LinearsPerLayer; ++l) {
          for (int t = 0; t < group->tensors_per_linear; ++t) {
            const int64_t index = group->Index(layer, static_cast<Fp8Linear>(l), t);
            EXPECT_GE(index, 0);
            EXPECT_LT(index, group->tensors);
            indices.insert(index);
          }
        }
      }
      EXPECT_EQ(static_cast<int64_t>(indices.size()), group->tensors);
    }
  }
  ExpectDisjointAndAligned(ranges, layout.scaling_bytes);
}

// With Transformer Engine's 1024-entry history the layout is the memory model's term, plus the
// scale inverses' slots (12 bytes a tensor beyond the model's fp32); with the exported
// recipe's single entry it is far below it, and the plan allocates the estimate.
TEST(Fp8StateLayoutTest, ScalingStateIsTheMemoryModelsTermForItsHistory) {
  const Stage s = Fp8Stage("llama3.1-8b", 2, 2, 1);
  const double estimate = s.estimate.term(MemoryTerm::kFp8ScalingState);
  const DelayedScalingRecipe transformer_engine{1024, 0};
  const Fp8StateLayout full = LayoutFp8State(s.shapes, s.layers, transformer_engine, false);
  EXPECT_GE(static_cast<double>(full.scaling_bytes), estimate);
  int64_t tensors = 0;
  for (const auto* groups : {&full.forward, &full.backward}) {
    for (const Fp8ScalingGroup& group : *groups) tensors += group.tensors;
  }
  EXPECT_LE(static_cast<double>(full.scaling_bytes),
            estimate + 6 * 256 + tensors * (kFp8ScaleInverseAlignment - 4));
  const Fp8StateLayout exported = LayoutFp8State(s.shapes, s.layers, kExportedFp8Recipe, false);
  EXPECT_LT(static_cast<double>(exported.scaling_bytes), estimate / 100);
}

TEST(Fp8StateLayoutTest, LinearShapes) {
  const Stage s = Fp8Stage("llama3.1-8b", 2, 1, 1);
  EXPECT_EQ(&LinearShapeOf(s.shapes, Fp8Linear::kQkv), &s.shapes.qkv);
  EXPECT_EQ(&LinearShapeOf(s.shapes, Fp8Linear::kAttentionOutput), &s.shapes.attention_output);
  EXPECT_EQ(&LinearShapeOf(s.shapes, Fp8Linear::kGateUp), &s.shapes.gate_up);
  EXPECT_EQ(&LinearShapeOf(s.shapes, Fp8Linear::kDown), &s.shapes.down);
}

}  // namespace
}  // namespace paratune
