#include "worker/probe/overlap_plan.h"

#include <algorithm>
#include <map>
#include <vector>

#include "estimator/cluster_spec.h"
#include "estimator/model_spec.h"
#include "estimator/parallel_config.h"
#include "estimator/training_spec.h"
#include "gtest/gtest.h"
#include "worker/probe/gradient_buckets.h"
#include "worker/probe/moe_shard_shapes.h"
#include "worker/probe/parameter_layout.h"
#include "worker/probe/pipeline_schedule.h"
#include "worker/probe/shard_shapes.h"

namespace paratune {
namespace {

// One rank's stage of a configuration, with the plan the stage runner would follow.
struct Stage {
  StageLayers layers;
  ParameterLayout parameters;
  std::vector<ScheduleStep> schedule;
  int64_t micro_batches = 0;
  int64_t shard_count = 1;
  OverlapOptions options;
  ReducedGroups groups;
  DataParallelPlan plan;
};

// Stage `stage` of `config`, its partitions sharded over dp x cp and the expert data-parallel
// size with the distributed optimizer.
Stage PlanStage(const ModelSpec& model, const TrainingSpec& training, const ParallelConfig& config,
                int64_t stage, int64_t micro_batches, OverlapOptions options,
                ReducedGroups groups) {
  const ShardShapes shapes = ComputeShardShapes(model, training, config);
  const MoeShardShapes moe =
      model.is_moe() ? *ComputeMoeShardShapes(model, training, config, shapes) : MoeShardShapes();
  const int64_t data_context = config.dp() * config.cp();
  const int64_t expert_data = config.tp() * data_context / (config.etp() * config.ep());
  Stage s;
  s.layers = StageLayersOf(model, config, stage);
  s.shard_count = options.distributed_optimizer ? data_context : 1;
  s.parameters = LayoutParameters(shapes, moe, s.layers, model.tied_embeddings(), s.shard_count,
                                  options.distributed_optimizer ? expert_data : 1,
                                  /*fp8_parameters=*/false);
  s.schedule = PipelineScheduleOf(config.pp(), config.virtual_pipeline(), micro_batches, stage);
  s.micro_batches = micro_batches;
  s.options = options;
  s.groups = groups;
  s.plan = DataParallelPlanOf(s.parameters, s.layers, model.tied_embeddings(), s.schedule, stage,
                              config.pp(), data_context, options, groups);
  return s;
}

Stage StageOf(const char* preset, int64_t dp, int64_t tp, int64_t pp, int64_t v, int64_t stage,
              int64_t micro_batches, OverlapOptions options) {
  const ModelSpec model = *FindModelPreset(preset);
  TrainingOptions training_options;
  training_options.global_batch_size = 64 * dp;
  training_options.seq_len = 2048;
  training_options.distributed_optimizer = options.distributed_optimizer;
  const TrainingSpec training = *TrainingSpec::Create(training_options);
  ParallelDims dims;
  dims.dp = dp;
  dims.tp = tp;
  dims.pp = pp;
  dims.virtual_pipeline = v;
  dims.dp_sharding = training.DefaultDataParallelSharding();
  const int64_t gpus = dp * tp * pp;
  // Whole nodes of 8, or one GPU per node where 8 does not divide the count.
  const bool whole_nodes = gpus % 8 == 0;
  const ClusterSpec cluster = *ClusterSpec::Create(
      *FindGpuPreset("h100-80gb"), whole_nodes ? gpus / 8 : gpus, whole_nodes ? 8 : 1);
  const ParallelConfig config =
      *ParallelConfig::Create(model, training, cluster, PlacementRules(), dims);
  return PlanStage(model, training, config, stage, micro_batches, options, ReducedGroups());
}

// A small Llama 4-like model: 8 layers, every other one with 8 routed experts (top 2) and a
// shared expert.
ModelSpec SmallMoeModel() {
  ModelDimensions dims = {1024, 3584, 8, 8, 2, 32000, false, true, 0, {}};
  dims.moe = {8, 2, 1792, 1, 1792, /*layer_step=*/2, 0, RouterScore::kSoftmax};
  return *ModelSpec::Create("small-moe", dims);
}

// SmallMoeModel at `dp`, `tp`, `pp` of `v` chunks, `ep`, etp 1: edp = tp dp / ep. Each group's
// buckets are reduced where the group has more than one rank, as OptimizerLayoutOf decides.
Stage MoeStageOf(int64_t dp, int64_t tp, int64_t ep, int64_t pp, int64_t v, int64_t stage,
                 int64_t micro_batches, OverlapOptions options) {
  const ModelSpec model = SmallMoeModel();
  TrainingOptions training_options;
  training_options.global_batch_size = 64 * dp;
  training_options.seq_len = 2048;
  training_options.distributed_optimizer = options.distributed_optimizer;
  const TrainingSpec training = *TrainingSpec::Create(training_options);
  ParallelDims dims = MakeParallelDims(dp, tp, pp, /*cp=*/1, /*micro_batch=*/1);
  dims.virtual_pipeline = v;
  dims.ep = ep;
  dims.etp = 1;
  dims.dp_sharding = training.DefaultDataParallelSharding();
  const ClusterSpec cluster =
      *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), dp * pp, /*gpus_per_node=*/tp);
  EXPECT_EQ(CheckRules(model, training, cluster, PlacementRules(), dims), Rejection::kValid);
  ReducedGroups groups;
  groups.data_context = dp > 1;
  groups.expert_data = tp * dp / ep > 1;
  return PlanStage(model, training, ParallelConfig::FromCheckedDims(dims), stage, micro_batches,
                   options, groups);
}

