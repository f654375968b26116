#include "worker/command_outcome.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

const TrainingLogPatterns& Patterns() {
  static const TrainingLogPatterns* const patterns =
      new TrainingLogPatterns(*TrainingLogPatterns::Create(v1::LogPatterns(), "log"));
  return *patterns;
}

SubprocessResult Exited(int code) {
  SubprocessResult run;
  run.ending = SubprocessResult::Ending::kExited;
  run.exit_code = code;
  return run;
}

// A log with `steps` Megatron iteration lines of 100, 200, 300, ... ms, then `extra` lines.
TrainingLog Log(int steps, std::initializer_list<const char*> extra = {}) {
  TrainingLog log(Patterns());
  for (int i = 1; i <= steps; ++i) {
    log.AddLine(absl::StrCat("iteration ", i, " | elapsed time per iteration (ms): ", 100 * i));
  }
  for (const char* line : extra) log.AddLine(line);
  return log;
}

CommandOutcome Classify(const SubprocessResult& run, const TrainingLog& log) {
  return ClassifyCommandRun(run, log, ExpectedSteps{2, 3}, absl::Seconds(30));
}

TEST(CommandOutcomeTest, ARunThatLoggedEveryStepIsOkWithItsTimedSteps) {
  const CommandOutcome outcome = Classify(Exited(0), Log(5));
  EXPECT_EQ(outcome.outcome, v1::PROBE_OK);
  EXPECT_THAT(outcome.timed_step_times, ElementsAre(0.3, 0.4, 0.5));
}

TEST(CommandOutcomeTest, OutOfMemoryWinsOverHowTheRunEnded) {
  SubprocessResult timed_out;
  timed_out.ending = SubprocessResult::Ending::kTimedOut;
  for (const SubprocessResult& run : {Exited(1), timed_out}) {
    const CommandOutcome outcome =
        Classify(run, Log(1, {"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate",
                              "NCCL error in: ProcessGroupNCCL.cpp"}));
    EXPECT_EQ(outcome.outcome, v1::PROBE_OUT_OF_MEMORY);
    EXPECT_THAT(outcome.message,
                AllOf(HasSubstr("out of memory: \"torch.OutOfMemoryError: CUDA out of memory."),
                      HasSubstr("after logging 1 of 5 step times")));
  }
}

TEST(CommandOutcomeTest, ANcclErrorIsACrashThatSaysSo) {
  SubprocessResult run = Exited(1);
  run.stderr_tail = "Traceback\nncclSystemError: System call failed\n";
  const CommandOutcome outcome = Classify(run, Log(1, {"ncclSystemError: System call failed"}));
  EXPECT_EQ(outcome.outcome, v1::PROBE_CRASH);
  EXPECT_THAT(outcome.message,
              AllOf(HasSubstr("NCCL error: \"ncclSystemError: System call failed\""),
                    HasSubstr("the run exited with code 1"),
                    HasSubstr("last lines of stderr:\nTraceback\nncclSystemError")));
}

TEST(CommandOutcomeTest, ATimeoutWithoutAFailureMarkIsATimeout) {
  SubprocessResult run;
  run.ending = SubprocessResult::Ending::kTimedOut;
  run.stdout_tail = "iteration 2\n";
  const CommandOutcome outcome = Classify(run, Log(2));
  EXPECT_EQ(outcome.outcome, v1::PROBE_TIMEOUT);
  EXPECT_THAT(outcome.message,
              AllOf(HasSubstr("the run timed out after 30s and was stopped, after logging 2 of 5"),
                    HasSubstr("last lines of stdout:\niteration 2")));
}

TEST(CommandOutcomeTest, SignalsAndExitCodesAreCrashesWithTheOutputsLastLines) {
  SubprocessResult killed;
  killed.ending = SubprocessResult::Ending::kSignaled;
  killed.signal = 11;
  EXPECT_EQ(Classify(killed, Log(5)).outcome, v1::PROBE_CRASH);
  EXPECT_THAT(Classify(killed, Log(5)).message, AllOf(HasSubstr("the run was killed by signal 11"),
                                                      HasSubstr("(it printed nothing)")));
  SubprocessResult failed = Exited(3);
  std::string many_lines;
  for (int i = 0; i < 40; ++i) absl::StrAppend(&many_lines, "line ", i, "\n");
  failed.stderr_tail = many_lines;
  const CommandOutcome outcome = Classify(failed, Log(0));
  EXPECT_EQ(outcome.outcome, v1::PROBE_CRASH);
  EXPECT_THAT(outcome.message,
              AllOf(HasSubstr("exited with code 3 after logging 0 of 5"), HasSubstr("line 28\n"),
                    HasSubstr("line 39"), Not(HasSubstr("line 27\n"))));
}

TEST(CommandOutcomeTest, ACleanExitWithTheWrongNumberOfStepTimesIsACrash) {
  EXPECT_EQ(Classify(Exited(0), Log(4)).outcome, v1::PROBE_CRASH);
  EXPECT_THAT(Classify(Exited(0), Log(4)).message,
              HasSubstr("exited with code 0 but logged only 4 of the 5 step times it should"));
  EXPECT_EQ(Classify(Exited(0), Log(10)).outcome, v1::PROBE_CRASH);
  EXPECT_THAT(Classify(Exited(0), Log(10)).message,
              HasSubstr("having logged 10 step times for 5 iterations"));
}

TEST(CommandOutcomeTest, AGangMemberThatLoggedNoStepTimeIsOkUntimed) {
  const ExpectedSteps gang{2, 3, /*untimed_allowed=*/true};
  const CommandOutcome untimed = ClassifyCommandRun(Exited(0), Log(0), gang, absl::Seconds(30));
  EXPECT_EQ(untimed.outcome, v1::PROBE_OK);
  EXPECT_TRUE(untimed.timed_step_times.empty());
  EXPECT_THAT(untimed.message, HasSubstr("another node of the gang times the steps"));
  // Some step times but not all is still a run that stopped early; a crash is still a crash.
  EXPECT_EQ(ClassifyCommandRun(Exited(0), Log(2), gang, absl::Seconds(30)).outcome,
            v1::PROBE_CRASH);
  EXPECT_EQ(ClassifyCommandRun(Exited(1), Log(0), gang, absl::Seconds(30)).outcome,
            v1::PROBE_CRASH);
  // Alone, a run must time its steps.
  EXPECT_EQ(Classify(Exited(0), Log(0)).outcome, v1::PROBE_CRASH);
}

TEST(CommandOutcomeTest, AZeroStepTimeIsNoMeasurement) {
  TrainingLog log = Log(4, {"elapsed time per iteration (ms): 0.0"});
  const CommandOutcome outcome = Classify(Exited(0), log);
  EXPECT_EQ(outcome.outcome, v1::PROBE_CRASH);
  EXPECT_THAT(outcome.message, HasSubstr("iteration 5 logged a step time of 0 s"));
}

}  // namespace
}  // namespace paratune
