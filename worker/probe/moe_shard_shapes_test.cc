#include "worker/probe/moe_shard_shapes.h"

#include <string>
#include <utility>
#include <vector>

#include "estimator/cluster_spec.h"
#include "estimator/moe_memory.h"
#include "estimator/moe_performance.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

struct Configuration {
  ModelSpec model;
  TrainingSpec training;
  ParallelDims dims;
  ParallelConfig config;
  ShardShapes shapes;
};

// A configuration the validity rules accept, made as the planner makes one (CheckRules, then
// FromCheckedDims); dropless unless given a capacity factor.
Configuration Make(const char* preset, int64_t seq, int64_t dp, int64_t tp, int64_t pp, int64_t ep,
                   int64_t etp, double capacity_factor = 0) {
  ModelSpec model = *FindModelPreset(preset);
  TrainingOptions options;
  options.global_batch_size = 2 * dp;
  options.seq_len = seq;
  options.moe_capacity_factor = capacity_factor;
  TrainingSpec training = *TrainingSpec::Create(options);
  ParallelDims dims = MakeParallelDims(dp, tp, pp, /*cp=*/1, /*micro_batch=*/1);
  dims.ep = ep;
  dims.etp = etp;
  const int64_t world = dp * tp * pp;
  ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 1, world);
  PlacementRules rules;
  rules.allow_tp_cp_across_nodes = true;
  EXPECT_EQ(CheckRules(model, training, cluster, rules, dims), Rejection::kValid)
      << DescribeRejection(CheckRules(model, training, cluster, rules, dims), model, training,
                           cluster, dims);
  const ParallelConfig config = ParallelConfig::FromCheckedDims(dims);
  return {model, training, dims, config, ComputeShardShapes(model, training, config)};
}

MoeShardShapes MoeShapesOf(const Configuration& x) {
  absl::StatusOr<MoeShardShapes> moe =
      ComputeMoeShardShapes(x.model, x.training, x.config, x.shapes);
  EXPECT_TRUE(moe.ok()) << moe.status();
  return moe.ok() ? *moe : MoeShardShapes{};
}

ExpertParallelism ExpertOf(const Configuration& x) { return {x.config.ep(), x.config.etp()}; }

TEST(MoeShardShapesTest, Mixtral8x7bOneExpertPerRank) {
  // Mixtral 8x7B: h 4096, E 8, top-2, f_e 14336; s 4096, tp 2, dp 8, pp 4, ep 8, etp 1.
  const Configuration x = Make("mixtral-8x7b", 4096, 8, 2, 4, 8, 1);
  const MoeShardShapes moe = MoeShapesOf(x);
  EXPECT_EQ(moe.local_experts, 1);
  EXPECT_EQ(moe.routed_tokens, 2048);  // s b / t
  EXPECT_EQ(moe.routed_copies, 4096);
  EXPECT_EQ(moe.copies_per_peer, 512);
  EXPECT_EQ(moe.received_copies, 4096);
  EXPECT_EQ(moe.copies_per_local_expert, 4096);
  EXPECT_EQ(moe.router.rows, 2048);
  EXPECT_EQ(moe.router.outputs, 8);
  EXPECT_EQ(moe.router.inputs, 4096);
  EXPECT_EQ(moe.expert_fc1.outputs, 2 * 14336);
  EXPECT_EQ(moe.expert_fc1.inputs, 4096);
  EXPECT_EQ(moe.expert_fc2.outputs, 4096);
  EXPECT_EQ(moe.expert_fc2.inputs, 14336);
  EXPECT_EQ(moe.shared_fc1.rows, 0);
  EXPECT_EQ(ExpertTensorGatherBytes(moe, x.shapes), 0);
}

