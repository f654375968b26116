// StageRunner over the device's own DeviceOps, as the probe runs it (RankStack), on one GPU,
// for every switch of the step one GPU can take, mixture-of-experts models at ep 1 (with a
// capacity factor, with a shared expert), and one replica with sharded gradients, one with
// sharded weights and one with weights sharded within groups (hybrid sharding): what
// the device ran is the step plan's recording (its GEMMs, counted by cuBLASLt calls), and the steps
// train: the first step's loss is the uniform prediction's, ln V, as it must be from weights of
// 0.02 (an independent reference: no GPU path computes it), and ten steps on the same tokens lower
// it. And full sharding at one data-parallel rank trains the weights as the unsharded step does.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "worker/cuda/optimizer_kernels.h"
#include "worker/cuda/rank_stack.h"
#include "worker/probe/probe_spec.h"
#include "worker/probe/step_plan.h"
#include "worker/probe/step_plan_specs.h"

namespace paratune {
namespace {

constexpr int kSteps = 10;

struct Case {
  std::string name;
  PlanSpecOptions options;
};

class StageRunnerGpuTest : public testing::TestWithParam<Case> {};

int64_t PlannedGemms(const StepPlan& plan) {
  int64_t gemms = 0;
  for (const StepOp& op : plan.ops) gemms += std::holds_alternative<GemmOp>(op.detail) ? 1 : 0;
  return gemms;
}

// The mean per-token loss of the step's last micro-batch (CrossEntropyBackward's loss[t],
// after the rows' maxima and sums in kLossStatistics).
double MeanLoss(const RankStack& stack) {
  const int64_t tokens = stack.plan().shapes().tokens;
  std::vector<float> loss(tokens);
  EXPECT_EQ(cudaStreamSynchronize(stack.stream()), cudaSuccess);
  const char* statistics = stack.memory().get<char>(ProbeBuffer::kLossStatistics);
  EXPECT_EQ(cudaMemcpy(loss.data(), statistics + 2 * tokens * sizeof(float), tokens * sizeof(float),
                       cudaMemcpyDeviceToHost),
            cudaSuccess);
  return std::accumulate(loss.begin(), loss.end(), 0.0) / static_cast<double>(tokens);
}

TEST_P(StageRunnerGpuTest, RunsItsPlanAndLearns) {
  const Case& c = GetParam();
  absl::StatusOr<ProbeSpec> spec = PlanSpecOf(c.options);
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->layout().world_size(), 1) << "one GPU";
  ASSERT_TRUE(CheckCudaProbeRuns(*spec).ok()) << CheckCudaProbeRuns(*spec);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  int major = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  if (spec->training().fp8() && major < 9) GTEST_SKIP() << "fp8 needs compute capability 9.0";
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  absl::StatusOr<std::unique_ptr<RankStack>> stack = RankStack::Create(*spec, 0, id);
  ASSERT_TRUE(stack.ok()) << stack.status();
  absl::StatusOr<StepPlan> plan = StepPlanOf(*spec, (*stack)->plan(), 0, spec->micro_batches());
  ASSERT_TRUE(plan.ok()) << plan.status();
  const int64_t planned = PlannedGemms(*plan);
  const Attention& attention = (*stack)->ops().attention();
  // The chunked attention fallback runs its products as cuBLASLt GEMMs too.
  const bool fused = std::string(attention.forward_kernel()) == "cudnn_fused" &&
                     std::string(attention.backward_kernel()) == "cudnn_fused";
  std::vector<double> losses;
  for (int step = 0; step < kSteps; ++step) {
    const int64_t before = (*stack)->gemm().products();
    ASSERT_TRUE((*stack)->runner().Step().ok()) << step;
    const int64_t ran = (*stack)->gemm().products() - before;
    if (fused) {
      EXPECT_EQ(ran, planned) << "step " << step;
    } else {
      EXPECT_GT(ran, planned) << "step " << step << ": " << attention.fallback_reason();
    }
    losses.push_back(MeanLoss(**stack));
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  }
  const double uniform = std::log(static_cast<double>(spec->model().vocab_size()));
  std::printf("%s: attention %s/%s, %lld GEMMs planned per step, loss %.5f -> %.5f (ln V %.5f)\n",
              c.name.c_str(), attention.forward_kernel(), attention.backward_kernel(),
              static_cast<long long>(planned), losses.front(), losses.back(), uniform);
  for (double loss : losses) ASSERT_TRUE(std::isfinite(loss));
  EXPECT_NEAR(losses.front(), uniform, 0.05 * uniform);
  EXPECT_LT(losses.back(), losses.front());
}

// Llama-3.2-1B's dimensions with the LM head untied (a tied one on one stage is the first and
// the last unit's, which data-parallel sharding refuses: CheckCudaProbeRuns).
PlanSpecOptions UntiedLlama1b() {
  PlanSpecOptions options;
  options.preset = "llama3.2-1b";
  options.seq_len = 2048;
  options.model.set_hidden_size(2048);
  options.model.set_ffn_hidden_size(8192);
  options.model.set_num_layers(16);
  options.model.set_num_attention_heads(32);
  options.model.set_num_kv_heads(8);
  options.model.set_vocab_size(128256);
  return options;
}

// The rank's kWeights as fp32 on the host (bf16 values widened).
std::vector<float> HostWeights(const RankStack& stack) {
  const int64_t bytes = stack.plan().placement(ProbeBuffer::kWeights).bytes;
  std::vector<uint16_t> bits(bytes / sizeof(uint16_t));
  EXPECT_EQ(cudaStreamSynchronize(stack.stream()), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(bits.data(), stack.memory().get<char>(ProbeBuffer::kWeights), bytes,
                       cudaMemcpyDeviceToHost),
            cudaSuccess);
  std::vector<float> values(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) {
    const uint32_t widened = static_cast<uint32_t>(bits[i]) << 16;
    std::memcpy(&values[i], &widened, sizeof(float));
  }
  return values;
}

// Full sharding at dp 1: each unit's gather is the copy of its whole shard into a slot, the
// weights start from the values the unsharded step draws (FillUniformBf16Slice), and Adam
// updates the shard. Two steps of two micro-batches move each weight as the unsharded steps
// do: the losses agree, and the weights (at dp 1 the shard's layout is the whole buffer's: one
// bf16 region from byte 0) differ by at most what the gradients' summation order can flip,
// an Adam step each way per step (at most 1.0004 learning_rate in the first two steps with
// beta 0.9 and 0.95), and a bf16 rounding (2^-13 at |w| < 2^-5).
TEST(StageRunnerGpuTest, ShardedWeightsTrainAsWholeWeights) {
  constexpr int kComparedSteps = 2;
  PlanSpecOptions whole = UntiedLlama1b();
  whole.global_batch = 2;
  PlanSpecOptions sharded = whole;
  sharded.dp_sharding = v1::DP_SHARDING_FULL;
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  std::vector<std::vector<float>> weights;
  std::vector<std::vector<double>> losses;
  for (const PlanSpecOptions& options : {whole, sharded}) {
    absl::StatusOr<ProbeSpec> spec = PlanSpecOf(options);
    ASSERT_TRUE(spec.ok()) << spec.status();
    ASSERT_EQ(spec->layout().world_size(), 1) << "one GPU";
    ASSERT_TRUE(CheckCudaProbeRuns(*spec).ok()) << CheckCudaProbeRuns(*spec);
    ncclUniqueId id;
    ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    absl::StatusOr<std::unique_ptr<RankStack>> stack = RankStack::Create(*spec, 0, id);
    ASSERT_TRUE(stack.ok()) << stack.status();
    std::vector<double>& run = losses.emplace_back();
    for (int step = 0; step < kComparedSteps; ++step) {
      ASSERT_TRUE((*stack)->runner().Step().ok()) << step;
      run.push_back(MeanLoss(**stack));
    }
    weights.push_back(HostWeights(**stack));
  }
  for (int step = 0; step < kComparedSteps; ++step) {
    EXPECT_NEAR(losses[1][step], losses[0][step], 1e-3 * losses[0][step]) << step;
  }
  ASSERT_EQ(weights[0].size(), weights[1].size());
  double most = 0;
  for (size_t i = 0; i < weights[0].size(); ++i) {
    most = std::max(most, static_cast<double>(std::abs(weights[1][i] - weights[0][i])));
  }
  const double bound =
      kComparedSteps * 2 * 1.0004 * AdamParameters().learning_rate + std::ldexp(1.0, -13);
  std::printf(
      "sharded weights: losses %.5f %.5f against %.5f %.5f, largest weight difference "
      "%.3g (bound %.3g)\n",
      losses[1][0], losses[1][1], losses[0][0], losses[0][1], most, bound);
  EXPECT_LE(most, bound);
}

std::vector<Case> Cases() {
  PlanSpecOptions bf16;
  bf16.preset = "llama3.2-1b";
  bf16.seq_len = 2048;
  std::vector<Case> cases = {{"bf16", bf16}};
  PlanSpecOptions selective = bf16;
  selective.recompute = v1::RECOMPUTE_SELECTIVE;
  cases.push_back({"selective_recompute", selective});
  PlanSpecOptions full = bf16;
  full.recompute = v1::RECOMPUTE_FULL;
  cases.push_back({"full_recompute", full});
  PlanSpecOptions fp8 = bf16;
  fp8.fp8 = true;
  cases.push_back({"fp8", fp8});
  // One replica of a dp 2 run: fp8 weights cast from the master shards each step.
  PlanSpecOptions fp8_parameters = fp8;
  fp8_parameters.dp = 2;
  fp8_parameters.replica = true;
  fp8_parameters.fp8_param_gather = true;
  cases.push_back({"fp8_parameters", fp8_parameters});
  // Mixtral's proportions shrunk to one GPU, ep 1: every layer's MoE block, its all-to-alls
  // copies over the expert group of one rank, eight local experts sorted by expert.
  PlanSpecOptions moe = bf16;
  moe.model = ShrunkMixtral();
  cases.push_back({"moe_ep1", moe});
  // The same with a capacity factor of 1.25: each expert's 512 copies padded to 640 slots.
  PlanSpecOptions capacity = moe;
  capacity.moe_capacity_factor = 1.25;
  cases.push_back({"moe_capacity_ep1", capacity});
  // Llama 4's proportions shrunk to one GPU, ep 1: a dense layer, then an MoE layer whose
  // shared expert (the dense MLP's GEMMs and SwiGLU at its own width) runs beside sixteen local
  // experts under a sigmoid top-1 router.
  PlanSpecOptions shared_expert = bf16;
  shared_expert.model = ShrunkLlama4();
  cases.push_back({"moe_shared_expert_ep1", shared_expert});
  // One replica of a dp 2 run with sharded gradients (ZeRO-2): each unit's gradients staged,
  // the rank's half of them accumulated into its shard, Adam over it.
  PlanSpecOptions sharded_gradients = UntiedLlama1b();
  sharded_gradients.dp = 2;
  sharded_gradients.global_batch = 4;
  sharded_gradients.replica = true;
  sharded_gradients.dp_sharding = v1::DP_SHARDING_GRADIENTS;
  cases.push_back({"sharded_gradients", sharded_gradients});
  // The same with sharded weights (ZeRO-3): each unit's use copies the rank's half of its
  // weights into a gathered-weight slot whose other half holds stand-ins (the replica gathers
  // nothing), Adam updates the half.
  PlanSpecOptions sharded_full = sharded_gradients;
  sharded_full.dp_sharding = v1::DP_SHARDING_FULL;
  cases.push_back({"sharded_full", sharded_full});
  // One replica of a dp 8 run sharded in groups of four (hybrid sharding, dp_shard_group 4):
  // the rank's quarter of each unit, as in the group it shards over (the replicas' all-reduce,
  // like the gathers, is the REPLICA probe's model).
  PlanSpecOptions hybrid_full = sharded_full;
  hybrid_full.dp = 8;
  hybrid_full.global_batch = 16;
  hybrid_full.dp_shard_group = 4;
  cases.push_back({"hybrid_full", hybrid_full});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(OneGpu, StageRunnerGpuTest, testing::ValuesIn(Cases()),
                         [](const testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace paratune
