#include "worker/probe/footprint_plan.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "worker/probe/attention_graph.h"
#include "worker/probe/weight_gather_plan.h"

namespace paratune {
namespace {

struct Configuration {
  ModelSpec model;
  TrainingSpec training;
  ClusterSpec cluster;
  ParallelConfig config;
};

Configuration Make(const char* preset, int64_t gbs, int64_t seq, int64_t dp, int64_t tp, int64_t pp,
                   int64_t cp, int64_t vp = 1, Recompute recompute = Recompute::kNone,
                   bool fp8 = false, bool fp8_parameters = false,
                   DataParallelSharding sharding = DataParallelSharding::kOptimizer) {
  ModelSpec model = *FindModelPreset(preset);
  TrainingOptions options;
  options.global_batch_size = gbs;
  options.seq_len = seq;
  options.fp8 = fp8;
  options.fp8_param_gather = fp8_parameters;
  TrainingSpec training = *TrainingSpec::Create(options);
  ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 1, dp * tp * pp * cp);
  ParallelDims dims;
  dims.dp = dp;
  dims.tp = tp;
  dims.pp = pp;
  dims.cp = cp;
  dims.virtual_pipeline = vp;
  dims.recompute = recompute;
  dims.dp_sharding = sharding;
  absl::StatusOr<ParallelConfig> config =
      ParallelConfig::Create(model, training, cluster, PlacementRules(), dims);
  EXPECT_TRUE(config.ok()) << config.status();
  return {model, training, cluster, *config};
}

FootprintPlan Plan(const Configuration& c, int64_t stage) {
  return FootprintPlan::Create(c.model, c.training, c.cluster, c.config, MemoryOptions(), stage);
}

const TermAllocation& Term(const FootprintPlan& plan, const std::string& name) {
  auto it = std::find_if(plan.terms().begin(), plan.terms().end(),
                         [&](const TermAllocation& t) { return t.name == name; });
  EXPECT_NE(it, plan.terms().end()) << name;
  return *it;
}

// The plan's buffers in each of the terms `names` need their estimate, within 0.1 %.
void ExpectTermsAtTheirEstimates(const FootprintPlan& plan, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    const TermAllocation& term = Term(plan, name);
    EXPECT_NEAR(static_cast<double>(term.needed_bytes), static_cast<double>(term.estimated_bytes),
                1e-3 * term.estimated_bytes)
        << name;
  }
}

// Every term is allocated at least as estimated (bar the runtime's and NCCL's), its buffers
// fit inside it without overlapping, and the estimates add up to the stage's estimate.
void ExpectConsistent(const FootprintPlan& plan) {
  double estimated = 0;
  for (const TermAllocation& term : plan.terms()) {
    estimated += static_cast<double>(term.estimated_bytes);
    if (term.name == "cuda_context" || term.name == "nccl_buffers") {
      EXPECT_EQ(term.allocated_bytes, 0) << term.name;
    } else {
      EXPECT_GE(term.allocated_bytes, term.estimated_bytes) << term.name;
      EXPECT_GE(term.allocated_bytes, term.needed_bytes) << term.name;
    }
  }
  EXPECT_NEAR(estimated, plan.estimated_bytes(), 1e-6 * plan.estimated_bytes() + 16);
  for (int b = 0; b < static_cast<int>(ProbeBuffer::kCount); ++b) {
    const BufferPlacement& placement = plan.placement(static_cast<ProbeBuffer>(b));
    ASSERT_GE(placement.term, 0) << "buffer " << b << " is not placed";
    EXPECT_EQ(placement.offset % 256, 0);
    EXPECT_LE(placement.offset + placement.bytes, plan.terms()[placement.term].needed_bytes)
        << "buffer " << b;
    for (int other = b + 1; other < static_cast<int>(ProbeBuffer::kCount); ++other) {
      const BufferPlacement& o = plan.placement(static_cast<ProbeBuffer>(other));
      if (o.term != placement.term || o.bytes == 0 || placement.bytes == 0) continue;
      EXPECT_TRUE(o.offset >= placement.offset + placement.bytes ||
                  placement.offset >= o.offset + o.bytes)
          << "buffers " << b << " and " << other << " overlap";
    }
  }
}