constexpr OverlapOptions kAll = {true, true, true};
constexpr OverlapOptions kReplicated = {false, true, false};

// Every unit's forward and backward take 1 s.
constexpr double kUnitSeconds = 1.0;

// Runs a plan as the stage runner issues it and two CUDA streams run it: the compute stream
// runs the units' passes in the schedule's order; a dispatch makes the communication stream
// wait for the compute stream's work so far; a wait holds the compute stream. Fails the test
// when a bucket is reduced before every micro-batch's backward of each unit it holds, a
// forward uses parameters whose all-gather it has not waited for (with `gathers`), the
// optimizer step does not wait for every reduction, or a step's point is never reached.
class StepSimulation {
 public:
  StepSimulation(const Stage& stage, double collective_seconds)
      : stage_(stage),
        plan_(stage.plan),
        gathers_(stage.options.distributed_optimizer && stage.options.overlap_param_gather),
        collective_seconds_(collective_seconds) {}

  void Run() {
    Reach(At(PlanPointKind::kStepStart));
    int64_t pass = 0;
    for (const ScheduleStep& step : stage_.schedule) {
      if (!step.pass.has_value()) continue;
      Reach(At(PlanPointKind::kBeforePass, pass));
      const ChunkUnits& units = plan_.chunks[step.pass->chunk];
      if (step.pass->direction == PassDirection::kForward) {
        for (int64_t u = units.first; u < units.end(); ++u) {
          Reach(At(PlanPointKind::kBeforeForward, pass, u));
          for (size_t b = 0; b < plan_.buckets.size(); ++b) {
            if (gathers_ && stage_.groups.Reduces(plan_.buckets[b]) && Holds(b, u)) {
              EXPECT_TRUE(waited_[b]) << "unit " << u << " bucket " << b;
            }
          }
          compute_ += kUnitSeconds;
        }
      } else {
        for (int64_t u = units.end() - 1; u >= units.first; --u) {
          compute_ += kUnitSeconds;
          ++backwards_[u];
          Reach(At(PlanPointKind::kAfterBackward, pass, u));
        }
      }
      Reach(At(PlanPointKind::kAfterPass, pass));
      ++pass;
    }
    Reach(At(PlanPointKind::kStepEnd));
    EXPECT_EQ(next_, plan_.steps.size()) << "steps at points the runner never reaches";
    EXPECT_TRUE(waited_reductions_);
    for (size_t b = 0; b < plan_.buckets.size(); ++b) {
      const int issued = stage_.groups.Reduces(plan_.buckets[b]) ? 1 : 0;
      EXPECT_EQ(reduced_[b], issued) << "bucket " << b;
      EXPECT_EQ(gathered_[b], gathers_ ? issued : 0) << "bucket " << b;
    }
  }

  // Communication time not hidden behind compute: how long the step lasts beyond its units.
  double ExposedSeconds() const {
    int64_t units = 0;
    for (const ScheduleStep& step : stage_.schedule) {
      if (step.pass.has_value()) {
        const ChunkUnits& chunk = plan_.chunks[step.pass->chunk];
        units += chunk.end() - chunk.first;
      }
    }
    return compute_ - kUnitSeconds * static_cast<double>(units);
  }

 private:
  static PlanPoint At(PlanPointKind kind, int64_t pass = 0, int64_t unit = 0) {
    return {kind, pass, unit};
  }

  bool Holds(size_t bucket, int64_t unit) const {
    return plan_.buckets[bucket].first_unit <= unit && unit <= plan_.buckets[bucket].last_unit;
  }

  void Reach(PlanPoint point) {
    while (next_ < plan_.steps.size() && plan_.steps[next_].point == point) {
      Issue(plan_.steps[next_++]);
    }
  }