// Every figure of the block against the estimator's closed forms (moe_memory.h,
// moe_performance.h), exactly: balanced routing is the estimator's dropless case with load
// margin 1.
void ExpectEstimatorsFigures(const Configuration& x) {
  const MoeShardShapes moe = MoeShapesOf(x);
  const MoeRouting dropless;
  const ExpertParallelism expert = ExpertOf(x);
  const double tokens = MoeTokensPerRank(x.training, x.dims);
  EXPECT_EQ(moe.routed_tokens, tokens);
  EXPECT_EQ(moe.received_copies,
            RoutedTokensPerRank(x.model, x.training, x.dims, expert, dropless));
  EXPECT_EQ(moe.copies_per_local_expert,
            TokensPerLocalExpert(x.model, x.training, x.dims, expert, dropless));
  // FLOPs with top-k: the rank's E / ep experts on N copies at f_e / etp are its own T tokens'
  // k experts at f_e, 2 k T M f_e h.
  EXPECT_DOUBLE_EQ(moe.router.ForwardFlops(), RouterForwardFlops(x.model, tokens));
  const double routed =
      moe.local_experts * (moe.expert_fc1.ForwardFlops() + moe.expert_fc2.ForwardFlops());
  EXPECT_DOUBLE_EQ(routed, RoutedExpertForwardFlops(x.model, tokens));
  // The shared experts run on the T tokens gathered over tp, split over tp.
  const double shared = moe.shared_fc1.ForwardFlops() + moe.shared_fc2.ForwardFlops();
  EXPECT_DOUBLE_EQ(shared * x.config.tp(),
                   SharedExpertForwardFlops(x.model, static_cast<double>(x.shapes.tokens)));
  EXPECT_DOUBLE_EQ(moe.ForwardFlops(), moe.router.ForwardFlops() + routed + shared);
  // The all-to-all: (ep - 1) of the ep messages leave the rank.
  EXPECT_DOUBLE_EQ(static_cast<double>(DispatchTokenBytes(moe, x.shapes)) *
                       (moe.expert_parallel - 1) / moe.expert_parallel,
                   AllToAllBytesLeavingRank(x.model, x.training, x.dims, expert, dropless));
  EXPECT_EQ(DispatchTokenBytes(moe, x.shapes),
            moe.copies_per_peer * moe.expert_parallel * x.model.hidden_size() * 2);
  EXPECT_EQ(DispatchProbabilityBytes(moe), moe.routed_copies * 4);
  // One layer's weights on the rank (theoretical_memory_usage.py's split).
  EXPECT_EQ(moe.ExpertWeightElements(), ExpertParameters(x.model, expert, /*moe_layers=*/1));
  EXPECT_EQ(moe.router.WeightElements(), RouterParameters(x.model, /*moe_layers=*/1));
  EXPECT_EQ(moe.SharedWeightElements(), SharedExpertParameters(x.model, x.dims, /*moe_layers=*/1));
}

TEST(MoeShardShapesTest, FiguresAreTheEstimatorsClosedForms) {
  ExpectEstimatorsFigures(Make("mixtral-8x7b", 4096, 8, 2, 4, 8, 1));
  ExpectEstimatorsFigures(Make("mixtral-8x7b", 4096, 4, 2, 1, 2, 2));
  ExpectEstimatorsFigures(Make("qwen3-30b-a3b", 4096, 4, 2, 1, 8, 1));
  ExpectEstimatorsFigures(Make("qwen3-30b-a3b", 4096, 4, 2, 1, 4, 2));
  ExpectEstimatorsFigures(Make("llama4-scout", 8192, 4, 4, 2, 16, 1));
  ExpectEstimatorsFigures(Make("llama4-maverick", 8192, 8, 4, 1, 32, 1));
}

// With a capacity factor each expert has C = ceil(R k cf / E) slots for a rank's copies, all
// sent (the input padded to capacity): the dispatch, the grouped GEMMs and the all-to-all are
// sized by C, as the estimator's capacity figures are (SentTokensPerRank E C,
// RoutedTokensPerRank E etp C, the grouped GEMM's 2 N M f_e h / etp), exactly. Mixtral 8x7B at
// tp 2 routes R = 2048 rows x top-2 over 8 experts, 512 copies each: cf 0.5 drops half of them,
// 1 neither drops nor pads, 1.25 and 2 pad.
TEST(MoeShardShapesTest, CapacityFactorSizesTheDispatchByCapacity) {
  for (const auto& [capacity_factor, capacity] :
       std::vector<std::pair<double, int64_t>>{{0.5, 256}, {1, 512}, {1.25, 640}, {2, 1024}}) {
    for (int64_t etp : {1, 2}) {
      SCOPED_TRACE(testing::Message() << "cf " << capacity_factor << " etp " << etp);
      const Configuration x = Make("mixtral-8x7b", 4096, 8, 2, 1, 8 / etp, etp, capacity_factor);
      const MoeShardShapes moe = MoeShapesOf(x);
      const MoeRouting routing = MoeRoutingOf(x.training, /*dropless_load_margin=*/1);
      const ExpertParallelism expert = ExpertOf(x);
      EXPECT_EQ(moe.expert_capacity, capacity);
      EXPECT_EQ(moe.routed_copies, 8 * capacity);
      EXPECT_EQ(moe.routed_copies, SentTokensPerRank(x.model, x.training, x.dims, routing));
      EXPECT_EQ(moe.received_copies,
                RoutedTokensPerRank(x.model, x.training, x.dims, expert, routing));
      EXPECT_EQ(moe.copies_per_local_expert,
                TokensPerLocalExpert(x.model, x.training, x.dims, expert, routing));
      const double routed =
          moe.local_experts * (moe.expert_fc1.ForwardFlops() + moe.expert_fc2.ForwardFlops());
      EXPECT_DOUBLE_EQ(routed, 2 * static_cast<double>(moe.received_copies) * 3 * 14336 * 4096 /
                                   static_cast<double>(etp));
      EXPECT_DOUBLE_EQ(static_cast<double>(DispatchTokenBytes(moe, x.shapes)) *
                           (moe.expert_parallel - 1) / moe.expert_parallel,
                       AllToAllBytesLeavingRank(x.model, x.training, x.dims, expert, routing));
      EXPECT_EQ(DispatchProbabilityBytes(moe), moe.routed_copies * 4);
    }
  }
}