TEST(FootprintPlanTest, EveryStageAllocatesAtLeastItsEstimate) {
  const Configuration c = Make("llama3.1-8b", 16, 4096, 2, 2, 4, 1);
  for (int64_t stage = 0; stage < 4; ++stage) {
    SCOPED_TRACE(absl::StrCat("stage ", stage));
    const FootprintPlan plan = Plan(c, stage);
    ExpectConsistent(plan);
    // 1F1B holds p - s micro-batches on stage s (m = 8 >= p).
    EXPECT_EQ(plan.activation_slots(), 4 - stage);
    EXPECT_EQ(plan.loss_slots(), stage == 3 ? 1 : 0);
    // What the probe keeps fits in the model's activation term, and in its output term but
    // for the final norm's 1/RMS per row.
    EXPECT_EQ(Term(plan, "activations").allocated_bytes, Term(plan, "activations").estimated_bytes);
    const TermAllocation& output = Term(plan, "output_activations");
    EXPECT_LE(output.needed_bytes, output.estimated_bytes + 1e-4 * output.estimated_bytes);
  }
}

TEST(FootprintPlanTest, ModelStatesFollowTheDistributedOptimizerShard) {
  const Configuration c = Make("llama3.1-8b", 32, 4096, 4, 2, 1, 2);
  const FootprintPlan plan = Plan(c, 0);
  ExpectConsistent(plan);
  EXPECT_EQ(plan.parameters().padded_elements, plan.parameters().shard_elements * 8);
  ExpectTermsAtTheirEstimates(plan, {"weights", "gradients", "optimizer_states"});
}

// Sharded gradients (ZeRO-2): the rank keeps its shard of the gradients, ShardedModelStates'
// 4 / (d c) bytes per parameter, and the unsharded gradients of the largest unit staged
// (UnitBuckets: here the embedding's vocabulary shard, V / t h) in the gradient_buckets term.
TEST(FootprintPlanTest, ShardedGradientsKeepTheirShardAndOneUnitsWhole) {
  const Configuration c = Make("llama3.1-8b", 32, 4096, 4, 2, 2, 2, 1, Recompute::kNone, false,
                               false, DataParallelSharding::kGradients);
  const FootprintPlan plan = Plan(c, 0);
  ExpectConsistent(plan);
  ASSERT_TRUE(plan.sharded_gradients());
  EXPECT_EQ(plan.placement(ProbeBuffer::kGradients).bytes, plan.parameters().shard_elements * 4);
  ExpectTermsAtTheirEstimates(plan, {"weights", "gradients", "optimizer_states"});
  const int64_t embedding = (128256 / 2) * 4096;
  EXPECT_EQ(plan.placement(ProbeBuffer::kGradientStaging).bytes, embedding * 4);
  EXPECT_EQ(plan.terms()[plan.placement(ProbeBuffer::kGradientStaging).term].name,
            "gradient_buckets");
  // Unsharded, no staging.
  const FootprintPlan optimizer = Plan(Make("llama3.1-8b", 32, 4096, 4, 2, 2, 2), 0);
  EXPECT_FALSE(optimizer.sharded_gradients());
  EXPECT_EQ(optimizer.placement(ProbeBuffer::kGradientStaging).bytes, 0);
}

