#include "worker/probe/recording_device_ops.h"

#include <variant>

#include "gtest/gtest.h"
#include "worker/probe/moe_shard_shapes.h"
#include "worker/probe/optimizer_layout.h"
#include "worker/probe/step_plan_specs.h"

namespace paratune {
namespace {

// Mixtral 8x7B at s 1024, tp 2, dp 2, ep 2 and `etp`: R 512 routed rows, S 1024 copies, four
// local experts.
struct MoeRecording {
  ProbeSpec spec;
  FootprintPlan footprint;
  OptimizerLayout optimizer;
  std::unique_ptr<RecordingDeviceOps> ops;
};

std::unique_ptr<MoeRecording> RecordMixtral(int64_t etp) {
  PlanSpecOptions options;
  options.preset = "mixtral-8x7b";
  options.seq_len = 1024;
  options.global_batch = 2;
  options.tp = 2;
  options.dp = 2;
  options.ep = 2;
  options.etp = etp;
  absl::StatusOr<ProbeSpec> spec = PlanSpecOf(options);
  EXPECT_TRUE(spec.ok()) << spec.status();
  FootprintPlan footprint = RankFootprintOf(*spec, 0);
  OptimizerLayout optimizer = OptimizerLayoutOf(*spec, footprint, 0);
  auto recording = std::unique_ptr<MoeRecording>(
      new MoeRecording{*spec, std::move(footprint), std::move(optimizer), nullptr});
  absl::StatusOr<std::unique_ptr<RecordingDeviceOps>> ops =
      RecordingDeviceOps::Create(recording->spec, recording->footprint, recording->optimizer, 0);
  EXPECT_TRUE(ops.ok()) << ops.status();
  recording->ops = std::move(*ops);
  return recording;
}

DeviceRef Buffer(ProbeBuffer buffer) { return {buffer, 0}; }

const CollectiveOp& OnlyCollective(const std::vector<StepOp>& ops) {
  EXPECT_EQ(ops.size(), 1u);
  return std::get<CollectiveOp>(ops.front().detail);
}

TEST(RecordingDeviceOpsTest, ExpertCollectivesMoveTheDispatchersBytes) {
  const std::unique_ptr<MoeRecording> r = RecordMixtral(/*etp=*/2);
  const MoeShardShapes& moe = r->footprint.moe();
  const ShardShapes& shapes = r->footprint.shapes();
  ASSERT_EQ(moe.routed_copies, 1024);
  const int64_t h = shapes.hidden;

  ASSERT_TRUE(r->ops
                  ->ExpertAllToAll(Buffer(ProbeBuffer::kMoePermutedTokens),
                                   Buffer(ProbeBuffer::kMoeReceivedTokens), moe.routed_copies, h,
                                   ElementType::kBf16, "dispatch tokens")
                  .ok());
  const CollectiveOp tokens = OnlyCollective(r->ops->TakeOps());
  EXPECT_EQ(tokens.family, CollectiveFamily::kExpert);
  EXPECT_EQ(tokens.kind, CollectiveKind::kAllToAll);
  EXPECT_EQ(tokens.bytes, DispatchTokenBytes(moe, shapes));

  ASSERT_TRUE(r->ops
                  ->ExpertAllToAll(Buffer(ProbeBuffer::kMoePermutedProbabilities),
                                   Buffer(ProbeBuffer::kMoeReceivedProbabilities),
                                   moe.routed_copies, 1, ElementType::kFloat32,
                                   "dispatch probabilities")
                  .ok());
  EXPECT_EQ(OnlyCollective(r->ops->TakeOps()).bytes, DispatchProbabilityBytes(moe));

  ASSERT_TRUE(r->ops
                  ->ExpertTensorAllGather(Buffer(ProbeBuffer::kMoeReceivedTokens),
                                          Buffer(ProbeBuffer::kMoeExpertOutput), moe.routed_copies,
                                          h, ElementType::kBf16, "gather")
                  .ok());
  const CollectiveOp gather = OnlyCollective(r->ops->TakeOps());
  EXPECT_EQ(gather.family, CollectiveFamily::kExpertTensor);
  EXPECT_EQ(gather.bytes, ExpertTensorGatherBytes(moe, shapes));

  ASSERT_TRUE(r->ops
                  ->ExpertTensorReduceScatter(Buffer(ProbeBuffer::kMoeExpertOutput),
                                              Buffer(ProbeBuffer::kMoePermutedTokens),
                                              moe.routed_copies, h, ElementType::kBf16,
                                              "reduce-scatter")
                  .ok());
  const CollectiveOp scatter = OnlyCollective(r->ops->TakeOps());
  EXPECT_EQ(scatter.kind, CollectiveKind::kReduceScatter);
  EXPECT_EQ(scatter.bytes, ExpertTensorGatherBytes(moe, shapes));
}

TEST(RecordingDeviceOpsTest, MoeKernelsAndGemmsAreRecordedAtTheBlocksShapes) {
  const std::unique_ptr<MoeRecording> r = RecordMixtral(/*etp=*/1);
  const MoeShardShapes& moe = r->footprint.moe();
  const int64_t h = r->footprint.shapes().hidden;
  const DeviceRef logits = Buffer(ProbeBuffer::kMoeRouterLogitsGradient);
  const DeviceRef probabilities = Buffer(ProbeBuffer::kMoeProbabilityGradient);
  ASSERT_TRUE(r->ops->RouterTopK(logits, probabilities, probabilities).ok());
  ASSERT_TRUE(r->ops
                  ->PermuteTokens(Buffer(ProbeBuffer::kReduced), probabilities,
                                  Buffer(ProbeBuffer::kMoePermutedTokens),
                                  Buffer(ProbeBuffer::kMoePermutedProbabilities))
                  .ok());
  ASSERT_TRUE(r->ops
                  ->SortChunks(Buffer(ProbeBuffer::kMoeReceivedTokens),
                               Buffer(ProbeBuffer::kMoeExpertOutput), moe.expert_parallel,
                               moe.local_experts, moe.copies_per_peer / moe.local_experts, h,
                               ElementType::kBf16)
                  .ok());
  ASSERT_TRUE(r->ops
                  ->WeightedSwigluForward(
                      Buffer(ProbeBuffer::kMoeExpertGateUpGradient), probabilities,
                      Buffer(ProbeBuffer::kMoeExpertSwigluGradient), moe.received_copies)
                  .ok());
  LinearProduct router;
  router.weight = LinearWeight::kRouter;
  router.a = Buffer(ProbeBuffer::kReduced);
  router.b = Buffer(ProbeBuffer::kWeights);
  router.c = logits;
  router.tokens = moe.router.rows;
  router.outputs = moe.router.outputs;
  router.inputs = moe.router.inputs;
  ASSERT_TRUE(r->ops->Gemm(router).ok());
  const std::vector<StepOp> ops = r->ops->TakeOps();
  ASSERT_EQ(ops.size(), 5u);
  EXPECT_EQ(std::get<ElementwiseOp>(ops[0].detail).elements, moe.routed_tokens * moe.experts);
  EXPECT_EQ(std::get<ElementwiseOp>(ops[1].detail).elements, moe.routed_copies * h);
  EXPECT_EQ(std::get<ElementwiseOp>(ops[2].detail).elements, moe.received_copies * h);
  EXPECT_EQ(std::get<ElementwiseOp>(ops[3].detail).elements, moe.received_copies * moe.expert_ffn);
  const GemmOp& gemm = std::get<GemmOp>(ops[4].detail);
  EXPECT_EQ(gemm.weight, LinearWeight::kRouter);
  EXPECT_EQ(gemm.m, moe.routed_tokens);
  EXPECT_EQ(gemm.n, moe.experts);
  EXPECT_EQ(gemm.k, h);
  EXPECT_EQ(DescribeOp(ops[4]),
            "step: gemm router fprop m512 n8 k4096 bf16xbf16->bf16 "
            "@reduced,weights,moe_router_logits_gradient");
}

TEST(RecordingDeviceOpsTest, APlaceOutsideItsBufferIsRefused) {
  const std::unique_ptr<MoeRecording> r = RecordMixtral(/*etp=*/1);
  const BufferPlacement& permuted = r->footprint.placement(ProbeBuffer::kMoePermutedTokens);
  const absl::Status status = r->ops->UnpermuteTokens(
      {ProbeBuffer::kMoePermutedTokens, permuted.bytes}, Buffer(ProbeBuffer::kReduced));
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal) << status;
}

}  // namespace
}  // namespace paratune