  void Issue(const PlanStep& step) {
    const int64_t b = step.bucket;
    switch (step.operation) {
      case PlanOperation::kDispatchReduce:
        for (int64_t u = plan_.buckets[b].first_unit; u <= plan_.buckets[b].last_unit; ++u) {
          EXPECT_EQ(backwards_[u], stage_.micro_batches) << "bucket " << b << " unit " << u;
        }
        ++reduced_[b];
        communication_ = std::max(communication_, compute_) + collective_seconds_;
        reductions_done_ = communication_;
        break;
      case PlanOperation::kWaitReductions:
        for (size_t c = 0; c < plan_.buckets.size(); ++c) {
          EXPECT_EQ(reduced_[c], stage_.groups.Reduces(plan_.buckets[c]) ? 1 : 0) << c;
        }
        compute_ = std::max(compute_, reductions_done_);
        waited_reductions_ = true;
        break;
      case PlanOperation::kDispatchGather:
        ++gathered_[b];
        communication_ = std::max(communication_, compute_) + collective_seconds_;
        gather_done_[b] = communication_;
        break;
      case PlanOperation::kWaitGather:
        ASSERT_EQ(gathered_[b], 1) << "bucket " << b << " waited for before its dispatch";
        compute_ = std::max(compute_, gather_done_[b]);
        waited_[b] = true;
        break;
    }
  }

  const Stage& stage_;
  const DataParallelPlan& plan_;
  const bool gathers_;
  const double collective_seconds_;
  size_t next_ = 0;
  double compute_ = 0;
  double communication_ = 0;
  double reductions_done_ = 0;
  bool waited_reductions_ = false;
  std::map<int64_t, int64_t> backwards_;
  std::map<int64_t, int> reduced_;
  std::map<int64_t, int> gathered_;
  std::map<int64_t, double> gather_done_;
  std::map<int64_t, bool> waited_;
};

double ExposedSeconds(const Stage& stage, double collective_seconds) {
  StepSimulation simulation(stage, collective_seconds);
  simulation.Run();
  return simulation.ExposedSeconds();
}

// The pass indices of the schedule's backward (or forward) passes, in order.
std::vector<int64_t> PassesOf(const Stage& stage, PassDirection direction) {
  std::vector<int64_t> passes;
  int64_t index = 0;
  for (const ScheduleStep& step : stage.schedule) {
    if (!step.pass.has_value()) continue;
    if (step.pass->direction == direction) passes.push_back(index);
    ++index;
  }
  return passes;
}

void ExpectBucketsTileTheBuffer(const Stage& stage) {
  std::vector<ParameterBucket> sorted = stage.plan.buckets;
  std::sort(sorted.begin(), sorted.end(),
            [](const ParameterBucket& a, const ParameterBucket& b) { return a.start < b.start; });
  int64_t end = 0;
  for (const ParameterBucket& bucket : sorted) {
    EXPECT_EQ(bucket.start, end);
    EXPECT_GT(bucket.end, bucket.start);
    EXPECT_EQ((bucket.end - bucket.start) % stage.parameters.PartitionOf(bucket.start).shard_count,
              0);
    EXPECT_EQ(bucket.group, stage.parameters.PartitionOf(bucket.start).group);
    const ChunkUnits& chunk = stage.plan.chunks[bucket.chunk];
    EXPECT_GE(bucket.first_unit, chunk.first);
    EXPECT_LT(bucket.last_unit, chunk.end());
    end = bucket.end;
  }
  EXPECT_EQ(end, stage.parameters.padded_elements);
  // Within a chunk's partition, buffer order runs from the highest addresses down (Megatron-
  // LM's reversed parameter order); a chunk's expert buckets come first.
  for (size_t b = 1; b < stage.plan.buckets.size(); ++b) {
    const ParameterBucket& before = stage.plan.buckets[b - 1];
    if (stage.plan.buckets[b].chunk == before.chunk &&
        stage.plan.buckets[b].group != before.group) {
      EXPECT_EQ(before.group, RankGroup::kExpertData);
    }
    if (stage.plan.buckets[b].chunk == before.chunk &&
        stage.plan.buckets[b].group == before.group) {
      EXPECT_EQ(stage.plan.buckets[b].end, stage.plan.buckets[b - 1].start);
    }
  }
}

TEST(ChunkUnitsTest, EmbeddingLayersAndLossInForwardOrder) {
  StageLayers layers;
  layers.chunk_layers = {2, 0, 3};
  layers.embedding = true;
  layers.lm_head = true;
  const std::vector<ChunkUnits> chunks = ChunkUnitsOf(layers);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].Embedding(), 0);
  EXPECT_EQ(chunks[0].Layer(1), 2);
  EXPECT_EQ(chunks[0].end(), 3);
  EXPECT_EQ(chunks[1].first, 3);
  EXPECT_EQ(chunks[1].end(), 3);
  EXPECT_EQ(chunks[2].Layer(0), 3);
  EXPECT_EQ(chunks[2].Loss(), 6);
  EXPECT_EQ(chunks[2].end(), 7);
}