// Sharded weights (ZeRO-3) as well: the rank keeps its bf16 shard of the weights,
// ShardedModelStates' 2 / (d c) bytes per parameter, and two gathered units of the largest
// unit's size, the gathered_weights term GatheredWeightBytes estimates (stage 0's largest
// unit: the embedding, as the estimator's is).
TEST(FootprintPlanTest, ShardedWeightsKeepTheirShardAndTwoGatheredUnits) {
  const Configuration c = Make("llama3.1-8b", 32, 4096, 4, 2, 2, 2, 1, Recompute::kNone, false,
                               false, DataParallelSharding::kFull);
  const FootprintPlan plan = Plan(c, 0);
  ExpectConsistent(plan);
  ASSERT_TRUE(plan.sharded_weights());
  EXPECT_EQ(plan.placement(ProbeBuffer::kWeights).bytes, plan.parameters().shard_elements * 2);
  const int64_t embedding = (128256 / 2) * 4096;
  EXPECT_EQ(plan.gathered_weight_slot_bytes(), embedding * 2);
  EXPECT_EQ(plan.placement(ProbeBuffer::kGatheredWeights).bytes,
            kGatheredWeightSlots * embedding * 2);
  ExpectTermsAtTheirEstimates(plan,
                              {"weights", "gradients", "optimizer_states", "gathered_weights"});
  // Sharded gradients alone gather nothing into slots.
  const FootprintPlan gradients =
      Plan(Make("llama3.1-8b", 32, 4096, 4, 2, 2, 2, 1, Recompute::kNone, false, false,
                DataParallelSharding::kGradients),
           0);
  EXPECT_FALSE(gradients.sharded_weights());
  EXPECT_EQ(gradients.placement(ProbeBuffer::kGatheredWeights).bytes, 0);
}

TEST(FootprintPlanTest, FullRecomputationKeepsLayerInputsAndOneLayerWorkspace) {
  const Configuration c = Make("llama3.1-8b", 8, 8192, 1, 2, 2, 1, 1, Recompute::kFull);
  const FootprintPlan plan = Plan(c, 0);
  ExpectConsistent(plan);
  EXPECT_TRUE(plan.full_recompute());
  EXPECT_EQ(plan.LayerSlotOffset(1), LayerInputBytes(plan.shapes()));
  EXPECT_EQ(plan.placement(ProbeBuffer::kRecomputeWorkspace).bytes, plan.layer_activations().bytes);
  EXPECT_EQ(Term(plan, "activations").allocated_bytes, Term(plan, "activations").estimated_bytes);
}

// With as many micro-batches as stages Megatron-LM's interleaved schedule runs every forward
// first, so the last stage holds all m v chunks; the memory model counts
// 2 (p - s - 1) + (v - 1) p + 1 there. The probe allocates what the schedule holds.
TEST(FootprintPlanTest, AllWarmupInterleavingHoldsMoreThanTheModelCounts) {
  const Configuration c = Make("llama3.1-8b", 4, 2048, 1, 1, 4, 1, 2);
  const FootprintPlan plan = Plan(c, 3);
  ExpectConsistent(plan);
  EXPECT_EQ(plan.activation_slots(), 8);
  EXPECT_EQ(plan.loss_slots(), 4);
  EXPECT_GT(Term(plan, "activations").allocated_bytes, Term(plan, "activations").estimated_bytes);
}

TEST(FootprintPlanTest, AttentionChunksFitTheWorkspaceAndTheRanksSegments) {
  for (const Configuration& c :
       {Make("llama3.1-8b", 8, 8192, 1, 1, 1, 1), Make("llama3.1-8b", 8, 131072, 1, 2, 1, 4),
        Make("llama3.2-1b", 8, 1024, 1, 1, 1, 2)}) {
    const FootprintPlan plan = Plan(c, 0);
    const ShardShapes& x = plan.shapes();
    const int64_t chunk = plan.attention_query_chunk();
    const int64_t segment = x.context_parallel > 1 ? x.sequence_per_rank / 2 : x.sequence_per_rank;
    EXPECT_GE(chunk, 1);
    EXPECT_EQ(chunk & (chunk - 1), 0) << chunk;
    EXPECT_LE(chunk, segment);
    const int64_t chunk_scores = chunk * x.query_heads * ((x.sequence + 7) / 8 * 8);
    EXPECT_LE(chunk_scores * (4 + 2), kAttentionWorkspaceBytes);
    EXPECT_EQ(plan.placement(ProbeBuffer::kAttentionProbabilities).bytes, chunk_scores * 2);
    EXPECT_GE(plan.placement(ProbeBuffer::kAttentionScores).bytes, chunk_scores * 4);
  }
}

