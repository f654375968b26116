#include "worker/training_log.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TrainingLogPatterns Patterns(const v1::LogPatterns& proto = v1::LogPatterns()) {
  absl::StatusOr<TrainingLogPatterns> patterns =
      TrainingLogPatterns::Create(proto, "command_templates[0].log");
  EXPECT_TRUE(patterns.ok()) << patterns.status();
  return *std::move(patterns);
}

TEST(TrainingLogTest, MegatronLogsAreReadByDefault) {
  const TrainingLogPatterns patterns = Patterns();
  TrainingLog log(patterns);
  log.AddLine(
      " [2026-11-22 12:00:01] iteration        1/       3 | consumed samples: 1024 | "
      "elapsed time per iteration (ms): 14523.7 | throughput per GPU (TFLOP/s/GPU): 410.2 |");
  log.AddLine(
      "[Rank 0] (after 1 iterations) memory (MB) | allocated: 30000.5 | max allocated: "
      "52000.0 | reserved: 60000.0 | max reserved: 61440.0");
  log.AddLine("[Rank 4] (after 1 iterations) memory (MB) | max reserved: 70000.0");
  log.AddLine(" iteration        2/       3 | elapsed time per iteration (ms): 1.4e4 |");
  log.AddLine("elapsed time per iteration (ms): nan");
  EXPECT_THAT(log.step_times_seconds(),
              ElementsAre(DoubleNear(14.5237, 1e-9), DoubleNear(14.0, 1e-9)));
  EXPECT_DOUBLE_EQ(log.peak_memory_bytes(), 70000.0 * 1024 * 1024);
  EXPECT_TRUE(log.out_of_memory_line().empty());
  EXPECT_TRUE(log.nccl_error_line().empty());
}

// The iteration line of Megatron-LM core_v0.19.0 for an MoE run, built from its format
// strings (megatron/training/training.py:2845-2897): the router's losses printed with the
// other losses (MoEMetricsTracker.report moves every metric ending in "loss" there,
// megatron/core/transformer/moe/moe_logging.py:195-211), its other metrics, here percentiles
// over the layers, as " name: value |" before the loss scale (moe_logging.py:384); then the
// memory report. The router's metrics are no step time and no memory. Constructed, not a
// captured log: no public core_v0.19.0 MoE log with z_loss and percentiles was found.
TEST(TrainingLogTest, MixtureOfExpertsMetricsOfTheReleaseAreNotStepTimes) {
  const TrainingLogPatterns patterns = Patterns();
  TrainingLog log(patterns);
  log.AddLine(
      " [2026-11-29 05:00:00] iteration       10/      20 | consumed samples:        10240 | "
      "elapsed time per iteration (ms): 2210.4 | throughput per GPU (TFLOP/s/GPU): 301.7 | "
      "learning rate: 3.000000E-04 | global batch size:  1024 | lm loss: 1.052110E+01 | "
      "load_balancing_loss: 1.020000E+00 | z_loss: 4.300000E-01 | load_balancing_loss_p50: 1.01 | "
      "load_balancing_loss_p95: 1.09 | loss scale: 1.0 | grad norm: 2.113 | "
      "number of skipped iterations:   0 | number of nan iterations:   0 |");
  log.AddLine(
      "[Rank 0] (after 10 iterations) memory (MB) | allocated: 41000.0 | max allocated: "
      "62000.0 | reserved: 70000.0 | max reserved: 71234.0");
  EXPECT_THAT(log.step_times_seconds(), ElementsAre(DoubleNear(2.2104, 1e-9)));
  EXPECT_DOUBLE_EQ(log.peak_memory_bytes(), 71234.0 * 1024 * 1024);
}

TEST(TrainingLogTest, EveryOccurrenceInALineCountsAndTextAfterTheValueMustFollow) {
  v1::LogPatterns proto;
  proto.mutable_step_time()->set_pattern("step took {value} ms;");
  proto.mutable_step_time()->set_unit(0.001);
  const TrainingLogPatterns patterns = Patterns(proto);
  TrainingLog log(patterns);
  log.AddLine("step took 10 ms; step took 20 ms; step took 30 s; step took ms; step took 40 ms;");
  EXPECT_THAT(log.step_times_seconds(), ElementsAre(0.01, 0.02, 0.04));
}