TEST(RegionBucketsTest, EachChunkAndWeightDtypeIsOneBucket) {
  // Interleaved, two chunks of one dtype each.
  const Stage s = StageOf("llama3.2-1b", 2, 1, 2, 2, 1, 4, kAll);
  ASSERT_EQ(s.parameters.regions.size(), 2u);
  const std::vector<ParameterBucket> buckets = RegionBuckets(s.parameters);
  ASSERT_EQ(buckets.size(), s.parameters.regions.size());
  int64_t end = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    const ParameterRegion& region = s.parameters.regions[i];
    EXPECT_EQ(buckets[i].chunk, region.chunk);
    EXPECT_EQ(buckets[i].start, end);
    EXPECT_EQ(buckets[i].end, region.end);
    // Every rank's shard of it is a whole number of elements.
    EXPECT_EQ((buckets[i].end - buckets[i].start) % s.shard_count, 0);
    end = buckets[i].end;
  }
  EXPECT_EQ(end, s.parameters.padded_elements);
}

// Each rank's optimizer shards of `buckets`: its parts of the parameter buffer tile every
// bucket with the other ranks' of the bucket's group (the in-place reduce-scatter's and
// all-gather's offsets), `group_size` ranks in the data x context group and
// `expert_group_size` in the expert data-parallel group, and its states tile the optimizer
// buffers, which hold shard_elements elements: each partition's shard from its state_start.
void ExpectShardsTile(const std::vector<ParameterBucket>& buckets, const ParameterLayout& layout,
                      int64_t group_size, int64_t expert_group_size = 1) {
  for (const ParameterBucket& bucket : buckets) {
    const ParameterPartition& partition = layout.PartitionOf(bucket.start);
    ASSERT_EQ(bucket.group, partition.group);
    const int64_t shard_count = partition.shard_count;
    const int64_t ranks =
        partition.group == RankGroup::kExpertData ? expert_group_size : group_size;
    // Where each element of the bucket is stepped, by how many ranks.
    std::map<int64_t, int64_t> covered;
    for (int64_t rank = 0; rank < ranks; ++rank) {
      const OptimizerShard shard = OptimizerShardOf(bucket, partition, rank);
      EXPECT_GE(shard.first, bucket.start) << "rank " << rank;
      EXPECT_LE(shard.first + shard.count, bucket.end) << "rank " << rank;
      EXPECT_EQ(shard.count * shard_count, bucket.end - bucket.start);
      EXPECT_EQ(shard.state,
                partition.state_start + (bucket.start - partition.start) / shard_count);
      ++covered[shard.first];
    }
    if (shard_count == 1) {
      // Every rank of the group steps the whole bucket.
      EXPECT_EQ(covered.size(), 1u);
      EXPECT_EQ(covered[bucket.start], ranks);
    } else {
      EXPECT_EQ(static_cast<int64_t>(covered.size()), ranks);
    }
  }
  std::vector<OptimizerShard> states;
  for (const ParameterBucket& bucket : buckets) {
    states.push_back(OptimizerShardOf(bucket, layout.PartitionOf(bucket.start), 0));
  }
  std::sort(states.begin(), states.end(),
            [](const OptimizerShard& a, const OptimizerShard& b) { return a.state < b.state; });
  int64_t end = 0;
  for (const OptimizerShard& shard : states) {
    EXPECT_EQ(shard.state, end);
    end = shard.state + shard.count;
  }
  EXPECT_EQ(end, layout.shard_elements);
}

TEST(OptimizerShardTest, DistributedShardsTileEveryBucketAndTheOptimizerBuffers) {
  for (int64_t dp : {2, 3}) {
    SCOPED_TRACE(dp);
    const Stage stage = StageOf("llama3.2-1b", dp, 1, 2, 2, 0, 4, kAll);
    ASSERT_EQ(stage.shard_count, dp);
    ExpectShardsTile(stage.plan.buckets, stage.parameters, dp);
    ExpectShardsTile(RegionBuckets(stage.parameters), stage.parameters, dp);
    // Rank r's shard of a bucket is its r-th slice: where the in-place reduce-scatter leaves
    // its sum and the all-gather takes it from.
    const ParameterBucket& bucket = stage.plan.buckets.front();
    const int64_t n = (bucket.end - bucket.start) / dp;
    EXPECT_EQ(OptimizerShardOf(bucket, stage.parameters.dense, dp - 1).first,
              bucket.start + (dp - 1) * n);
  }
}

TEST(OptimizerShardTest, WithoutTheDistributedOptimizerEveryRankStepsWholeBuckets) {
  // dp 4 with one optimizer shard: ranks 1 to 3 of the group must not step past their bucket
  // (a rank-times-bucket offset lands on the next bucket, or beyond the buffers for the last).
  const Stage stage = StageOf("llama3.2-1b", 4, 1, 2, 2, 1, 4, kReplicated);
  ASSERT_EQ(stage.shard_count, 1);
  ExpectShardsTile(stage.plan.buckets, stage.parameters, 4);
  ExpectShardsTile(RegionBuckets(stage.parameters), stage.parameters, 4);
}