// The scores buffer is cuDNN's attention workspace too: without context parallelism it holds
// the fused backward's bf16 key and value gradients, its graph's workspace tensors and
// AttentionPlanWorkspaceBytes for cuDNN; Llama-3.1-8B at s 32768 needs more than a chunk's
// scores. With context parallelism over the p2p ring the same for the ring's diagonal
// product (every graph of the ring needs at most its workspace); with all_gather the
// position-ordered keys and values and a query half's backward workspace.
TEST(FootprintPlanTest, AttentionScoresHoldTheFusedBackwardsWorkspace) {
  for (const Configuration& c :
       {Make("llama3.1-8b", 8, 8192, 1, 1, 1, 1), Make("llama3.1-8b", 8, 32768, 1, 1, 1, 1),
        Make("llama3.2-1b", 8, 1024, 1, 1, 1, 1)}) {
    const FootprintPlan plan = Plan(c, 0);
    ExpectConsistent(plan);
    const ShardShapes& x = plan.shapes();
    const absl::StatusOr<AttentionGraph> backward = CausalAttentionBackwardGraph(x);
    ASSERT_TRUE(backward.ok()) << backward.status();
    const int64_t fused = FusedBackwardGradientBytes(x) + backward->workspace_tensor_bytes +
                          AttentionPlanWorkspaceBytes(x);
    const int64_t scores = plan.placement(ProbeBuffer::kAttentionScores).bytes;
    EXPECT_GE(scores, fused) << x.sequence;
    EXPECT_EQ(scores, AttentionScoresBytes(x, CpCommType::kP2p));
    if (x.sequence == 32768) {
      EXPECT_EQ(scores, fused);
    }
  }
  const Configuration p2p = Make("llama3.1-8b", 8, 131072, 1, 2, 1, 4);
  ASSERT_EQ(p2p.training.cp_comm_type(), CpCommType::kP2p);
  const FootprintPlan ring = Plan(p2p, 0);
  ExpectConsistent(ring);
  const ShardShapes& x = ring.shapes();
  const int64_t n = x.sequence_per_rank;
  for (const RingProduct& product :
       {RingProduct{0, n, 0, n, RingMask::kCausal}, RingProduct{0, n, 0, n / 2, RingMask::kNone},
        RingProduct{n / 2, n / 2, 0, n, RingMask::kNone}}) {
    const absl::StatusOr<AttentionGraph> backward = AttentionBackwardGraph(x, product);
    ASSERT_TRUE(backward.ok()) << backward.status();
    EXPECT_GE(ring.placement(ProbeBuffer::kAttentionScores).bytes,
              FusedBackwardGradientBytes(x) + backward->workspace_tensor_bytes +
                  AttentionPlanWorkspaceBytes(x))
        << product.first_query << " " << product.keys;
  }
  TrainingOptions options = p2p.training.options();
  options.cp_comm_type = CpCommType::kAllGather;
  Configuration all_gather = p2p;
  all_gather.training = *TrainingSpec::Create(options);
  const FootprintPlan gathered = Plan(all_gather, 0);
  ExpectConsistent(gathered);
  for (int64_t rank : {int64_t{0}, int64_t{1}}) {
    const absl::StatusOr<std::vector<RingProduct>> halves = AllGatherProducts(x, rank);
    ASSERT_TRUE(halves.ok()) << halves.status();
    for (const RingProduct& half : *halves) {
      const absl::StatusOr<AttentionGraph> backward = AttentionBackwardGraph(x, half);
      ASSERT_TRUE(backward.ok()) << backward.status();
      EXPECT_GE(gathered.placement(ProbeBuffer::kAttentionScores).bytes,
                AllGatherKeyValueBytes(x) + backward->workspace_tensor_bytes +
                    AttentionPlanWorkspaceBytes(x))
          << rank << " " << half.first_query;
    }
  }
}