TEST(TrainingLogTest, NemoProgressLinesWithACustomPattern) {
  v1::LogPatterns proto;
  proto.mutable_step_time()->set_pattern("train_step_timing in s: {value}");
  proto.mutable_step_time()->set_unit(1);
  const TrainingLogPatterns patterns = Patterns(proto);
  TrainingLog log(patterns);
  log.AddLine(
      "Training epoch 0, iteration 3/9 | lr: 1.499e-07 | global_step: 3 | "
      "reduced_train_loss: 11.03 | train_step_timing in s: 3.421 | consumed_samples: 2048");
  EXPECT_THAT(log.step_times_seconds(), ElementsAre(3.421));
}

TEST(TrainingLogTest, FailureMarksKeepTheFirstLineThatShowsThem) {
  const TrainingLogPatterns patterns = Patterns();
  TrainingLog log(patterns);
  log.AddLine("[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB");
  log.AddLine("[rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB");
  log.AddLine("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970");
  log.AddLine(std::string(2000, 'x') + " ncclSystemError");
  EXPECT_EQ(log.out_of_memory_line(),
            "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB");
  EXPECT_THAT(log.nccl_error_line(), HasSubstr("DistBackendError: NCCL error in"));
}

TEST(TrainingLogTest, ConfiguredMarksReplaceTheDefaults) {
  v1::LogPatterns proto;
  proto.add_out_of_memory("HIP out of memory");
  const TrainingLogPatterns patterns = Patterns(proto);
  TrainingLog log(patterns);
  log.AddLine("CUDA out of memory");
  EXPECT_TRUE(log.out_of_memory_line().empty());
  log.AddLine("HIP out of memory");
  EXPECT_EQ(log.out_of_memory_line(), "HIP out of memory");
}

TEST(TrainingLogTest, KeptLinesAreCut) {
  const TrainingLogPatterns patterns = Patterns();
  TrainingLog log(patterns);
  log.AddLine("CUDA out of memory " + std::string(4000, 'y'));
  EXPECT_EQ(log.out_of_memory_line().size(), 512u);
}

TEST(TrainingLogTest, BadPatternsAreRejectedNamingTheField) {
  const struct {
    const char* pattern;
    double unit;
    const char* error;
  } cases[] = {
      {"elapsed time", 1,
       "command_templates[0].log.step_time.pattern (\"elapsed time\") must hold one {value}"},
      {"{value} ms", 1, "must hold one {value} after some text"},
      {"a {value} b {value}", 1, "must hold one {value}"},
      {"time: {value}", 0, "command_templates[0].log.step_time.unit (0) must be > 0"},
      {"time: {value}", -1, "command_templates[0].log.step_time.unit (-1) must be > 0"},
  };
  for (const auto& c : cases) {
    v1::LogPatterns proto;
    proto.mutable_step_time()->set_pattern(c.pattern);
    proto.mutable_step_time()->set_unit(c.unit);
    absl::StatusOr<TrainingLogPatterns> patterns =
        TrainingLogPatterns::Create(proto, "command_templates[0].log");
    EXPECT_EQ(patterns.status().code(), absl::StatusCode::kInvalidArgument) << c.pattern;
    EXPECT_THAT(patterns.status().message(), HasSubstr(c.error));
  }
  v1::LogPatterns empty_marker;
  empty_marker.add_nccl_error("");
  EXPECT_THAT(
      TrainingLogPatterns::Create(empty_marker, "command_templates[1].log").status().message(),
      HasSubstr("command_templates[1].log.nccl_error[0] (\"\") must be 1 to 256 bytes"));
}

// Real framework output, kept as printed (worker/testdata/logs/SOURCES.md says where each
// excerpt comes from).

constexpr char kLogs[] = "worker/testdata/logs/";
// The step pattern of deploy/templates/nemo_llama.textproto.
constexpr char kNemoTemplateStepTime[] = "train_step_timing in s: {value}";
constexpr double kMiB = 1024.0 * 1024.0;