TEST(UnitBucketsTest, EachUnitIsOneBucketInForwardOrder) {
  // Stage 0 of two, interleaved: chunk 0's embedding and layers, then chunk 1's layers.
  const Stage s = StageOf("llama3.1-8b", 4, 2, 2, 2, 0, 4, kAll);
  const std::vector<ParameterBucket> buckets =
      UnitBuckets(s.parameters, s.layers, /*tied_embeddings=*/false, 2);
  const std::vector<ChunkUnits> chunks = ChunkUnitsOf(s.layers);
  ASSERT_EQ(static_cast<int64_t>(buckets.size()), chunks.back().end());
  int64_t end = 0;
  for (int64_t u = 0; u < static_cast<int64_t>(buckets.size()); ++u) {
    EXPECT_EQ(buckets[u].first_unit, u);
    EXPECT_EQ(buckets[u].last_unit, u);
    EXPECT_EQ(buckets[u].start, end);
    end = buckets[u].end;
  }
  EXPECT_EQ(end, s.parameters.padded_elements);
  EXPECT_EQ(buckets[chunks[0].Embedding()].start, s.parameters.embedding);
  EXPECT_EQ(buckets[chunks[1].Layer(0)].chunk, 1);
  EXPECT_EQ(buckets[chunks[1].Layer(0)].start,
            s.parameters.layers[s.parameters.first_layer[1]].attention_norm);
  // A layer's bucket holds its tensors: the next layer's starts where it ends.
  EXPECT_EQ(buckets[chunks[0].Layer(0)].end, s.parameters.layers[1].attention_norm);
  ExpectShardsTile(buckets, s.parameters, 4);
}

TEST(UnitBucketsTest, TheLastStageEndsWithItsLossUnit) {
  const Stage s = StageOf("llama3.1-8b", 2, 2, 2, 1, 1, 4, kAll);
  const std::vector<ParameterBucket> buckets =
      UnitBuckets(s.parameters, s.layers, /*tied_embeddings=*/false, 2);
  const std::vector<ChunkUnits> chunks = ChunkUnitsOf(s.layers);
  ASSERT_EQ(static_cast<int64_t>(buckets.size()), chunks.back().end());
  EXPECT_EQ(buckets.back().first_unit, chunks.back().Loss());
  EXPECT_EQ(buckets.back().start, s.parameters.final_norm);
  EXPECT_EQ(buckets.back().end, s.parameters.padded_elements);
  ExpectShardsTile(buckets, s.parameters, 2);
}

TEST(DataParallelPlanTest, StageZeroSplitsItsFirstChunkIntoDefaultSizedBuckets) {
  // Llama-3.1-8B on one stage, dp 8: 40M-element buckets from the LM head down; a layer
  // (218M elements) spans several, and buckets close inside layers.
  const Stage stage = StageOf("llama3.1-8b", 8, 1, 1, 1, 0, 2, kAll);
  ExpectBucketsTileTheBuffer(stage);
  ASSERT_GT(stage.plan.buckets.size(), 32u);
  for (size_t b = 0; b + 1 < stage.plan.buckets.size(); ++b) {
    EXPECT_GE(stage.plan.buckets[b].end - stage.plan.buckets[b].start, DefaultBucketElements(8));
  }
  EXPECT_EQ(stage.plan.buckets.front().last_unit, stage.plan.chunks[0].Loss());
  EXPECT_EQ(stage.plan.buckets.back().first_unit, stage.plan.chunks[0].Embedding());
}

TEST(DataParallelPlanTest, UnevenShardCountsStillShardEveryBucketEvenly) {
  for (int64_t dp : {3, 6}) {
    const Stage stage = StageOf("llama3.2-1b", dp, 1, 1, 1, 0, 1, kAll);
    SCOPED_TRACE(dp);
    ExpectBucketsTileTheBuffer(stage);
  }
}

TEST(DataParallelPlanTest, LaterStagesAndChunksKeepOneBucket) {
  // Tied embeddings (Llama-3.2-1B) on two stages: the LM head's copy is alone in its bucket
  // with the distributed optimizer.
  const Stage last = StageOf("llama3.2-1b", 2, 1, 2, 1, 1, 4, kAll);
  ExpectBucketsTileTheBuffer(last);
  ASSERT_EQ(last.plan.buckets.size(), 2u);
  EXPECT_EQ(last.plan.buckets[0].start, last.parameters.lm_head);
  const Stage replicated = StageOf("llama3.2-1b", 2, 1, 2, 1, 1, 4, kReplicated);
  EXPECT_EQ(replicated.plan.buckets.size(), 1u);
  // Interleaved stage 0: chunk 0 bucketed, chunk 1 whole.
  const Stage first = StageOf("llama3.1-8b", 2, 1, 2, 2, 0, 4, kReplicated);
  ExpectBucketsTileTheBuffer(first);
  int64_t chunk_one = 0;
  for (const ParameterBucket& bucket : first.plan.buckets) chunk_one += bucket.chunk == 1;
  EXPECT_EQ(chunk_one, 1);
  EXPECT_GT(first.plan.buckets.size(), 2u);
}