// What cuDNN's first-ranked plan of Llama-3.1-8B's fused backward at s 8192, one sequence per
// micro-batch, asked for of its own on an H200 (docs/probe.md, "First run"), fits the room.
TEST(FootprintPlanTest, AttentionPlanRoomHoldsWhatCudnnAskedFor) {
  const FootprintPlan plan = Plan(Make("llama3.1-8b", 8, 8192, 1, 1, 1, 1), 0);
  const ShardShapes& x = plan.shapes();
  ASSERT_EQ(x.micro_batch, 1);
  ASSERT_EQ(x.query_heads, 32);
  EXPECT_GE(AttentionPlanWorkspaceBytes(x), int64_t{134217984});
}

// fp8 training allocates Transformer Engine's fp8 state: the weight copies at the model's
// term plus alignment and the scale inverses (reported as needed above the estimate), the
// scaling state at the model's estimate for a 1024-entry history of which the probe's
// one-entry history uses a sliver; the kept fp8 inputs still fit the activation term.
TEST(FootprintPlanTest, Fp8AllocatesTheFp8Terms) {
  for (const Configuration& c :
       {Make("llama3.1-8b", 16, 4096, 2, 2, 4, 1, 1, Recompute::kNone, true),
        Make("llama3.1-8b", 16, 4096, 1, 4, 2, 1, 1, Recompute::kFull, true),
        Make("llama3.1-70b", 32, 4096, 1, 8, 4, 1, 2, Recompute::kNone, true)}) {
    for (int64_t stage : {int64_t{0}, c.config.pp() - 1}) {
      SCOPED_TRACE(absl::StrCat(c.config.tp(), " ", stage));
      const FootprintPlan plan = Plan(c, stage);
      ExpectConsistent(plan);
      ASSERT_TRUE(plan.fp8());
      EXPECT_EQ(plan.fp8_state().history_length, kExportedFp8Recipe.amax_history_length);
      const TermAllocation& copies = Term(plan, "fp8_weight_copies");
      EXPECT_GT(copies.estimated_bytes, 0);
      EXPECT_EQ(plan.placement(ProbeBuffer::kFp8WeightCopies).bytes, plan.fp8_state().weight_bytes);
      EXPECT_GE(copies.needed_bytes, copies.estimated_bytes);
      EXPECT_LE(copies.needed_bytes, copies.estimated_bytes + 2 * 256 * 4 * 20);
      const TermAllocation& scaling = Term(plan, "fp8_scaling_state");
      EXPECT_EQ(scaling.allocated_bytes, scaling.estimated_bytes);
      EXPECT_LT(scaling.needed_bytes, scaling.estimated_bytes / 100);
      EXPECT_GT(scaling.needed_bytes, 0);
      if (plan.stage_layers().chunk_layers.size() == 1 && plan.activation_slots() > 0) {
        EXPECT_EQ(Term(plan, "activations").allocated_bytes,
                  Term(plan, "activations").estimated_bytes);
      }
      const ShardShapes& x = plan.shapes();
      EXPECT_EQ(plan.placement(ProbeBuffer::kFp8Input).bytes,
                x.tokens * std::max({x.hidden, x.attention_output.inputs, x.ffn}));
      EXPECT_EQ(plan.placement(ProbeBuffer::kFp8InputTransposed).bytes,
                x.sequence_parallel ? x.hidden * x.tokens : 0);
      EXPECT_GT(plan.placement(ProbeBuffer::kFp8OutputGradientTransposed).bytes, 0);
      EXPECT_GE(plan.placement(ProbeBuffer::kLinearInput).bytes, x.tokens * x.ffn * 2);
    }
  }
}

