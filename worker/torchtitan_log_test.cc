#include "worker/torchtitan_log.h"

#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::DoubleNear;
using ::testing::HasSubstr;

// The line TorchTitan v0.2.2 formats (torchtitan/components/metrics.py:461-470) for step 7,
// written here from its format string with --metrics.disable_color_printing.
constexpr char kReleaseLine[] =
    "[rank0]:[titan] 2026-11-29 08:00:00,000 - root - INFO - step:  7  loss:  9.87654  "
    "grad_norm:  1.2345  memory: 61.43GiB(77.58%)  tps: 1,234  tflops: 345.67  mfu: 34.95%";

TorchTitanStep Read(absl::string_view line) {
  const absl::StatusOr<std::optional<TorchTitanStep>> read = ReadTorchTitanLine(line);
  EXPECT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(read.ok() && read->has_value()) << line;
  return read.ok() && read->has_value() ? **read : TorchTitanStep();
}

absl::Status Error(absl::string_view line) {
  const absl::StatusOr<std::optional<TorchTitanStep>> read = ReadTorchTitanLine(line);
  EXPECT_FALSE(read.ok()) << line;
  return read.status();
}

TEST(TorchTitanLogTest, TheReleasesMetricsLineIsReadFieldByField) {
  const TorchTitanStep step = Read(kReleaseLine);
  EXPECT_EQ(step.step, 7);
  EXPECT_DOUBLE_EQ(step.loss, 9.87654);
  EXPECT_DOUBLE_EQ(step.grad_norm.value_or(0), 1.2345);
  EXPECT_DOUBLE_EQ(step.max_reserved_gib, 61.43);
  EXPECT_DOUBLE_EQ(step.max_reserved_percent, 77.58);
  EXPECT_DOUBLE_EQ(step.tokens_per_second, 1234);
  EXPECT_DOUBLE_EQ(step.tflops.value_or(0), 345.67);
  EXPECT_DOUBLE_EQ(step.mfu_percent.value_or(0), 34.95);
}

TEST(TorchTitanLogTest, ColourCodesBetweenTheFieldsAreSkipped) {
  // utils.Color's codes around each field, as the line prints without
  // --metrics.disable_color_printing (a loss of -1: a pipeline stage that computes none).
  const TorchTitanStep step = Read(
      "[titan] 2026-11-29 08:00:00,000 - root - INFO - \x1b[31mstep: 12  \x1b[32mloss: "
      "-1.00000  \x1b[38;2;180;60;0mgrad_norm:  0.5000  \x1b[36mmemory: 10.00GiB(12.50%)  "
      "\x1b[34mtps: 12,345,678  \x1b[36mtflops: 1,234.50  \x1b[35mmfu: 99.00%\x1b[39m");
  EXPECT_EQ(step.step, 12);
  EXPECT_DOUBLE_EQ(step.loss, -1);
  EXPECT_DOUBLE_EQ(step.tokens_per_second, 12345678);
  EXPECT_DOUBLE_EQ(step.tflops.value_or(0), 1234.5);
}

TEST(TorchTitanLogTest, OtherLinesAreNotMetricsLines) {
  for (const char* line : {
           "[titan] 2026-11-29 08:00:00,000 - root - INFO - Training starts at step 1",
           "[titan] 2026-11-29 08:00:00,000 - root - INFO - validate step:  5  loss:  2.1000  "
           "memory:  9.46GiB(64.99%)  tps: 7,282",
           "Dumping profiler traces at step 200",
           "restep: 3  loss: 1",
           "step:  loss: 1",
           "",
       }) {
    const absl::StatusOr<std::optional<TorchTitanStep>> read = ReadTorchTitanLine(line);
    ASSERT_TRUE(read.ok()) << line << ": " << read.status();
    EXPECT_FALSE(read->has_value()) << line;
  }
}

TEST(TorchTitanLogTest, ABadOrCutLineIsAnErrorNamingWhatWasWrong) {
  const std::string line = kReleaseLine;
  const struct {
    std::string line;
    const char* error;
  } cases[] = {
      // Cut short, as a rank killed mid-write leaves it.
      {line.substr(0, line.find("memory:")), "TorchTitan metrics line of step 7 has no memory"},
      {line.substr(0, line.find("tps:") + 4), "tps has no value (the line ends there)"},
      {line.substr(0, line.find("GiB(") + 4), "memory (\"61.43GiB(\") is not <GiB>GiB(<percent>%)"},
      {line.substr(0, line.find("  tps:")), "has no tps"},
      {"step:  7  loss: 1.0  memory: 1.00GiB(1.00%)  tps: 12,34",
       "tps (\"12,34\") is not a number"},
      {"step:  7  loss: abc  memory: 1.00GiB(1.00%)  tps: 5", "loss (\"abc\") is not a number"},
      {"step:  7  loss: 1.0  memory: 1.00GB(1.00%)  tps: 5",
       "memory (\"1.00GB(1.00%)\") is not <GiB>GiB(<percent>%)"},
      {"step:  7  loss: 1.0  memory: 1.00GiB(1.00%)  tps: 5  mfu: 3",
       "mfu (\"3\") is not <percent>%"},
      {"step:  7  loss: 1.0  memory: 1.00GiB(1.00%)  tps: 5,,0", "tps (\"5,,0\") is not a number"},
      {"step:  7  loss: 1.0  loss: 2.0  memory: 1.00GiB(1.00%)  tps: 5", "loss appears twice"},
      {"step:  7  loss: 1.0  wps: 5  memory: 1.00GiB(1.00%)", "unknown field \"wps\""},
      {"step:  7  loss: 1.0  memory: 1.00GiB(1.00%)  tps: 5  trailing", "\"trailing\" is no"},
  };
  for (const auto& c : cases) {
    const absl::Status status = Error(c.line);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.line;
    EXPECT_THAT(status.message(), HasSubstr(c.error)) << c.line;
  }
}