// The lines of a fixture, without their '\n'.
std::vector<std::string> FixtureLines(const std::string& name) {
  std::ifstream in(kLogs + name);
  EXPECT_TRUE(in.good()) << "cannot read " << kLogs << name;
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  EXPECT_FALSE(lines.empty()) << name;
  return lines;
}

void Read(const std::string& name, TrainingLog& log) {
  for (const std::string& line : FixtureLines(name)) log.AddLine(line);
}

v1::LogPatterns NemoTemplatePatterns() {
  v1::LogPatterns proto;
  proto.mutable_step_time()->set_pattern(kNemoTemplateStepTime);
  proto.mutable_step_time()->set_unit(1);
  return proto;
}

TEST(TrainingLogFixtureTest, MegatronIterationLinesGiveStepTimes) {
  const TrainingLogPatterns patterns = Patterns();
  TrainingLog log(patterns);
  Read("megatron_iterations.log", log);
  EXPECT_THAT(
      log.step_times_seconds(),
      ElementsAre(DoubleNear(5.4449, 1e-9), DoubleNear(5.5338, 1e-9), DoubleNear(5.7186, 1e-9)));
  EXPECT_EQ(log.peak_memory_bytes(), 0);
  EXPECT_THAT(log.out_of_memory_line(), IsEmpty());
  EXPECT_THAT(log.nccl_error_line(), IsEmpty());
}

// A mixture-of-experts run through ms-swift's Megatron-LM trainer: the iteration line also
// carries the router's load_balancing_loss, the memory in GiB and an "elapsed time: 10m 7s",
// none of which is a step time or the memory report.
TEST(TrainingLogFixtureTest, MixtureOfExpertsIterationLinesGiveStepTimesAndNothingElse) {
  const TrainingLogPatterns patterns = Patterns();
  TrainingLog log(patterns);
  Read("megatron_swift_moe_iterations.log", log);
  EXPECT_THAT(log.step_times_seconds(),
              ElementsAre(DoubleNear(100.5129, 1e-9), DoubleNear(99.1589, 1e-9)));
  EXPECT_EQ(log.peak_memory_bytes(), 0);
  EXPECT_THAT(log.out_of_memory_line(), IsEmpty());
  EXPECT_THAT(log.nccl_error_line(), IsEmpty());
}

TEST(TrainingLogFixtureTest, MegatronMemoryReportGivesMaxReserved) {
  const TrainingLogPatterns patterns = Patterns();
  TrainingLog log(patterns);
  Read("megatron_memory_report.log", log);
  EXPECT_THAT(log.step_times_seconds(), ElementsAre(DoubleNear(0.744, 1e-9)));
  EXPECT_DOUBLE_EQ(log.peak_memory_bytes(), 6406.00 * kMiB);
  EXPECT_THAT(log.out_of_memory_line(), IsEmpty());
  EXPECT_THAT(log.nccl_error_line(), IsEmpty());
}

TEST(TrainingLogFixtureTest, OlderMegatronLogsAreReadAndTimerLinesAreNotStepTimes) {
  const TrainingLogPatterns patterns = Patterns();
  TrainingLog log(patterns);
  Read("megatron_2020_timers_and_memory.log", log);
  EXPECT_THAT(log.step_times_seconds(),
              ElementsAre(DoubleNear(16.4915, 1e-9), DoubleNear(1.9939, 1e-9)));
  EXPECT_DOUBLE_EQ(log.peak_memory_bytes(), 17482.0 * kMiB);
}

TEST(TrainingLogFixtureTest, NcclSystemErrorIsMarked) {
  const TrainingLogPatterns patterns = Patterns();
  TrainingLog log(patterns);
  Read("megatron_nccl_system_error.log", log);
  EXPECT_EQ(log.nccl_error_line(), FixtureLines("megatron_nccl_system_error.log")[0]);
  EXPECT_THAT(log.out_of_memory_line(), IsEmpty());
  EXPECT_THAT(log.step_times_seconds(), IsEmpty());
}