// With fp8 parameters (fp8_param_gather) the weights buffer keeps the linears in 1 byte and
// the weight copies are their transposes alone: each at the memory model's term, plus
// alignment (and the copies' scale inverses).
TEST(FootprintPlanTest, Fp8ParametersAllocateOneByteLinearsAndTheirTransposes) {
  const Configuration bf16_weights =
      Make("llama3.1-8b", 32, 4096, 2, 2, 2, 1, 2, Recompute::kNone, true);
  const Configuration fp8_weights =
      Make("llama3.1-8b", 32, 4096, 2, 2, 2, 1, 2, Recompute::kNone, true, true);
  for (int64_t stage : {0, 1}) {
    SCOPED_TRACE(absl::StrCat("stage ", stage));
    const FootprintPlan plan = Plan(fp8_weights, stage);
    ExpectConsistent(plan);
    const TermAllocation& weights = Term(plan, "weights");
    EXPECT_EQ(plan.placement(ProbeBuffer::kWeights).bytes, plan.parameters().weight_bytes);
    EXPECT_NEAR(static_cast<double>(weights.needed_bytes),
                static_cast<double>(weights.estimated_bytes), 1e-3 * weights.estimated_bytes);
    const TermAllocation& copies = Term(plan, "fp8_weight_copies");
    EXPECT_GE(copies.needed_bytes, copies.estimated_bytes);
    EXPECT_LE(copies.needed_bytes, copies.estimated_bytes + 2 * 256 * 4 * 20);
    const TermAllocation& bf16_copies = Term(Plan(bf16_weights, stage), "fp8_weight_copies");
    EXPECT_EQ(2 * copies.estimated_bytes, bf16_copies.estimated_bytes);
  }
}

TEST(FootprintPlanTest, Bf16HasNoFp8Buffers) {
  const FootprintPlan plan = Plan(Make("llama3.1-8b", 16, 4096, 2, 2, 4, 1), 0);
  EXPECT_FALSE(plan.fp8());
  EXPECT_EQ(Term(plan, "fp8_weight_copies").allocated_bytes, 0);
  EXPECT_EQ(Term(plan, "fp8_scaling_state").allocated_bytes, 0);
  for (ProbeBuffer buffer :
       {ProbeBuffer::kFp8WeightCopies, ProbeBuffer::kFp8ScalingState, ProbeBuffer::kLinearInput,
        ProbeBuffer::kFp8Input, ProbeBuffer::kFp8InputTransposed, ProbeBuffer::kFp8OutputGradient,
        ProbeBuffer::kFp8OutputGradientTransposed}) {
    EXPECT_EQ(plan.placement(buffer).bytes, 0);
  }
}

// Context parallelism's K/V buffers: every rank's blocks with cp_comm_type all_gather, the
// ring's slots with p2p (context_parallel_ring.h): at cp 4, 2 received blocks and 3 fp32
// gradient blocks instead of 4 and 4; none without context parallelism.
TEST(FootprintPlanTest, ContextParallelBuffersFollowTheExchange) {
  const Configuration p2p = Make("llama3.1-8b", 8, 8192, 1, 2, 1, 4);
  ASSERT_EQ(p2p.training.cp_comm_type(), CpCommType::kP2p);
  TrainingOptions options = p2p.training.options();
  options.cp_comm_type = CpCommType::kAllGather;
  Configuration all_gather = p2p;
  all_gather.training = *TrainingSpec::Create(options);
  const FootprintPlan ring = Plan(p2p, 0);
  const FootprintPlan gathered = Plan(all_gather, 0);
  EXPECT_TRUE(ring.context_parallel_ring());
  EXPECT_FALSE(gathered.context_parallel_ring());
  const ShardShapes& x = ring.shapes();
  const int64_t block = 2 * x.tokens * x.kv_heads * x.head_dim;
  EXPECT_EQ(ring.placement(ProbeBuffer::kKeyValueGathered).bytes, 2 * block * 2);
  EXPECT_EQ(ring.placement(ProbeBuffer::kKeyValueGradients).bytes, 3 * block * 4);
  EXPECT_EQ(gathered.placement(ProbeBuffer::kKeyValueGathered).bytes, 4 * block * 2);
  EXPECT_EQ(gathered.placement(ProbeBuffer::kKeyValueGradients).bytes, 4 * block * 4);
  ExpectConsistent(ring);
  ExpectConsistent(gathered);
  // cp 2: one received block.
  EXPECT_EQ(Plan(Make("llama3.1-8b", 8, 8192, 1, 2, 1, 2), 0)
                .placement(ProbeBuffer::kKeyValueGathered)
                .bytes,
            (2 * block) * 2);  // one block of s/2 tokens, twice cp 4's
  const FootprintPlan single = Plan(Make("llama3.1-8b", 8, 8192, 1, 2, 1, 1), 0);
  EXPECT_EQ(single.placement(ProbeBuffer::kKeyValueGathered).bytes, 0);
  EXPECT_FALSE(single.context_parallel_ring());
}