TEST(DataParallelPlanTest, StageZeroReducesEachBucketAfterItsFirstUnitsLastBackward) {
  for (int64_t pp : {1, 2}) {
    const Stage stage = StageOf("llama3.2-1b", 2, 1, pp, 1, 0, 4, kReplicated);
    const int64_t last_backward = PassesOf(stage, PassDirection::kBackward).back();
    int64_t reductions = 0;
    for (const PlanStep& step : stage.plan.steps) {
      if (step.operation != PlanOperation::kDispatchReduce) continue;
      ++reductions;
      EXPECT_EQ(step.point.kind, PlanPointKind::kAfterBackward);
      EXPECT_EQ(step.point.pass, last_backward);
      EXPECT_EQ(step.point.unit, stage.plan.buckets[step.bucket].first_unit);
    }
    EXPECT_EQ(reductions, static_cast<int64_t>(stage.plan.buckets.size()));
    EXPECT_EQ(stage.plan.steps.back().operation, PlanOperation::kWaitReductions);
    EXPECT_EQ(stage.plan.steps.back().point.kind, PlanPointKind::kStepEnd);
  }
}

TEST(DataParallelPlanTest, LaterStagesReduceAfterTheSchedule) {
  const Stage stage = StageOf("llama3.2-1b", 2, 1, 2, 1, 1, 4, kReplicated);
  for (const PlanStep& step : stage.plan.steps) {
    EXPECT_EQ(step.point.kind, PlanPointKind::kStepEnd);
  }
}

TEST(DataParallelPlanTest, InterleavedChunksReduceStagePassesAfterTheirLastBackward) {
  // Stage 1 of 2, 2 chunks: a chunk's reduction starts one backward pass after the chunk's last
  // backward (backward_step_helper_postprocess), or after the schedule when none follows.
  const int64_t stage_index = 1;
  const Stage stage = StageOf("llama3.2-1b", 2, 1, 2, 2, stage_index, 4, kReplicated);
  const std::vector<int64_t> backwards = PassesOf(stage, PassDirection::kBackward);
  std::vector<int64_t> passes;
  for (const ScheduleStep& step : stage.schedule) {
    if (step.pass.has_value()) passes.push_back(step.pass->chunk);
  }
  for (const PlanStep& step : stage.plan.steps) {
    if (step.operation != PlanOperation::kDispatchReduce) continue;
    const int64_t chunk = stage.plan.buckets[step.bucket].chunk;
    int64_t last = -1;
    for (size_t k = 0; k < backwards.size(); ++k) {
      if (passes[backwards[k]] == chunk) last = static_cast<int64_t>(k);
    }
    const int64_t launch = last + stage_index;
    if (launch < static_cast<int64_t>(backwards.size())) {
      EXPECT_EQ(step.point.kind, PlanPointKind::kAfterPass) << chunk;
      EXPECT_EQ(step.point.pass, backwards[launch]) << chunk;
    } else {
      EXPECT_EQ(step.point.kind, PlanPointKind::kStepEnd) << chunk;
    }
  }
}

TEST(DataParallelPlanTest, InterleavedGathersTwoChunksAtTheStartAndTheNextAhead) {
  // Stage 1 of 2 with 4 chunks: chunks 0 and 1 at the start; chunk k + 1 before the forward
  // pass one before chunk k's first (forward_step_helper_preprocess).
  const int64_t stage_index = 1;
  const Stage stage = StageOf("llama3.2-1b", 2, 1, 2, 4, stage_index, 4, kAll);
  const std::vector<int64_t> forwards = PassesOf(stage, PassDirection::kForward);
  std::vector<int64_t> first_forward(4, -1);
  for (size_t k = 0; k < forwards.size(); ++k) {
    int64_t index = 0;
    for (const ScheduleStep& step : stage.schedule) {
      if (!step.pass.has_value()) continue;
      if (index++ == forwards[k] && first_forward[step.pass->chunk] < 0) {
        first_forward[step.pass->chunk] = static_cast<int64_t>(k);
      }
    }
  }
  for (const PlanStep& step : stage.plan.steps) {
    if (step.operation != PlanOperation::kDispatchGather) continue;
    const int64_t chunk = stage.plan.buckets[step.bucket].chunk;
    if (chunk < 2) {
      EXPECT_EQ(step.point.kind, PlanPointKind::kStepStart);
    } else {
      EXPECT_EQ(step.point.kind, PlanPointKind::kBeforePass);
      EXPECT_EQ(step.point.pass, forwards[first_forward[chunk - 1] - stage_index]);
    }
  }
  ExposedSeconds(stage, 0.5);
}