TEST(TrainingLogFixtureTest, NcclWatchdogTimeoutIsMarked) {
  const TrainingLogPatterns patterns = Patterns();
  TrainingLog log(patterns);
  Read("megatron_nccl_watchdog_timeout.log", log);
  EXPECT_EQ(log.nccl_error_line(), FixtureLines("megatron_nccl_watchdog_timeout.log")[1]);
  EXPECT_THAT(log.out_of_memory_line(), IsEmpty());
}

TEST(TrainingLogFixtureTest, NcclErrorOfRanksWritingOverEachOtherIsMarked) {
  const TrainingLogPatterns patterns = Patterns();
  TrainingLog log(patterns);
  Read("megatron_nccl_interleaved_ranks.log", log);
  EXPECT_THAT(log.nccl_error_line(),
              HasSubstr("DistBackendError.: DistBackendErrorNCCL error in: "));
  EXPECT_THAT(log.out_of_memory_line(), IsEmpty());
}

TEST(TrainingLogFixtureTest, TorchOutOfMemoryIsMarkedAndTheNcclAbortAfterItIsNot) {
  const TrainingLogPatterns patterns = Patterns();
  TrainingLog log(patterns);
  Read("megatron_deepspeed_oom.log", log);
  EXPECT_EQ(log.out_of_memory_line(), FixtureLines("megatron_deepspeed_oom.log")[4]);
  EXPECT_THAT(log.nccl_error_line(), IsEmpty());
}

// TorchTitan's metrics lines give step times through the tokens of a GPU's share of a step:
// here Llama 3.1 8B with 8,192-token sequences on 8 GPUs, one sequence per GPU per step.
TEST(TrainingLogFixtureTest, TorchTitanMetricsLinesGiveStepTimesAndMaxReserved) {
  absl::StatusOr<TrainingLogPatterns> patterns = TrainingLogPatterns::Create(
      v1::LogPatterns(), "command_templates[0].log", StepLog::kTorchTitan);
  ASSERT_TRUE(patterns.ok()) << patterns.status();
  EXPECT_EQ(patterns->DescribeStepSource(), "TorchTitan's metrics line");
  TrainingLog log(*patterns, /*tokens_per_gpu_per_step=*/8192);
  Read("torchtitan_rank0_padded_memory.log", log);
  ASSERT_EQ(log.step_times_seconds().size(), 8u);
  EXPECT_THAT(log.step_times_seconds()[0], DoubleNear(8192.0 / 7282, 1e-12));
  EXPECT_THAT(log.step_times_seconds()[1], DoubleNear(8192.0 / 7334, 1e-12));
  EXPECT_DOUBLE_EQ(log.peak_memory_bytes(), 9.46 * 1024 * 1024 * 1024);
  EXPECT_THAT(log.unreadable_step_line(), IsEmpty());
  // Megatron-LM's iteration lines are no TorchTitan steps.
  Read("megatron_iterations.log", log);
  EXPECT_EQ(log.step_times_seconds().size(), 8u);
  log.AddLine("[titan] - root - INFO - step:  9  loss:  3.00000  grad_norm:  0.5000  memory:");
  log.AddLine("[titan] - root - INFO - step: 10  loss:  3.00000  grad_norm:  0.5000  tps: 1");
  EXPECT_EQ(log.step_times_seconds().size(), 8u);
  EXPECT_THAT(log.unreadable_step_line(),
              HasSubstr("TorchTitan metrics line: memory has no value (the line ends there): "
                        "\"[titan] - root - INFO - step:  9"));
}

TEST(TrainingLogTest, TorchTitanLogsTakeNoValuePatterns) {
  v1::LogPatterns proto;
  proto.mutable_peak_memory()->set_pattern("memory: {value}GiB");
  proto.mutable_peak_memory()->set_unit(1 << 30);
  const absl::Status status =
      TrainingLogPatterns::Create(proto, "command_templates[2].log", StepLog::kTorchTitan).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("command_templates[2].log.peak_memory is set, but TorchTitan's metrics "
                        "line is read typed"));
}