TEST(MoeShardShapesTest, CapacityAboveTheRoutedRowsIsRefusedNamingTheValues) {
  // cf 5: C = ceil(2048 x 2 x 5 / 8) = 2560 slots per expert for the rank's 2048 rows.
  const Configuration x = Make("mixtral-8x7b", 4096, 8, 2, 1, 8, 1, 5);
  const absl::StatusOr<MoeShardShapes> moe =
      ComputeMoeShardShapes(x.model, x.training, x.config, x.shapes);
  ASSERT_EQ(moe.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(moe.status().message().find("training.moe_capacity_factor (5) gives each expert a "
                                        "capacity of 2560 copies per rank, more than the rank's "
                                        "2048 routed tokens"),
            std::string::npos)
      << moe.status();
}

TEST(MoeShardShapesTest, ExpertTensorParallelGathersTheReceivedCopies) {
  // Qwen3-30B-A3B: h 2048, E 128, top-8, f_e 768; tp 2, dp 4, ep 4, etp 2: each etp pair
  // gathers the 2 x S copies its two ranks received.
  const Configuration x = Make("qwen3-30b-a3b", 4096, 4, 2, 1, 4, 2);
  const MoeShardShapes moe = MoeShapesOf(x);
  EXPECT_EQ(moe.local_experts, 32);
  EXPECT_EQ(moe.routed_copies, 2048 * 8);
  EXPECT_EQ(moe.copies_per_peer, 2048 * 8 / 4);
  EXPECT_EQ(moe.received_copies, 2 * 2048 * 8);
  EXPECT_EQ(moe.copies_per_local_expert, 1024);
  EXPECT_EQ(moe.expert_ffn, 384);
  EXPECT_EQ(ExpertTensorGatherBytes(moe, x.shapes), 2 * 2048 * 8 * 2048 * 2);
}

TEST(MoeShardShapesTest, SharedExpertIsADenseMlpSplitOverTensorParallel) {
  // Llama 4 Scout: h 5120, one shared expert of f_s 8192; tp 4, s 8192: T = 8192 gathered.
  const Configuration x = Make("llama4-scout", 8192, 4, 4, 2, 16, 1);
  const MoeShardShapes moe = MoeShapesOf(x);
  EXPECT_EQ(moe.shared_ffn, 2048);
  EXPECT_EQ(moe.shared_fc1.rows, 8192);
  EXPECT_EQ(moe.shared_fc1.outputs, 4096);
  EXPECT_EQ(moe.shared_fc1.inputs, 5120);
  EXPECT_EQ(moe.shared_fc2.outputs, 5120);
  EXPECT_EQ(moe.shared_fc2.inputs, 2048);
}

TEST(MoeShardShapesTest, UnevenRoutedCopiesAreRefusedNamingTheValues) {
  // Mixtral at s 1026 on one rank: 1026 tokens x top-2 = 2052 copies, not a multiple of 8.
  const Configuration x = Make("mixtral-8x7b", 1026, 1, 1, 1, 1, 1);
  const absl::StatusOr<MoeShardShapes> moe =
      ComputeMoeShardShapes(x.model, x.training, x.config, x.shapes);
  ASSERT_EQ(moe.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(moe.status().message(),
            "the routed token copies per rank (1026 tokens x top-2 = 2052) are not a multiple of "
            "model.moe.num_experts (8): the probe's balanced routing gives every expert the same "
            "count");
}

}  // namespace
}  // namespace paratune
