#include "worker/probe/stage_runner.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/probe/recording_device_ops.h"
#include "worker/probe/step_plan_specs.h"

namespace paratune {
namespace {

std::vector<std::string> Lines(const std::vector<StepOp>& ops) {
  std::vector<std::string> lines;
  for (const StepOp& op : ops) lines.push_back(DescribeOp(op));
  return lines;
}

// A runner's steps leave nothing behind: slots, loss slots, the data-parallel plan's progress
// and the fp8 weight casts start afresh, so the second step asks for exactly the first's work,
// and a short count between them for less (4 of 8 micro-batches, a count CheckCudaProbeRuns
// accepts).
void ExpectConsecutiveStepsAskForTheSameWork(const PlanSpecOptions& options) {
  absl::StatusOr<ProbeSpec> spec = PlanSpecOf(options);
  ASSERT_TRUE(spec.ok()) << spec.status();
  for (int64_t rank : {0, 7}) {
    const FootprintPlan footprint = RankFootprintOf(*spec, rank);
    const OptimizerLayout optimizer = OptimizerLayoutOf(*spec, footprint, rank);
    absl::StatusOr<std::unique_ptr<RecordingDeviceOps>> recording =
        RecordingDeviceOps::Create(*spec, footprint, optimizer, rank);
    ASSERT_TRUE(recording.ok()) << recording.status();
    absl::StatusOr<std::unique_ptr<StageRunner>> runner =
        StageRunner::Create(*spec, footprint, optimizer, rank, recording->get());
    ASSERT_TRUE(runner.ok()) << runner.status();
    ASSERT_TRUE((*runner)->Step().ok());
    const std::vector<std::string> first = Lines((*recording)->TakeOps());
    (*runner)->SetMicroBatches(4);
    ASSERT_TRUE((*runner)->Step().ok());
    const std::vector<std::string> short_step = Lines((*recording)->TakeOps());
    (*runner)->SetMicroBatches(spec->micro_batches());
    ASSERT_TRUE((*runner)->Step().ok());
    EXPECT_EQ(Lines((*recording)->TakeOps()), first) << rank;
    EXPECT_LT(short_step.size(), first.size()) << rank;
  }
}

PlanSpecOptions InterleavedOptions() {
  PlanSpecOptions options = SmallPlanSpecOptions();
  options.pp = 2;
  options.dp = 2;
  options.tp = 2;
  options.virtual_pipeline = 2;
  options.global_batch = 16;
  return options;
}

TEST(StageRunnerTest, ConsecutiveStepsAskForTheSameWork) {
  PlanSpecOptions options = InterleavedOptions();
  options.fp8 = true;
  ExpectConsecutiveStepsAskForTheSameWork(options);
}

// Under sharded weights the weight gather plan starts afresh too, for each count its own.
TEST(StageRunnerTest, ConsecutiveShardedStepsAskForTheSameWork) {
  PlanSpecOptions options = InterleavedOptions();
  options.dp_sharding = v1::DP_SHARDING_FULL;
  ExpectConsecutiveStepsAskForTheSameWork(options);
}

// A footprint sized for fewer micro-batches holds fewer activation slots than the full step's
// 1F1B warm-up takes on the first stage: the step stops with INTERNAL naming the slot, as the
// device would have written over a live pass's activations.
TEST(StageRunnerTest, StopsWhereTheFootprintHoldsTooFewSlots) {
  PlanSpecOptions options = SmallPlanSpecOptions();
  options.pp = 4;
  options.global_batch = 8;
  absl::StatusOr<ProbeSpec> spec = PlanSpecOf(options);
  options.global_batch = 2;
  absl::StatusOr<ProbeSpec> small = PlanSpecOf(options);
  ASSERT_TRUE(spec.ok() && small.ok());
  const FootprintPlan footprint = RankFootprintOf(*small, 0);
  ASSERT_LT(footprint.activation_slots(), RankFootprintOf(*spec, 0).activation_slots());
  const OptimizerLayout optimizer = OptimizerLayoutOf(*spec, footprint, 0);
  absl::StatusOr<std::unique_ptr<RecordingDeviceOps>> recording =
      RecordingDeviceOps::Create(*spec, footprint, optimizer, 0);
  ASSERT_TRUE(recording.ok()) << recording.status();
  absl::StatusOr<std::unique_ptr<StageRunner>> runner =
      StageRunner::Create(*spec, footprint, optimizer, 0, recording->get());
  ASSERT_TRUE(runner.ok()) << runner.status();
  const absl::Status status = (*runner)->Step();
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(status.message()), testing::HasSubstr("no free activation slot"));
}

// A runner is made only for a spec the probe's step runs: CheckCudaProbeRuns' error, naming
// the field, for one it does not (here an MoE block beside --tp-comm-overlap).
TEST(StageRunnerTest, CreateRefusesASpecTheProbeDoesNotRun) {
  PlanSpecOptions options = SmallPlanSpecOptions();
  options.model = ShrunkMixtral();
  options.tp = 2;
  options.ep = 2;
  options.etp = 1;
  options.tp_comm_overlap = true;
  absl::StatusOr<ProbeSpec> spec = PlanSpecOf(options);
  ASSERT_TRUE(spec.ok()) << spec.status();
  const FootprintPlan footprint = RankFootprintOf(*spec, 0);
  const OptimizerLayout optimizer = OptimizerLayoutOf(*spec, footprint, 0);
  absl::StatusOr<std::unique_ptr<RecordingDeviceOps>> recording =
      RecordingDeviceOps::Create(*spec, footprint, optimizer, 0);
  ASSERT_TRUE(recording.ok()) << recording.status();
  const absl::StatusOr<std::unique_ptr<StageRunner>> runner =
      StageRunner::Create(*spec, footprint, optimizer, 0, recording->get());
  EXPECT_EQ(runner.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(runner.status().message()),
              testing::HasSubstr("training.tp_comm_overlap"));
}

// The recording checks every place a call names against the footprint's buffers.
TEST(RecordingDeviceOpsTest, RejectsAPlaceOutsideItsBuffer) {
  absl::StatusOr<ProbeSpec> spec = PlanSpecOf(SmallPlanSpecOptions());
  ASSERT_TRUE(spec.ok()) << spec.status();
  const FootprintPlan footprint = RankFootprintOf(*spec, 0);
  const OptimizerLayout optimizer = OptimizerLayoutOf(*spec, footprint, 0);
  absl::StatusOr<std::unique_ptr<RecordingDeviceOps>> recording =
      RecordingDeviceOps::Create(*spec, footprint, optimizer, 0);
  ASSERT_TRUE(recording.ok()) << recording.status();
  const int64_t bytes = footprint.placement(ProbeBuffer::kGathered).bytes;
  const DeviceRef inside{ProbeBuffer::kGathered, bytes - 1};
  const DeviceRef past_the_end{ProbeBuffer::kGathered, bytes};
  EXPECT_TRUE((*recording)->CopyRows(inside, inside, "copy").ok());
  const absl::Status status = (*recording)->CopyRows(inside, past_the_end, "copy");
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(status.message()), testing::HasSubstr(std::to_string(bytes)));
  // No fp8 buffers in bf16 training: a call naming one is caught.
  EXPECT_FALSE((*recording)->CopyRows({ProbeBuffer::kFp8Input, 0}, inside, "copy").ok());
  EXPECT_EQ((*recording)->TakeOps().size(), 1u);
}

}  // namespace
}  // namespace paratune