// TorchTitan runs end as PyTorch's do: the default marks read them; its memory monitor's
// allocation retries and NCCL's start-up lines mark nothing.
TEST(TrainingLogFixtureTest, TorchTitanOutOfMemoryIsMarkedAndItsWarningsAreNot) {
  const TrainingLogPatterns patterns = Patterns();
  TrainingLog oom(patterns);
  Read("torchtitan_oom.log", oom);
  EXPECT_EQ(oom.out_of_memory_line(), FixtureLines("torchtitan_oom.log")[3]);
  EXPECT_THAT(oom.nccl_error_line(), IsEmpty());
  TrainingLog retries(patterns);
  Read("torchtitan_allocation_retries.log", retries);
  EXPECT_THAT(retries.out_of_memory_line(), IsEmpty());
  TrainingLog nccl_info(patterns);
  Read("torchtitan_nccl_info.log", nccl_info);
  EXPECT_THAT(nccl_info.nccl_error_line(), IsEmpty());
  EXPECT_THAT(nccl_info.out_of_memory_line(), IsEmpty());
}

// Fails with the default markers: NCCL's own allocation failure ("NCCL WARN Cuda failure 2
// 'out of memory'") is neither an out-of-memory nor a NCCL-failure mark.
TEST(TrainingLogFixtureTest, NcclAllocationFailureIsMarkedOutOfMemory) {
  const TrainingLogPatterns patterns = Patterns();
  TrainingLog log(patterns);
  Read("megatron_bridge_nccl_oom.log", log);
  EXPECT_EQ(log.out_of_memory_line(), FixtureLines("megatron_bridge_nccl_oom.log")[8]);
}

TEST(TrainingLogFixtureTest, NemoProgressPrinterWithTheTemplatePattern) {
  const TrainingLogPatterns patterns = Patterns(NemoTemplatePatterns());
  TrainingLog log(patterns);
  Read("nemo_progress_printer.log", log);
  EXPECT_THAT(log.step_times_seconds(),
              ElementsAre(DoubleNear(27.01, 1e-9), DoubleNear(27.88, 1e-9), DoubleNear(26.63, 1e-9),
                          DoubleNear(26.93, 1e-9)));
  // The default memory pattern is Megatron-LM's; NeMo's memory monitor writes
  // "max_memory_reserved: <bytes>", which it does not match.
  EXPECT_EQ(log.peak_memory_bytes(), 0);
  EXPECT_THAT(log.out_of_memory_line(), IsEmpty());
  EXPECT_THAT(log.nccl_error_line(), IsEmpty());
}

TEST(TrainingLogFixtureTest, NemoMemoryMonitorWithAPatternOfItsOwn) {
  v1::LogPatterns proto = NemoTemplatePatterns();
  proto.mutable_peak_memory()->set_pattern("max_memory_reserved: {value}");
  proto.mutable_peak_memory()->set_unit(1);
  const TrainingLogPatterns patterns = Patterns(proto);
  TrainingLog log(patterns);
  Read("nemo_progress_printer.log", log);
  EXPECT_DOUBLE_EQ(log.peak_memory_bytes(), 57675874304.0);
}

// Fails with the template's pattern: Lightning's progress bar writes "train_step_timing in
// s=11.20", NeMo's progress printer "train_step_timing in s: 11.20".
// Lightning's tqdm bar writes "train_step_timing in s=11.20"; the template reads NeMo 2's own
// progress printer (its default, replace_progress_bar=True), "train_step_timing in s: 27.01".
// A run with the tqdm bar logs no step time the template can read, and its probe fails saying
// so (command_outcome.h) rather than timing the wrong thing.
TEST(TrainingLogFixtureTest, NemoTqdmProgressBarIsNotReadByTheTemplatePattern) {
  const TrainingLogPatterns patterns = Patterns(NemoTemplatePatterns());
  TrainingLog log(patterns);
  Read("nemo_tqdm_progress_bar.log", log);
  EXPECT_THAT(log.step_times_seconds(), IsEmpty());
}

}  // namespace
}  // namespace paratune