TEST(TorchTitanLogTest, AStepTakesTheTokensOfAGpusShareOverTps) {
  // Llama 3.1 8B, global batch 1024 x 8192 tokens on 64 GPUs at 5,856 tokens/s per GPU.
  const absl::StatusOr<double> seconds = StepSecondsFromTps(1024.0 * 8192 / 64, 5856);
  ASSERT_TRUE(seconds.ok()) << seconds.status();
  EXPECT_THAT(*seconds, DoubleNear(22.3825, 1e-4));
  EXPECT_EQ(StepSecondsFromTps(131072, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(StepSecondsFromTps(131072, 0).status().message(), HasSubstr("tps 0"));
}

// Real TorchTitan output (worker/testdata/logs/SOURCES.md says where each excerpt comes from).

std::vector<std::string> FixtureLines(const std::string& name) {
  std::ifstream in("worker/testdata/logs/" + name);
  EXPECT_TRUE(in.good()) << "cannot read " << name;
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  EXPECT_FALSE(lines.empty()) << name;
  return lines;
}

// The metrics lines of a fixture, in order; every other line must read as no metrics line.
std::vector<TorchTitanStep> Steps(const std::string& name) {
  std::vector<TorchTitanStep> steps;
  for (const std::string& line : FixtureLines(name)) {
    const absl::StatusOr<std::optional<TorchTitanStep>> read = ReadTorchTitanLine(line);
    EXPECT_TRUE(read.ok()) << name << ": " << read.status();
    if (read.ok() && read->has_value()) steps.push_back(**read);
  }
  return steps;
}

TEST(TorchTitanLogFixtureTest, EveryRanksLineOfAStepIsRead) {
  // Without --local-ranks-filter every rank prints the step (the template filters to local
  // rank 0, so that a node logs each step once).
  const std::vector<TorchTitanStep> steps = Steps("torchtitan_every_rank.log");
  ASSERT_EQ(steps.size(), 7u);
  for (const TorchTitanStep& step : steps) {
    EXPECT_EQ(step.step, 4);
    EXPECT_DOUBLE_EQ(step.loss, 7.62585);
    EXPECT_DOUBLE_EQ(step.grad_norm.value_or(0), 26.625);
    EXPECT_DOUBLE_EQ(step.max_reserved_gib, 66.91);
    EXPECT_DOUBLE_EQ(step.max_reserved_percent, 37.51);
    EXPECT_DOUBLE_EQ(step.mfu_percent.value_or(0), 13.99);
  }
  EXPECT_DOUBLE_EQ(steps[0].tokens_per_second, 10050);
  EXPECT_DOUBLE_EQ(steps[4].tokens_per_second, 10049);
  EXPECT_DOUBLE_EQ(steps[0].tflops.value_or(0), 314.71);
}

TEST(TorchTitanLogFixtureTest, AllocationRetryWarningsAreNoMetricsLines) {
  const std::vector<TorchTitanStep> steps = Steps("torchtitan_allocation_retries.log");
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_EQ(steps[0].step, 5);
  EXPECT_DOUBLE_EQ(steps[0].max_reserved_gib, 175.62);
  EXPECT_DOUBLE_EQ(steps[0].max_reserved_percent, 98.46);
  EXPECT_DOUBLE_EQ(steps[0].tokens_per_second, 12413);
  EXPECT_EQ(steps[4].step, 6);
  EXPECT_DOUBLE_EQ(steps[4].tokens_per_second, 12440);
}

TEST(TorchTitanLogFixtureTest, PaddedNumbersAfterTheRankPrefixAreRead) {
  const std::vector<TorchTitanStep> steps = Steps("torchtitan_rank0_padded_memory.log");
  ASSERT_EQ(steps.size(), 8u);
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].step, 14 + static_cast<int64_t>(i));
    EXPECT_DOUBLE_EQ(steps[i].max_reserved_gib, 9.46);  // "memory:  9.46GiB(64.99%)"
  }
  EXPECT_DOUBLE_EQ(steps[0].grad_norm.value_or(0), 0.8319);  // "grad_norm:  0.8319"
  EXPECT_DOUBLE_EQ(steps[0].tokens_per_second, 7282);
  EXPECT_DOUBLE_EQ(steps[7].loss, 3.00867);
}

TEST(TorchTitanLogFixtureTest, A2025LineWithoutTheGradientNormIsRead) {
  const std::vector<TorchTitanStep> steps = Steps("torchtitan_2025_profiler_gc.log");
  ASSERT_EQ(steps.size(), 6u);
  EXPECT_EQ(steps[0].step, 200);
  EXPECT_FALSE(steps[0].grad_norm.has_value());
  EXPECT_DOUBLE_EQ(steps[0].loss, 6.1384);
  EXPECT_DOUBLE_EQ(steps[0].max_reserved_gib, 49.66);
  EXPECT_DOUBLE_EQ(steps[0].tokens_per_second, 5856);
  EXPECT_DOUBLE_EQ(steps[5].mfu_percent.value_or(0), 34.33);
}

TEST(TorchTitanLogFixtureTest, FailureLogsHoldNoMetricsLines) {
  EXPECT_TRUE(Steps("torchtitan_oom.log").empty());
  EXPECT_TRUE(Steps("torchtitan_nccl_info.log").empty());
}

}  // namespace
}  // namespace paratune