TEST(DataParallelPlanTest, OnlyTheLastReductionAndTheFirstGatherAreExposedOnOneStage) {
  // Llama-3.1-8B, one stage, one micro-batch: buckets complete about a layer's backward apart
  // (a layer holds several), so with fast collectives the reductions but the last, and the
  // gathers but the first, hide behind compute.
  const Stage reduce_only = StageOf("llama3.1-8b", 8, 1, 1, 1, 0, 1, {true, true, false});
  const double collective = 0.125;
  const int64_t buckets = static_cast<int64_t>(reduce_only.plan.buckets.size());
  // Several buckets can complete at one unit's backward; they queue.
  const double reduce_exposed = ExposedSeconds(reduce_only, collective);
  EXPECT_GE(reduce_exposed, collective);
  EXPECT_LT(reduce_exposed, 0.5 * collective * static_cast<double>(buckets));
  const Stage both = StageOf("llama3.1-8b", 8, 1, 1, 1, 0, 1, kAll);
  const double both_exposed = ExposedSeconds(both, collective);
  EXPECT_GE(both_exposed, reduce_exposed + collective);
  EXPECT_LT(both_exposed, collective * static_cast<double>(buckets));
}

// Every combination of the switches with at least one overlap (overlap_param_gather only with
// the distributed optimizer, as Megatron-LM requires).
std::vector<OverlapOptions> OverlappedSwitches() {
  std::vector<OverlapOptions> switches;
  for (bool distributed : {false, true}) {
    for (bool grad : {false, true}) {
      for (bool param : {false, true}) {
        if ((!grad && !param) || (param && !distributed)) continue;
        switches.push_back({distributed, grad, param});
      }
    }
  }
  return switches;
}

TEST(DataParallelPlanTest, EveryScheduleKeepsDependencies) {
  for (int64_t pp : {1, 2, 4}) {
    for (int64_t v : {1, 2}) {
      if (v > 1 && pp == 1) continue;
      for (int64_t stage = 0; stage < pp; ++stage) {
        for (int64_t m : {pp, 2 * pp}) {
          for (const OverlapOptions& options : OverlappedSwitches()) {
            for (int64_t dp : {2, 3}) {
              SCOPED_TRACE(testing::Message()
                           << "pp " << pp << " v " << v << " stage " << stage << " m " << m
                           << " switches " << options.distributed_optimizer
                           << options.overlap_grad_reduce << options.overlap_param_gather << " dp "
                           << dp);
              const Stage s = StageOf("llama3.2-1b", dp, 1, pp, v, stage, m, options);
              ExpectBucketsTileTheBuffer(s);
              ExposedSeconds(s, 0.25);
            }
          }
        }
      }
    }
  }
}

TEST(OverlapPlanTest, Fp8ParameterBucketsStayInOneWeightDtype) {
  // With fp8 parameters Megatron-LM buckets each dtype's buffer on its own: no bucket mixes
  // 1-byte and 2-byte weights, so every rank's shard of a bucket is the same bytes, and each
  // all-gather is dispatched before the forward pass waits for it.
  const ModelSpec model = *FindModelPreset("llama3.1-8b");
  TrainingOptions training_options;
  training_options.global_batch_size = 256;
  training_options.seq_len = 2048;
  training_options.distributed_optimizer = true;
  training_options.fp8 = true;
  training_options.fp8_param_gather = true;
  const TrainingSpec training = *TrainingSpec::Create(training_options);
  ParallelDims dims;
  dims.dp = 4;
  dims.tp = 2;
  const ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 1, 8);
  const ParallelConfig config =
      *ParallelConfig::Create(model, training, cluster, PlacementRules(), dims);
  const StageLayers layers = StageLayersOf(model, config, 0);
  const ParameterLayout parameters =
      LayoutParameters(ComputeShardShapes(model, training, config), layers, model.tied_embeddings(),
                       dims.dp, /*fp8_parameters=*/true);
  const DataParallelPlan plan =
      DataParallelPlanOf(parameters, layers, model.tied_embeddings(),
                         PipelineScheduleOf(1, 1, 8, 0), 0, 1, dims.dp, kAll, ReducedGroups());
  int64_t fp8_buckets = 0;
  for (const ParameterBucket& bucket : plan.buckets) {
    const ParameterRegion& region = parameters.RegionOf(bucket.start);
    EXPECT_LE(bucket.end, region.end) << bucket.start;
    EXPECT_EQ((bucket.end - bucket.start) % dims.dp, 0);
    if (region.fp8) ++fp8_buckets;
  }
  // Without overlap each dtype's region is one bucket.
  const std::vector<ParameterBucket> whole = RegionBuckets(parameters);
  ASSERT_EQ(whole.size(), 2u);
  EXPECT_FALSE(parameters.RegionOf(whole[0].start).fp8);
  EXPECT_TRUE(parameters.RegionOf(whole[1].start).fp8);
  EXPECT_EQ(whole[1].end, parameters.padded_elements);
  // The linears split by Megatron-LM's bucket size; the bf16 weights keep one bucket.
  EXPECT_GT(fp8_buckets, 1);
  EXPECT_EQ(static_cast<int64_t>(plan.buckets.size()), fp8_buckets + 1);
  std::vector<bool> dispatched(plan.buckets.size(), false);
  for (const PlanStep& step : plan.steps) {
    if (step.operation == PlanOperation::kDispatchGather) dispatched[step.bucket] = true;
    if (step.operation == PlanOperation::kWaitGather) {
      EXPECT_TRUE(dispatched[step.bucket]) << step.bucket;
    }
  }
}