// Mixtral 8x7B (every layer MoE, E 8, top-2) at s 4096, b 1, pp 4 and the given tp, dp, ep,
// etp, as the planner makes such a configuration (CheckRules, then FromCheckedDims); dropless
// unless given a capacity factor.
Configuration MakeMixtral(int64_t tp, int64_t dp, int64_t ep, int64_t etp,
                          Recompute recompute = Recompute::kNone, double capacity_factor = 0) {
  const ModelSpec model = *FindModelPreset("mixtral-8x7b");
  TrainingOptions options;
  options.global_batch_size = 8 * dp;
  options.seq_len = 4096;
  options.moe_capacity_factor = capacity_factor;
  const TrainingSpec training = *TrainingSpec::Create(options);
  ParallelDims dims = MakeParallelDims(dp, tp, /*pp=*/4, /*cp=*/1, /*micro_batch=*/1);
  dims.ep = ep;
  dims.etp = etp;
  dims.recompute = recompute;
  const ClusterSpec cluster =
      *ClusterSpec::Create(*FindGpuPreset("h200-141gb"), dp * 4 * tp / 8, 8);
  EXPECT_EQ(CheckRules(model, training, cluster, PlacementRules(), dims), Rejection::kValid);
  return {model, training, cluster, ParallelConfig::FromCheckedDims(dims)};
}

TEST(FootprintPlanTest, MoeLayersKeepTheirBlocksInTheSlots) {
  const Configuration c = MakeMixtral(2, 4, 4, 1);
  const FootprintPlan plan = Plan(c, 1);
  ExpectConsistent(plan);
  const LayerActivationLayout& moe = plan.moe_layer_activations();
  ASSERT_GE(moe.moe_block, 0);
  EXPECT_EQ(moe.gate_up, moe.swiglu_output);  // no dense MLP
  EXPECT_EQ(moe.bytes - moe.moe_block, LayoutMoeBlockActivations(plan.shapes(), plan.moe()).bytes);
  // Every layer is MoE: a slot holds the chunk's 8 MoE blocks, one after the other.
  ASSERT_EQ(plan.stage_layers().TotalLayers(), 8);
  for (int64_t layer = 0; layer < 8; ++layer) {
    EXPECT_EQ(&plan.LayerActivationsOf(layer), &moe);
    EXPECT_EQ(plan.LayerSlotOffset(layer), layer * moe.bytes);
  }
  EXPECT_EQ(plan.slot_bytes(), 8 * moe.bytes);
  // What the slots hold against the model's activation term: the MoE block keeps 21 % less than
  // MoeBlockActivationBytes (activation_layout_test names the terms), so the term is allocated
  // at its estimate and the slots fit in it.
  const TermAllocation& activations = Term(plan, "activations");
  EXPECT_EQ(activations.allocated_bytes, activations.estimated_bytes);
  EXPECT_GE(activations.needed_bytes, 0.75 * activations.estimated_bytes);
}

TEST(FootprintPlanTest, FullRecomputationRebuildsTheLargestLayerBlock) {
  const Configuration c = MakeMixtral(2, 4, 4, 1, Recompute::kFull);
  const FootprintPlan plan = Plan(c, 1);
  ExpectConsistent(plan);
  EXPECT_EQ(plan.LayerSlotOffset(1), LayerInputBytes(plan.shapes()));
  EXPECT_EQ(plan.placement(ProbeBuffer::kRecomputeWorkspace).bytes,
            plan.moe_layer_activations().bytes);
}

