// DataParallelSync on one GPU. With one rank the collectives leave the buffers as they are,
// so the test checks the mechanics that a multi-GPU probe relies on: every plan step issues
// (NCCL on the communication stream, events both ways) without error and is reached, and each
// bucket ends holding exactly its last backward write, computed on the CPU (fill_values.h),
// with the weights untouched. An ordering error (a reduction before the compute stream's last
// write to its bucket) shows only where NCCL rewrites a one-rank buffer in place; the plan's
// order itself is checked on the CPU (overlap_plan_test).
#include <cuda_bf16.h>
#include <nccl.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "estimator/cluster_spec.h"
#include "estimator/model_spec.h"
#include "estimator/parallel_config.h"
#include "estimator/training_spec.h"
#include "gtest/gtest.h"
#include "worker/cuda/data_parallel_sync.h"
#include "worker/cuda/fill_kernels.h"
#include "worker/cuda/fill_values.h"
#include "worker/cuda/gpu_test_util.h"
#include "worker/cuda/phase_timer.h"
#include "worker/probe/overlap_plan.h"
#include "worker/probe/parameter_layout.h"
#include "worker/probe/pipeline_schedule.h"
#include "worker/probe/shard_shapes.h"

namespace paratune {
namespace {

using bf16 = __nv_bfloat16;

// Llama-3.2-1B at tensor parallelism 8 on one stage: 16 layers and the embedding, about 190M
// parameters in several 40M-element buckets; with fp8 parameters the linear weights' buckets
// are a region of one byte per element apart from the bf16 one.
ParameterLayout LayoutOf(StageLayers* layers, bool fp8_parameters) {
  const ModelSpec model = *FindModelPreset("llama3.2-1b");
  TrainingOptions options;
  options.global_batch_size = 8;
  options.seq_len = 2048;
  const TrainingSpec training = *TrainingSpec::Create(options);
  ParallelDims dims;
  dims.tp = 8;
  const ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 1, 8);
  const ParallelConfig config =
      *ParallelConfig::Create(model, training, cluster, PlacementRules(), dims);
  *layers = StageLayersOf(model, config, 0);
  return LayoutParameters(ComputeShardShapes(model, training, config), *layers,
                          model.tied_embeddings(), 1, fp8_parameters);
}

// Walks a step as the stage runner does: a unit's backward rewrites every bucket holding the
// unit (so a bucket's last write is its first unit's backward in the last pass), and `sync`
// issues the plan's steps in its order, each when the walk reaches its point.
void RunStep(const DataParallelPlan& plan, const std::vector<ScheduleStep>& schedule,
             bf16* gradients, cudaStream_t compute, DataParallelSync& sync) {
  size_t next = 0;
  auto reach = [&](PlanPointKind kind, int64_t pass, int64_t unit) {
    const PlanPoint point{kind, pass, unit};
    for (; next < plan.steps.size() && plan.steps[next].point == point; ++next) {
      ASSERT_TRUE(sync.Issue(plan.steps[next]).ok());
    }
  };
  reach(PlanPointKind::kStepStart, 0, 0);
  int64_t pass = 0;
  for (const ScheduleStep& step : schedule) {
    if (!step.pass.has_value()) continue;
    reach(PlanPointKind::kBeforePass, pass, 0);
    const ChunkUnits& units = plan.chunks[step.pass->chunk];
    if (step.pass->direction == PassDirection::kForward) {
      for (int64_t u = units.first; u < units.end(); ++u) {
        reach(PlanPointKind::kBeforeForward, pass, u);
      }
    } else {
      for (int64_t u = units.end() - 1; u >= units.first; --u) {
        for (const ParameterBucket& bucket : plan.buckets) {
          if (bucket.first_unit > u || u > bucket.last_unit) continue;
          ASSERT_EQ(FillUniformBf16(gradients + bucket.start, bucket.end - bucket.start,
                                    static_cast<uint64_t>(pass * 1000 + u), 1.0f, compute),
                    cudaSuccess);
        }
        reach(PlanPointKind::kAfterBackward, pass, u);
      }
    }
    reach(PlanPointKind::kAfterPass, pass, 0);
    ++pass;
  }
  reach(PlanPointKind::kStepEnd, 0, 0);
  EXPECT_EQ(next, plan.steps.size()) << "a plan step's point was never reached";
}

// What RunStep leaves in the gradients of each bucket, on the CPU: a bucket's last write is its
// first unit's backward in the step's last pass, the whole stage being one chunk. Elements
// outside every bucket are not compared (nullopt).
std::vector<std::optional<uint16_t>> ExpectedGradientBits(const DataParallelPlan& plan,
                                                          const std::vector<ScheduleStep>& schedule,
                                                          int64_t elements) {
  int64_t passes = 0;
  for (const ScheduleStep& step : schedule) passes += step.pass.has_value();
  std::vector<std::optional<uint16_t>> bits(elements);
  for (const ParameterBucket& bucket : plan.buckets) {
    const uint64_t seed = static_cast<uint64_t>((passes - 1) * 1000 + bucket.first_unit);
    for (int64_t i = bucket.start; i < bucket.end; ++i) {
      const bf16 value = __float2bfloat16(FillUniformValue(seed, i - bucket.start, 1.0f));
      uint16_t value_bits = 0;
      std::memcpy(&value_bits, &value, sizeof(value_bits));
      bits[i] = value_bits;
    }
  }
  return bits;
}

// Elements whose bits differ from the expected ones (where one is expected).
int64_t Mismatches(const std::vector<bf16>& values,
                   const std::vector<std::optional<uint16_t>>& expected) {
  int64_t differ = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!expected[i].has_value()) continue;
    uint16_t bits = 0;
    std::memcpy(&bits, &values[i], sizeof(bits));
    differ += bits != *expected[i];
  }
  return differ;
}