// The step's start and end carry pass 0 whatever the runner's pass count, as the plan's steps
// at them do; other points keep their pass.
TEST(DataParallelPlanTest, ExpertBucketsAreReducedOverTheExpertDataGroup) {
  // dp 4, tp 2, ep 4: the dense buckets shard over dp = 4, the experts' over edp = 2.
  const Stage s = MoeStageOf(4, 2, 4, 1, 1, 0, 2, kAll);
  ExpectBucketsTileTheBuffer(s);
  int64_t expert_buckets = 0;
  for (const ParameterBucket& bucket : s.plan.buckets) {
    if (bucket.group != RankGroup::kExpertData) continue;
    ++expert_buckets;
    EXPECT_TRUE(s.parameters.experts.Contains(bucket.start));
    EXPECT_LE(bucket.end, s.parameters.experts.end);
  }
  // 4 MoE layers of 2 local experts, 11M elements each: more than one 40M-element bucket.
  EXPECT_GT(expert_buckets, 1);
  ExpectShardsTile(s.plan.buckets, s.parameters, 4, 2);
  ExpectShardsTile(RegionBuckets(s.parameters), s.parameters, 4, 2);
  int64_t reductions = 0;
  for (const PlanStep& step : s.plan.steps) {
    if (step.operation == PlanOperation::kDispatchReduce) ++reductions;
  }
  EXPECT_EQ(reductions, static_cast<int64_t>(s.plan.buckets.size()));
}

TEST(DataParallelPlanTest, AGroupOfOneRankReducesNothing) {
  // dp 2, tp 2, ep 4: edp 1, so only the dense buckets are reduced; dp 1, tp 4, ep 2: edp 2,
  // so only the experts'.
  for (const Stage& s :
       {MoeStageOf(2, 2, 4, 1, 1, 0, 2, kAll), MoeStageOf(1, 4, 2, 1, 1, 0, 2, kAll)}) {
    for (const PlanStep& step : s.plan.steps) {
      if (step.operation == PlanOperation::kWaitReductions) continue;
      EXPECT_TRUE(s.groups.Reduces(s.plan.buckets[step.bucket])) << "bucket " << step.bucket;
    }
    ExposedSeconds(s, 0.25);
  }
}

TEST(DataParallelPlanTest, EveryMoeScheduleKeepsDependencies) {
  const struct { int64_t dp, tp, ep; } grids[] = {{4, 2, 4}, {2, 2, 4}, {1, 4, 2}};
  for (const auto& grid : grids) {
    for (int64_t pp : {1, 2}) {
      for (int64_t v : {1, 2}) {
        if (v > 1 && pp == 1) continue;
        for (int64_t stage = 0; stage < pp; ++stage) {
          for (const OverlapOptions& options : OverlappedSwitches()) {
            SCOPED_TRACE(testing::Message()
                         << "dp " << grid.dp << " tp " << grid.tp << " ep " << grid.ep << " pp "
                         << pp << " v " << v << " stage " << stage << " switches "
                         << options.distributed_optimizer << options.overlap_grad_reduce
                         << options.overlap_param_gather);
            const Stage s = MoeStageOf(grid.dp, grid.tp, grid.ep, pp, v, stage, 2 * pp, options);
            ExpectBucketsTileTheBuffer(s);
            ExposedSeconds(s, 0.25);
          }
        }
      }
    }
  }
}

TEST(PlanPointOfTest, StepStartAndEndBelongToNoPass) {
  EXPECT_EQ(PlanPointOf(PlanPointKind::kStepEnd, 128, 0),
            (PlanPoint{PlanPointKind::kStepEnd, 0, 0}));
  EXPECT_EQ(PlanPointOf(PlanPointKind::kStepStart, 3, 0),
            (PlanPoint{PlanPointKind::kStepStart, 0, 0}));
  EXPECT_EQ(PlanPointOf(PlanPointKind::kBeforeForward, 5, 2),
            (PlanPoint{PlanPointKind::kBeforeForward, 5, 2}));
}

}  // namespace
}  // namespace paratune