TEST(FootprintPlanTest, DispatcherBuffersAreTheEstimatorsTokensAndTheirProbabilities) {
  // The token buffers of moe_memory.h's AllToAllBufferBytes, exactly, where its phases need
  // them all at once; with several local experts and etp > 1 the probe reduce-scatters into
  // the dispatch's buffer and needs S h 2 bytes less. The probe adds the fp32 probabilities of
  // the copies it sends and receives (Megatron's dispatcher moves them too; the estimator
  // leaves them out), and aligns each buffer to 256 bytes. With a capacity factor (0.5 drops
  // half the copies, 1.25 pads them) every buffer is the capacity's, as the estimator's are.
  const struct {
    int64_t tp, dp, ep, etp;
    bool reduce_scatter_in_place;
  } cases[] = {{2, 4, 8, 1, false}, {2, 4, 4, 1, false}, {4, 4, 8, 2, false}, {2, 4, 4, 2, true}};
  for (const auto& k : cases) {
    for (double capacity_factor : {0.0, 0.5, 1.25}) {
      SCOPED_TRACE(absl::StrCat("tp ", k.tp, " dp ", k.dp, " ep ", k.ep, " etp ", k.etp, " cf ",
                                capacity_factor));
      const FootprintPlan plan =
          Plan(MakeMixtral(k.tp, k.dp, k.ep, k.etp, Recompute::kNone, capacity_factor), 0);
      ExpectConsistent(plan);
      const MoeShardShapes& moe = plan.moe();
      const int64_t h = plan.shapes().hidden;
      int64_t tokens = 0;
      for (ProbeBuffer buffer : {ProbeBuffer::kMoePermutedTokens, ProbeBuffer::kMoeReceivedTokens,
                                 ProbeBuffer::kMoeExpertOutput, ProbeBuffer::kMoeCombinedTokens}) {
        tokens += plan.placement(buffer).bytes;
      }
      const int64_t probabilities = plan.placement(ProbeBuffer::kMoePermutedProbabilities).bytes +
                                    plan.placement(ProbeBuffer::kMoeReceivedProbabilities).bytes;
      const TermAllocation& term = Term(plan, "moe_dispatcher_buffers");
      const int64_t in_place = k.reduce_scatter_in_place ? moe.routed_copies * h * 2 : 0;
      EXPECT_EQ(tokens + in_place, term.estimated_bytes);
      EXPECT_EQ(probabilities,
                4 * (moe.routed_copies +
                     plan.placement(ProbeBuffer::kMoeReceivedTokens).bytes / (2 * h)));
      EXPECT_LE(term.needed_bytes - tokens - probabilities, 6 * 256);
      EXPECT_EQ(term.allocated_bytes, std::max(term.needed_bytes, term.estimated_bytes));
    }
  }
}

TEST(FootprintPlanTest, ADenseModelHasNoMoeBuffers) {
  const FootprintPlan plan = Plan(Make("llama3.1-8b", 16, 4096, 2, 2, 4, 1), 0);
  EXPECT_EQ(Term(plan, "moe_dispatcher_buffers").needed_bytes, 0);
  for (ProbeBuffer buffer :
       {ProbeBuffer::kMoePermutedTokens, ProbeBuffer::kMoeReceivedTokens,
        ProbeBuffer::kMoeExpertOutput, ProbeBuffer::kMoeCombinedTokens,
        ProbeBuffer::kMoeExpertGateUpGradient, ProbeBuffer::kMoeRouterLogitsGradient}) {
    EXPECT_EQ(plan.placement(buffer).bytes, 0) << ProbeBufferName(buffer);
  }
  EXPECT_LT(plan.moe_layer_activations().moe_block, 0);
}

}  // namespace
}  // namespace paratune