class DataParallelSyncGpuTest : public ::testing::TestWithParam<bool> {};

TEST_P(DataParallelSyncGpuTest, OverlappedStepOnOneRankLeavesEachBucketsLastWrite) {
  StageLayers layers;
  const ParameterLayout parameters = LayoutOf(&layers, /*fp8_parameters=*/GetParam());
  const std::vector<ScheduleStep> schedule = PipelineScheduleOf(1, 1, 2, 0);
  const OverlapOptions options = {true, true, true};
  const DataParallelPlan plan =
      DataParallelPlanOf(parameters, layers, true, schedule, 0, 1, 1, options, ReducedGroups());
  ASSERT_GT(plan.buckets.size(), 2u);

  ncclComm_t comm = nullptr;
  const int device = 0;
  ASSERT_EQ(ncclCommInitAll(&comm, 1, &device), ncclSuccess);
  cudaStream_t compute = nullptr;
  cudaStream_t communication = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&communication, cudaStreamNonBlocking), cudaSuccess);
  const int64_t elements = parameters.padded_elements;
  DeviceArray<uint8_t> weights(parameters.weight_bytes);
  DeviceArray<bf16> gradients(elements);
  // The arrays are poisoned on the legacy stream, which the non-blocking streams ignore.
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // Random bytes: the gathers move them whatever they encode.
  ASSERT_EQ(FillUniformBf16(reinterpret_cast<bf16*>(weights.get()), parameters.weight_bytes / 2, 7,
                            0.02f, compute),
            cudaSuccess);
  const std::vector<uint8_t> weights_before = weights.ToHost();

  PhaseTimer timer(compute);
  DataParallelBuffers buffers;
  buffers.data_context.comm = comm;
  buffers.parameters = &parameters;
  buffers.weights = reinterpret_cast<char*>(weights.get());
  buffers.gradients = gradients.get();
  buffers.fp32_gradients = false;
  buffers.compute = compute;
  buffers.communication = communication;
  {
    absl::StatusOr<std::unique_ptr<DataParallelSync>> sync =
        DataParallelSync::Create(buffers, plan.buckets, &timer);
    ASSERT_TRUE(sync.ok()) << sync.status();
    // Two steps, the second timed by phase, as the probe's instrumented step is.
    RunStep(plan, schedule, gradients.get(), compute, **sync);
    timer.Start();
    RunStep(plan, schedule, gradients.get(), compute, **sync);
    ASSERT_TRUE(timer.Stop().ok());
    ASSERT_EQ(cudaStreamSynchronize(compute), cudaSuccess);
    absl::StatusOr<std::array<double, static_cast<int>(ProbePhase::kCount)>> phases =
        timer.Seconds();
    ASSERT_TRUE(phases.ok()) << phases.status();
    EXPECT_GE((*phases)[static_cast<int>(ProbePhase::kDpCollectives)], 0.0);
  }
  EXPECT_EQ(Mismatches(gradients.ToHost(), ExpectedGradientBits(plan, schedule, elements)), 0);
  EXPECT_EQ(weights.ToHost(), weights_before);

  EXPECT_EQ(cudaStreamDestroy(communication), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(compute), cudaSuccess);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

INSTANTIATE_TEST_SUITE_P(Fp8Parameters, DataParallelSyncGpuTest, ::testing::Bool());

// ReduceScatterShard on one rank, whose shard group and replica group are the same one-rank
// communicator: the reduce-scatter and the replicas' all-reduce both run (hybrid sharding) and
// leave the shard as it was; without replicas only the reduce-scatter does.
TEST(ReduceScatterShardGpuTest, HybridShardingReducesTheShardOverTheReplicas) {
  ncclComm_t comm = nullptr;
  const int device = 0;
  ASSERT_EQ(ncclCommInitAll(&comm, 1, &device), ncclSuccess);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  constexpr int64_t kElements = 4096;
  DeviceArray<bf16> gradients(kElements);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(FillUniformBf16(gradients.get(), kElements, 11, 1.0f, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  const std::vector<bf16> before = gradients.ToHost();
  for (ncclComm_t replicas : {comm, static_cast<ncclComm_t>(nullptr)}) {
    const DataParallelGroup group{comm, 0, replicas};
    ASSERT_TRUE(
        ReduceScatterShard(group, gradients.get(), gradients.get(), kElements, ncclBfloat16, stream)
            .ok());
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const std::vector<bf16> after = gradients.ToHost();
    EXPECT_EQ(std::memcmp(after.data(), before.data(), kElements * sizeof(bf16)), 0);
  }
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

}  // namespace
}  // namespace paratune
