#include "worker/probe/step_plan.h"

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/probe/moe_shard_shapes.h"
#include "worker/probe/overlap_plan.h"
#include "worker/probe/step_plan_specs.h"

namespace paratune {
namespace {

StepPlan PlanOf(const PlanSpecOptions& options, int64_t rank) {
  absl::StatusOr<ProbeSpec> spec = PlanSpecOf(options);
  EXPECT_TRUE(spec.ok()) << spec.status();
  const FootprintPlan footprint = RankFootprintOf(*spec, rank);
  absl::StatusOr<StepPlan> plan = StepPlanOf(*spec, footprint, rank, spec->micro_batches());
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *plan;
}

template <typename Op>
std::vector<Op> OpsOf(const StepPlan& plan) {
  std::vector<Op> ops;
  for (const StepOp& op : plan.ops) {
    if (const Op* detail = std::get_if<Op>(&op.detail)) ops.push_back(*detail);
  }
  return ops;
}

TEST(StepPlanPathsTest, NormLinearBackwardHasFourPaths) {
  EXPECT_EQ(NormLinearBackwardPathOf(true, true), NormLinearBackwardPath::kFp8Overlapped);
  EXPECT_EQ(NormLinearBackwardPathOf(true, false), NormLinearBackwardPath::kFp8);
  EXPECT_EQ(NormLinearBackwardPathOf(false, true), NormLinearBackwardPath::kBf16Overlapped);
  EXPECT_EQ(NormLinearBackwardPathOf(false, false), NormLinearBackwardPath::kBf16);
}

TEST(StepPlanPathsTest, RowLinearBackwardHasFivePaths) {
  // Overlap needs sequence parallelism (ProbeSpec::tp_comm_overlap), so `true, true` only.
  EXPECT_EQ(RowLinearBackwardPathOf(true, true, true), RowLinearBackwardPath::kFp8Overlapped);
  EXPECT_EQ(RowLinearBackwardPathOf(false, true, true), RowLinearBackwardPath::kBf16Overlapped);
  EXPECT_EQ(RowLinearBackwardPathOf(true, false, true),
            RowLinearBackwardPath::kFp8SequenceParallel);
  EXPECT_EQ(RowLinearBackwardPathOf(true, false, false), RowLinearBackwardPath::kFp8);
  EXPECT_EQ(RowLinearBackwardPathOf(false, false, true), RowLinearBackwardPath::kBf16);
  EXPECT_EQ(RowLinearBackwardPathOf(false, false, false), RowLinearBackwardPath::kBf16);
}

TEST(StepPlanTest, RejectsRankAndMicroBatchesOutOfRange) {
  absl::StatusOr<ProbeSpec> spec = PlanSpecOf(SmallPlanSpecOptions());
  ASSERT_TRUE(spec.ok()) << spec.status();
  const FootprintPlan footprint = RankFootprintOf(*spec, 0);
  EXPECT_EQ(StepPlanOf(*spec, footprint, 1, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StepPlanOf(*spec, footprint, 0, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StepPlanOf(*spec, footprint, 0, spec->micro_batches() + 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// One rank, no parallelism: each micro-batch's forward and backward of every layer, whose
// GEMMs and attention are three times the forward's model FLOPs, and the LM head's.
TEST(StepPlanTest, SingleRankFlopsAreThreeForwards) {
  absl::StatusOr<ProbeSpec> spec = PlanSpecOf(SmallPlanSpecOptions());
  ASSERT_TRUE(spec.ok()) << spec.status();
  const StepPlan plan = PlanOf(SmallPlanSpecOptions(), 0);
  const ShardShapes shapes = ComputeShardShapes(spec->model(), spec->training(), spec->config());
  const double per_micro_batch = 3 * (spec->model().num_layers() * LayerForwardModelFlops(shapes) +
                                      shapes.lm_head.ForwardFlops());
  EXPECT_DOUBLE_EQ(PlanModelFlops(plan), per_micro_batch * spec->micro_batches());
  EXPECT_EQ(plan.most_activation_slots, 1);
  EXPECT_EQ(plan.most_loss_slots, 1);
  EXPECT_TRUE(OpsOf<CollectiveOp>(plan).empty());
}

// Mixtral 8x7B at s 1024, tp 2, dp 2, ep 2 (four local experts), two micro-batches: every layer
// runs its MoE block. GEMM FLOPs: three forwards of each layer with the MoE block's (router,
// the local experts at their routed rows, top-k included: moe_shard_shapes.h) in place of the
// MLP's. Bytes per MoE layer and micro-batch: the expert group moves the dispatch's and the
// combine's tokens and the dispatch's probabilities both ways (DispatchTokenBytes,
// DispatchProbabilityBytes), the expert tensor group (etp 2) gathers and reduce-scatters as
// many, over etp (ExpertTensorGatherBytes); the expert data-parallel group reduce-scatters the
// experts' gradients (fp32) and gathers their weights (bf16) where it has more than one rank.
// With a capacity factor every figure is the capacity's (moe_shard_shapes.h): cf 0.5 halves the
// 512 x 2 / 8 = 128 copies each expert gets from a rank, cf 1.25 pads them to 160, and each
// local expert's GEMMs run on ep etp C rows.
TEST(StepPlanTest, MoeLayersRunTheirBlocks) {
  for (const auto& [etp, capacity_factor] : std::vector<std::pair<int64_t, double>>{
           {1, 0}, {2, 0}, {1, 0.5}, {2, 0.5}, {1, 1.25}, {2, 1.25}}) {
    SCOPED_TRACE(testing::Message() << "etp " << etp << " cf " << capacity_factor);
    PlanSpecOptions options;
    options.preset = "mixtral-8x7b";
    options.seq_len = 1024;
    options.global_batch = 4;
    options.tp = 2;
    options.dp = 2;
    options.ep = 2;
    options.etp = etp;
    options.moe_capacity_factor = capacity_factor;
    absl::StatusOr<ProbeSpec> spec = PlanSpecOf(options);
    ASSERT_TRUE(spec.ok()) << spec.status();
    const FootprintPlan footprint = RankFootprintOf(*spec, 0);
    absl::StatusOr<StepPlan> plan = StepPlanOf(*spec, footprint, 0, spec->micro_batches());
    ASSERT_TRUE(plan.ok()) << plan.status();
    const ShardShapes& x = footprint.shapes();
    const MoeShardShapes& moe = footprint.moe();
    ASSERT_EQ(moe.local_experts, 4);
    const int64_t capacity = capacity_factor == 0 ? 128 : capacity_factor == 0.5 ? 64 : 160;
    ASSERT_EQ(moe.expert_capacity, capacity);
    // The probabilities' gradients of the rank's R k copies fit where the experts' N copies'
    // are, N < R k when cf 0.5 drops half of them at etp 1.
    EXPECT_GE(footprint.placement(ProbeBuffer::kMoeProbabilityGradient).bytes,
              moe.routed_tokens * moe.top_k * 4);
    for (const GemmOp& gemm : OpsOf<GemmOp>(*plan)) {
      if (gemm.weight == LinearWeight::kExpertFc1 && gemm.role == GemmRole::kForward) {
        EXPECT_EQ(gemm.m, 2 * etp * capacity);
      }
    }
    const double layers = static_cast<double>(spec->model().num_layers());
    const double moe_layer = LayerForwardModelFlops(x) - x.gate_up.ForwardFlops() -
                             x.down.ForwardFlops() + moe.ForwardFlops();
    const double m = static_cast<double>(spec->micro_batches());
    EXPECT_DOUBLE_EQ(PlanModelFlops(*plan),
                     3 * m * (layers * moe_layer + x.lm_head.ForwardFlops()));

    std::map<CollectiveFamily, int64_t> bytes;
    for (const CollectiveOp& op : OpsOf<CollectiveOp>(*plan)) bytes[op.family] += op.MovedBytes();
    const int64_t per_layer = static_cast<int64_t>(m * layers);
    EXPECT_EQ(bytes[CollectiveFamily::kExpert],
              per_layer * (4 * DispatchTokenBytes(moe, x) + 2 * DispatchProbabilityBytes(moe)));
    EXPECT_EQ(bytes[CollectiveFamily::kExpertTensor],
              etp == 1 ? 0
                       : per_layer * (4 * ExpertTensorGatherBytes(moe, x) +
                                      2 * etp * DispatchProbabilityBytes(moe)));
    const ParameterLayout& parameters = footprint.parameters();
    const int64_t experts = parameters.experts.end - parameters.experts.start;
    // edp = tp dp / (etp ep): 2 with etp 1, 1 (nothing to reduce) with etp 2.
    EXPECT_EQ(bytes[CollectiveFamily::kExpertData], etp == 1 ? experts * (4 + 2) : 0);
    EXPECT_EQ(bytes[CollectiveFamily::kData], parameters.dense.end * (4 + 2));
  }
}

// `model` on one rank at s 2048, as stage_runner_gpu_test runs its MoE cases: a spec the probe
// runs, the rank's footprint and its step.
struct OneGpuMoe {
  std::unique_ptr<ProbeSpec> spec;
  std::unique_ptr<FootprintPlan> footprint;
  StepPlan plan;
};

OneGpuMoe OneGpuMoeOf(const v1::ModelSpec& model) {
  PlanSpecOptions options = SmallPlanSpecOptions();
  options.model = model;
  options.seq_len = 2048;
  absl::StatusOr<ProbeSpec> spec = PlanSpecOf(options);
  EXPECT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(CheckCudaProbeRuns(*spec).ok()) << CheckCudaProbeRuns(*spec);
  OneGpuMoe run;
  run.spec = std::make_unique<ProbeSpec>(*spec);
  run.footprint = std::make_unique<FootprintPlan>(RankFootprintOf(*spec, 0));
  run.plan = PlanOf(options, 0);
  return run;
}

// stage_runner_gpu_test's MoE case on the CPU: the shrunk Mixtral on one rank (ep 1, eight
// local experts) is a spec the probe runs, and its plan's GEMMs are the layers' with the MoE
// block's.
TEST(StepPlanTest, OneRankMoeRunsEveryExpert) {
  const OneGpuMoe run = OneGpuMoeOf(ShrunkMixtral());
  const StepPlan& plan = run.plan;
  const ShardShapes& x = run.footprint->shapes();
  const MoeShardShapes& moe = run.footprint->moe();
  ASSERT_EQ(moe.local_experts, 8);
  const double moe_layer = LayerForwardModelFlops(x) - x.gate_up.ForwardFlops() -
                           x.down.ForwardFlops() + moe.ForwardFlops();
  const double m = static_cast<double>(run.spec->micro_batches());
  EXPECT_DOUBLE_EQ(PlanModelFlops(plan), 3 * m * (4 * moe_layer + x.lm_head.ForwardFlops()));
  int64_t expert_fc1 = 0;
  for (const GemmOp& gemm : OpsOf<GemmOp>(plan)) {
    if (gemm.weight == LinearWeight::kExpertFc1) ++expert_fc1;
  }
  // Forward, input and weight gradient of each of 8 experts in each of 4 layers, per
  // micro-batch.
  EXPECT_EQ(expert_fc1, 3 * 8 * 4 * run.spec->micro_batches());
}

// stage_runner_gpu_test's shared-expert case on the CPU: the shrunk Llama 4 on one rank (a dense
// layer, then an MoE layer, twice) is a spec the probe runs; each MoE layer runs its shared
// expert as the dense MLP runs (fc1, SwiGLU at n_s f_s wide, fc2, each GEMM three times) beside
// the routed experts, and the plan's FLOPs count both.
TEST(StepPlanTest, SharedExpertsRunBesideTheRoutedExperts) {
  const OneGpuMoe run = OneGpuMoeOf(ShrunkLlama4());
  const StepPlan& plan = run.plan;
  const ShardShapes& x = run.footprint->shapes();
  const MoeShardShapes& moe = run.footprint->moe();
  ASSERT_EQ(moe.shared_ffn, 2048);
  const double dense_layer = LayerForwardModelFlops(x);
  const double moe_layer =
      dense_layer - x.gate_up.ForwardFlops() - x.down.ForwardFlops() + moe.ForwardFlops();
  const int64_t m = run.spec->micro_batches();
  EXPECT_DOUBLE_EQ(
      PlanModelFlops(plan),
      3 * static_cast<double>(m) * (2 * dense_layer + 2 * moe_layer + x.lm_head.ForwardFlops()));
  std::map<LinearWeight, int64_t> gemms;
  for (const GemmOp& gemm : OpsOf<GemmOp>(plan)) ++gemms[gemm.weight];
  EXPECT_EQ(gemms[LinearWeight::kSharedFc1], 3 * 2 * m);
  EXPECT_EQ(gemms[LinearWeight::kSharedFc2], 3 * 2 * m);
  EXPECT_EQ(gemms[LinearWeight::kGateUp], 3 * 2 * m);
  std::map<int64_t, int64_t> swiglu_widths;
  for (const ElementwiseOp& op : OpsOf<ElementwiseOp>(plan)) {
    if (op.what == "swiglu") ++swiglu_widths[op.elements / x.tokens];
  }
  EXPECT_EQ(swiglu_widths, (std::map<int64_t, int64_t>{{x.ffn, 2 * m}, {moe.shared_ffn, 2 * m}}));
}

// Every pass's activation slot is taken and given back, and the most held at once is what the
// footprint allocated (both follow the schedule).
TEST(StepPlanTest, SlotsMatchTheFootprint) {
  PlanSpecOptions options = SmallPlanSpecOptions();
  options.pp = 4;
  options.virtual_pipeline = 2;
  options.global_batch = 8;
  absl::StatusOr<ProbeSpec> spec = PlanSpecOf(options);
  ASSERT_TRUE(spec.ok()) << spec.status();
  for (int64_t rank = 0; rank < 4; ++rank) {
    const FootprintPlan footprint = RankFootprintOf(*spec, rank);
    absl::StatusOr<StepPlan> plan = StepPlanOf(*spec, footprint, rank, spec->micro_batches());
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->most_activation_slots, footprint.activation_slots()) << rank;
    EXPECT_EQ(plan->most_loss_slots, rank == 3 ? footprint.loss_slots() : 0) << rank;
  }
}

// The short-probe counts plan fewer micro-batches: FLOPs scale with them.
TEST(StepPlanTest, ShortCountsScaleTheFlops) {
  PlanSpecOptions options = SmallPlanSpecOptions();
  options.global_batch = 4;
  absl::StatusOr<ProbeSpec> spec = PlanSpecOf(options);
  ASSERT_TRUE(spec.ok()) << spec.status();
  const FootprintPlan footprint = RankFootprintOf(*spec, 0);
  absl::StatusOr<StepPlan> one = StepPlanOf(*spec, footprint, 0, 1);
  absl::StatusOr<StepPlan> four = StepPlanOf(*spec, footprint, 0, 4);
  ASSERT_TRUE(one.ok() && four.ok());
  EXPECT_DOUBLE_EQ(PlanModelFlops(*four), 4 * PlanModelFlops(*one));
}

// Each combination the probe accepts plans, and its linears' backward passes take the paths
// its switches select.
struct PathCase {
  std::string name;
  PlanSpecOptions options;
  std::set<NormLinearBackwardPath> norm;
  std::set<RowLinearBackwardPath> row;
};

class StepPlanPathTest : public testing::TestWithParam<PathCase> {};

TEST_P(StepPlanPathTest, TakesThePathsOfItsSwitches) {
  const PathCase& c = GetParam();
  const StepPlan plan = PlanOf(c.options, 0);
  EXPECT_EQ(std::set<NormLinearBackwardPath>(plan.norm_linear_backward_paths.begin(),
                                             plan.norm_linear_backward_paths.end()),
            c.norm);
  EXPECT_EQ(std::set<RowLinearBackwardPath>(plan.row_linear_backward_paths.begin(),
                                            plan.row_linear_backward_paths.end()),
            c.row);
}

std::vector<PathCase> PathCases() {
  using N = NormLinearBackwardPath;
  using R = RowLinearBackwardPath;
  std::vector<PathCase> cases;
  PlanSpecOptions tp2 = SmallPlanSpecOptions();
  tp2.tp = 2;
  // The LM head's backward is always bf16 and exposed.
  cases.push_back({"bf16_sp", tp2, {N::kBf16}, {R::kBf16}});
  PlanSpecOptions no_sp = tp2;
  no_sp.sequence_parallel = false;
  cases.push_back({"bf16_no_sp", no_sp, {N::kBf16}, {R::kBf16}});
  PlanSpecOptions overlap = tp2;
  overlap.tp_comm_overlap = true;
  cases.push_back({"bf16_overlap", overlap, {N::kBf16, N::kBf16Overlapped}, {R::kBf16Overlapped}});
  PlanSpecOptions fp8 = tp2;
  fp8.fp8 = true;
  cases.push_back({"fp8_sp", fp8, {N::kBf16, N::kFp8}, {R::kFp8SequenceParallel}});
  PlanSpecOptions fp8_no_sp = fp8;
  fp8_no_sp.sequence_parallel = false;
  cases.push_back({"fp8_no_sp", fp8_no_sp, {N::kBf16, N::kFp8}, {R::kFp8}});
  PlanSpecOptions fp8_overlap = fp8;
  fp8_overlap.tp_comm_overlap = true;
  cases.push_back({"fp8_overlap", fp8_overlap, {N::kBf16, N::kFp8Overlapped}, {R::kFp8Overlapped}});
  PlanSpecOptions fp8_parameters = fp8;
  fp8_parameters.dp = 2;
  fp8_parameters.fp8_param_gather = true;
  cases.push_back(
      {"fp8_parameters", fp8_parameters, {N::kBf16, N::kFp8}, {R::kFp8SequenceParallel}});
  PlanSpecOptions ring = SmallPlanSpecOptions();
  ring.cp = 2;
  cases.push_back({"cp_ring", ring, {N::kBf16}, {R::kBf16}});
  PlanSpecOptions all_gather = ring;
  all_gather.cp_all_gather = true;
  cases.push_back({"cp_all_gather", all_gather, {N::kBf16}, {R::kBf16}});
  PlanSpecOptions dp = SmallPlanSpecOptions();
  dp.dp = 2;
  cases.push_back({"dp_distributed", dp, {N::kBf16}, {R::kBf16}});
  PlanSpecOptions dp_plain = dp;
  dp_plain.distributed_optimizer = false;
  cases.push_back({"dp_plain", dp_plain, {N::kBf16}, {R::kBf16}});
  PlanSpecOptions interleaved = SmallPlanSpecOptions();
  interleaved.pp = 2;
  interleaved.virtual_pipeline = 2;
  interleaved.global_batch = 4;
  cases.push_back({"interleaved", interleaved, {N::kBf16}, {R::kBf16}});
  PlanSpecOptions selective = SmallPlanSpecOptions();
  selective.recompute = v1::RECOMPUTE_SELECTIVE;
  cases.push_back({"selective", selective, {N::kBf16}, {R::kBf16}});
  PlanSpecOptions full = SmallPlanSpecOptions();
  full.recompute = v1::RECOMPUTE_FULL;
  cases.push_back({"full", full, {N::kBf16}, {R::kBf16}});
  PlanSpecOptions replica = tp2;
  replica.dp = 2;
  replica.replica = true;
  cases.push_back({"replica", replica, {N::kBf16}, {R::kBf16}});
  // Sharded weights under the other switches: every linear reads its gathered slot, in a
  // recomputed forward too (stage 0: no LM head).
  PlanSpecOptions sharded = overlap;
  sharded.dp = 2;
  sharded.pp = 2;
  sharded.virtual_pipeline = 2;
  sharded.global_batch = 8;
  sharded.recompute = v1::RECOMPUTE_FULL;
  sharded.dp_sharding = v1::DP_SHARDING_FULL;
  cases.push_back({"sharded_full", sharded, {N::kBf16Overlapped}, {R::kBf16Overlapped}});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Combinations, StepPlanPathTest, testing::ValuesIn(PathCases()),
                         [](const testing::TestParamInfo<PathCase>& info) {
                           return info.param.name;
                         });

// The plans run StageRunner itself (through RecordingDeviceOps): together the cases above take
// every path of its two linear backward passes, 4 + 5 of them.
TEST(StepPlanPathTest, TheCasesRunEveryPathOfTheRunner) {
  std::set<NormLinearBackwardPath> norm;
  std::set<RowLinearBackwardPath> row;
  for (const PathCase& c : PathCases()) {
    const StepPlan plan = PlanOf(c.options, 0);
    norm.insert(plan.norm_linear_backward_paths.begin(), plan.norm_linear_backward_paths.end());
    row.insert(plan.row_linear_backward_paths.begin(), plan.row_linear_backward_paths.end());
  }
  using N = NormLinearBackwardPath;
  using R = RowLinearBackwardPath;
  EXPECT_EQ(norm, (std::set<N>{N::kFp8Overlapped, N::kFp8, N::kBf16Overlapped, N::kBf16}));
  EXPECT_EQ(row, (std::set<R>{R::kFp8Overlapped, R::kBf16Overlapped, R::kFp8SequenceParallel,
                              R::kFp8, R::kBf16}));
}

// Full recomputation runs every layer's forward again before its backward: one more forward
// of the layers' model FLOPs per micro-batch, and ops marked as recomputed.
TEST(StepPlanTest, FullRecomputeAddsOneLayerForward) {
  PlanSpecOptions options = SmallPlanSpecOptions();
  const StepPlan plain = PlanOf(options, 0);
  options.recompute = v1::RECOMPUTE_FULL;
  const StepPlan full = PlanOf(options, 0);
  absl::StatusOr<ProbeSpec> spec = PlanSpecOf(options);
  ASSERT_TRUE(spec.ok());
  const ShardShapes shapes = ComputeShardShapes(spec->model(), spec->training(), spec->config());
  EXPECT_DOUBLE_EQ(
      PlanModelFlops(full) - PlanModelFlops(plain),
      spec->micro_batches() * spec->model().num_layers() * LayerForwardModelFlops(shapes));
  int64_t recomputed = 0;
  for (const StepOp& op : full.ops) recomputed += op.context.recompute ? 1 : 0;
  EXPECT_GT(recomputed, 0);
}

// Without the overlap a FULL probe with dp > 1 reduces and gathers each region after the
// schedule on the compute stream; with it, on the data-parallel stream.
TEST(StepPlanTest, DataParallelCollectivesRunWhereTheOverlapSays) {
  PlanSpecOptions options = SmallPlanSpecOptions();
  options.dp = 2;
  const StepPlan plan = PlanOf(options, 0);
  std::set<StepStream> streams;
  for (const CollectiveOp& op : OpsOf<CollectiveOp>(plan)) {
    if (op.family == CollectiveFamily::kData) streams.insert(op.stream);
  }
  // ProbeSpec::data_parallel_overlap: --overlap-grad-reduce always.
  EXPECT_EQ(streams, std::set<StepStream>{StepStream::kDataParallel});
  options.replica = true;
  for (const CollectiveOp& op : OpsOf<CollectiveOp>(PlanOf(options, 0))) {
    EXPECT_NE(op.family, CollectiveFamily::kData) << op.what;
  }
}

// The small model on two interleaved stages of two chunks, dp 2, 4 micro-batches per step.
PlanSpecOptions InterleavedDataParallelOptions() {
  PlanSpecOptions options = SmallPlanSpecOptions();
  options.pp = 2;
  options.dp = 2;
  options.virtual_pipeline = 2;
  options.global_batch = 8;
  return options;
}

// Every step of the data-parallel plan is issued, the reductions' wait last before the
// optimizer (a step-end point carrying the schedule's pass count would never be reached:
// DataParallelSync::Finish's INTERNAL on the device).
TEST(StepPlanTest, WaitsForTheReductionsBeforeTheOptimizer) {
  const PlanSpecOptions options = InterleavedDataParallelOptions();
  for (int64_t rank : {0, 2}) {
    const StepPlan plan = PlanOf(options, rank);
    int64_t waits = 0;
    size_t last_wait = 0;
    size_t first_adam = plan.ops.size();
    for (size_t i = 0; i < plan.ops.size(); ++i) {
      const auto* wait = std::get_if<WaitOp>(&plan.ops[i].detail);
      if (wait != nullptr && wait->what == "gradient reductions") {
        ++waits;
        last_wait = i;
      }
      if (std::holds_alternative<OptimizerOp>(plan.ops[i].detail)) {
        first_adam = std::min(first_adam, i);
      }
    }
    EXPECT_EQ(waits, 1) << rank;
    EXPECT_LT(last_wait, first_adam) << rank;
  }
}

// Runs `check` on the plans of ranks 0 and 2 (the two stages) of InterleavedDataParallelOptions
// under `sharding`, with their stage's footprint and its units' count.
void ForEachShardedStage(
    v1::DataParallelSharding sharding,
    const std::function<void(int64_t rank, const ProbeSpec& spec, const FootprintPlan& footprint,
                             int64_t units, const StepPlan& plan)>& check) {
  PlanSpecOptions options = InterleavedDataParallelOptions();
  options.dp_sharding = sharding;
  absl::StatusOr<ProbeSpec> spec = PlanSpecOf(options);
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_TRUE(CheckCudaProbeRuns(*spec).ok()) << CheckCudaProbeRuns(*spec);
  for (int64_t rank : {0, 2}) {
    const FootprintPlan footprint = RankFootprintOf(*spec, rank);
    check(rank, *spec, footprint, ChunkUnitsOf(footprint.stage_layers()).back().end(),
          PlanOf(options, rank));
  }
}

// Under sharded gradients (ZeRO-2) every unit's backward, in every micro-batch, stages its
// gradients and reduce-scatters them on the compute stream, m x the stage's padded gradient
// bytes in all; the parameters are gathered once, after Adam; nothing waits on another stream.
TEST(StepPlanTest, ShardedGradientsReduceEveryUnitInEveryMicroBatch) {
  ForEachShardedStage(v1::DP_SHARDING_GRADIENTS, [](int64_t rank, const ProbeSpec& spec,
                                                    const FootprintPlan& footprint, int64_t units,
                                                    const StepPlan& plan) {
    const int64_t m = spec.micro_batches();
    int64_t reductions = 0;
    double reduced_bytes = 0;
    double gathered_bytes = 0;
    for (const CollectiveOp& op : OpsOf<CollectiveOp>(plan)) {
      if (op.family != CollectiveFamily::kData) continue;
      EXPECT_EQ(op.stream, StepStream::kCompute) << op.what;
      if (op.kind == CollectiveKind::kReduceScatter) {
        ++reductions;
        reduced_bytes += static_cast<double>(op.bytes);
      } else {
        EXPECT_EQ(op.kind, CollectiveKind::kAllGather) << op.what;
        gathered_bytes += static_cast<double>(op.bytes);
      }
    }
    const double padded = static_cast<double>(footprint.parameters().padded_elements);
    EXPECT_EQ(reductions, m * units) << rank;
    EXPECT_EQ(reduced_bytes, m * 4 * padded) << rank;
    EXPECT_EQ(gathered_bytes, 2 * padded) << rank;
    EXPECT_TRUE(OpsOf<WaitOp>(plan).empty()) << rank;
  });
}

// Under sharded weights (ZeRO-3, FSDP) every unit's forward and backward, in every
// micro-batch, waits for its weights' gather and dispatches the next use's on the data-parallel
// stream, so one gather at a time runs beside the computation and each is waited for once, in
// order: 2 m x the stage's bf16 weights gathered. The gradients are reduce-scattered as under
// sharded gradients; nothing is gathered after Adam.
TEST(StepPlanTest, ShardedWeightsGatherEveryUnitBeforeEachUseOneAhead) {
  ForEachShardedStage(
      v1::DP_SHARDING_FULL, [](int64_t rank, const ProbeSpec& spec, const FootprintPlan& footprint,
                               int64_t units, const StepPlan& plan) {
        const int64_t m = spec.micro_batches();
        int64_t gathers = 0;
        int64_t reductions = 0;
        double gathered_bytes = 0;
        double reduced_bytes = 0;
        std::deque<std::string> pending;  // the gathers dispatched and not yet waited for
        bool adam = false;
        for (const StepOp& op : plan.ops) {
          adam = adam || std::holds_alternative<OptimizerOp>(op.detail);
          if (const auto* wait = std::get_if<WaitOp>(&op.detail)) {
            ASSERT_FALSE(pending.empty()) << rank << " " << wait->what;
            EXPECT_EQ(pending.front().rfind(wait->what + " to slot", 0), 0u) << wait->what;
            pending.pop_front();
          }
          const auto* collective = std::get_if<CollectiveOp>(&op.detail);
          if (collective == nullptr || collective->family != CollectiveFamily::kData) continue;
          EXPECT_FALSE(adam) << rank << " " << collective->what;
          if (collective->kind == CollectiveKind::kAllGather) {
            EXPECT_EQ(collective->stream, StepStream::kDataParallel) << collective->what;
            ++gathers;
            gathered_bytes += static_cast<double>(collective->bytes);
            pending.push_back(collective->what);
            EXPECT_LE(pending.size(), 1u) << rank << " " << collective->what;
          } else {
            EXPECT_EQ(collective->kind, CollectiveKind::kReduceScatter) << collective->what;
            EXPECT_EQ(collective->stream, StepStream::kCompute) << collective->what;
            ++reductions;
            reduced_bytes += static_cast<double>(collective->bytes);
          }
        }
        const double padded = static_cast<double>(footprint.parameters().padded_elements);
        EXPECT_TRUE(pending.empty()) << rank;
        EXPECT_EQ(gathers, 2 * m * units) << rank;
        EXPECT_EQ(gathered_bytes, 2 * m * 2 * padded) << rank;
        EXPECT_EQ(reductions, m * units) << rank;
        EXPECT_EQ(reduced_bytes, m * 4 * padded) << rank;
        EXPECT_EQ(static_cast<int64_t>(OpsOf<OptimizerOp>(plan).size()), units) << rank;
      });
}

// Without a data-parallel collective (one data-parallel rank here; a REPLICA probe alike) a
// sharded rank holds the whole of each unit: every use copies its shard into the slot on the
// compute stream, and nothing waits.
TEST(StepPlanTest, ShardedWeightsOfOneRankAreCopiedToTheirSlots) {
  PlanSpecOptions options = InterleavedDataParallelOptions();
  options.dp = 1;
  options.global_batch = 4;
  options.dp_sharding = v1::DP_SHARDING_FULL;
  absl::StatusOr<ProbeSpec> spec = PlanSpecOf(options);
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_TRUE(CheckCudaProbeRuns(*spec).ok()) << CheckCudaProbeRuns(*spec);
  const FootprintPlan footprint = RankFootprintOf(*spec, 0);
  const int64_t units = ChunkUnitsOf(footprint.stage_layers()).back().end();
  const StepPlan plan = PlanOf(options, 0);
  int64_t copied = 0;
  for (const ElementwiseOp& op : OpsOf<ElementwiseOp>(plan)) {
    if (op.what.rfind("copy bucket ", 0) == 0) copied += op.elements;
  }
  EXPECT_EQ(copied, 2 * spec->micro_batches() * footprint.parameters().padded_elements);
  EXPECT_EQ(static_cast<int64_t>(OpsOf<OptimizerOp>(plan).size()), units);
  EXPECT_TRUE(OpsOf<WaitOp>(plan).empty());
  for (const CollectiveOp& op : OpsOf<CollectiveOp>(plan)) {
    EXPECT_NE(op.family, CollectiveFamily::kData) << op.what;
  }
}

TEST(StepPlanTest, DescribesOpsOnOneLine) {
  const StepPlan plan = PlanOf(SmallPlanSpecOptions(), 0);
  for (const StepOp& op : plan.ops) {
    const std::string line = DescribeOp(op);
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  }
  EXPECT_EQ(DescribeOp(plan.ops.front()),
            "step: elementwise zero gradients " +
                std::to_string(RankFootprintOf(*PlanSpecOf(SmallPlanSpecOptions()), 0)
                                   .parameters()
                                   .padded_elements) +
                " @gradients");
}

// Layers 1 and 2 repeat layer 0 and fold into one line; layer 3 differs, and the same ops in
// another micro-batch start a block of their own.
TEST(DescribeStepsTest, FoldsLayersThatRepeatTheLayerBefore) {
  auto op = [](int64_t micro_batch, int64_t layer, const std::string& what) {
    StepOp step_op;
    step_op.context = {/*pass=*/0, /*chunk=*/0, micro_batch, layer, /*recompute=*/false,
                       /*slot=*/0};
    step_op.detail = ElementwiseOp{what, 8};
    return step_op;
  };
  StepPlan plan;
  for (int64_t layer = 0; layer < 3; ++layer) {
    plan.ops.push_back(op(0, layer, "rmsnorm"));
    plan.ops.push_back(op(0, layer, "swiglu"));
  }
  plan.ops.push_back(op(0, 3, "rmsnorm"));
  plan.ops.push_back(op(1, 4, "rmsnorm"));
  plan.ops.push_back(op(1, 5, "rmsnorm"));
  StepOp step_end;
  step_end.detail = ElementwiseOp{"zero gradients", 8};
  plan.ops.push_back(step_end);
  EXPECT_THAT(DescribeSteps(plan), testing::ElementsAre("p0 c0 mb0 s0 L0: elementwise rmsnorm 8",
                                                        "p0 c0 mb0 s0 L0: elementwise swiglu 8",
                                                        "p0 c0 mb0 s0 L1..L2: as L0 (2 ops each)",
                                                        "p0 c0 mb0 s0 L3: elementwise rmsnorm 8",
                                                        "p0 c0 mb1 s0 L4: elementwise rmsnorm 8",
                                                        "p0 c0 mb1 s0 L5: as L4 (1 op)",
                                                        "step: elementwise zero gradients 8"));
}

}  // namespace
}  // namespace paratune
