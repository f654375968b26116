#include "common/subprocess.h"

#include <signal.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/test_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Ending = SubprocessResult::Ending;

SubprocessOptions Shell(const std::string& script) {
  SubprocessOptions options;
  options.argv = {"/bin/sh", "-c", script};
  return options;
}

SubprocessResult RunToEnd(const SubprocessOptions& options) {
  absl::Notification never;
  absl::StatusOr<SubprocessResult> result = RunSubprocess(options, never);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *std::move(result) : SubprocessResult();
}

// Whether `pid` is gone or a zombie (killed, not yet reaped by whoever inherited it), polled
// for up to 10 s: a signal is delivered asynchronously.
bool BecomesDead(pid_t pid) {
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (true) {
    std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
    std::string line;
    if (!std::getline(stat, line)) return true;
    // The state follows the parenthesised command name.
    const size_t close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() &&
        (line[close + 2] == 'Z' || line[close + 2] == 'X')) {
      return true;
    }
    if (absl::Now() > give_up) return false;
    absl::SleepFor(absl::Milliseconds(10));
  }
}

TEST(RunSubprocessTest, ExitCodeAndBothStreams) {
  const SubprocessResult result = RunToEnd(Shell("echo out; echo err >&2; exit 3"));
  EXPECT_EQ(result.ending, Ending::kExited);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.stdout_tail, "out\n");
  EXPECT_EQ(result.stderr_tail, "err\n");
  EXPECT_EQ(DescribeEnding(result, absl::InfiniteDuration()), "exited with code 3");
}

TEST(RunSubprocessTest, LinesArriveWithTheirStreamAndTheLastPartialLine) {
  std::vector<std::string> lines;
  SubprocessOptions options = Shell("printf 'a\\nb\\n'; printf 'e\\n' >&2; printf c");
  options.on_line = [&](OutputStream stream, absl::string_view line) {
    lines.push_back(absl::StrCat(stream == OutputStream::kStdout ? "out:" : "err:", line));
  };
  RunToEnd(options);
  std::sort(lines.begin(), lines.end());
  EXPECT_THAT(lines, ElementsAre("err:e", "out:a", "out:b", "out:c"));
}

TEST(RunSubprocessTest, DeathBySignal) {
  const SubprocessResult result = RunToEnd(Shell("kill -SEGV $$"));
  EXPECT_EQ(result.ending, Ending::kSignaled);
  EXPECT_EQ(result.signal, SIGSEGV);
  EXPECT_THAT(DescribeEnding(result, absl::InfiniteDuration()), HasSubstr("signal 11"));
}

TEST(RunSubprocessTest, TimeoutStopsTheWholeProcessGroup) {
  // The shell prints the pid of a grandchild that would otherwise outlive it.
  SubprocessOptions options = Shell("sleep 300 & echo $!; wait");
  options.timeout = absl::Milliseconds(300);
  const SubprocessResult result = RunToEnd(options);
  EXPECT_EQ(result.ending, Ending::kTimedOut);
  EXPECT_LT(result.wall_time, absl::Seconds(60));
  int grandchild = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(result.stdout_tail), &grandchild))
      << result.stdout_tail;
  EXPECT_TRUE(BecomesDead(grandchild));
}

TEST(RunSubprocessTest, ChildIgnoringSigtermIsKilledAfterTheGrace) {
  SubprocessOptions options = Shell("trap '' TERM; echo ready; sleep 300");
  options.timeout = absl::Milliseconds(300);
  options.kill_grace = absl::Milliseconds(200);
  const SubprocessResult result = RunToEnd(options);
  EXPECT_EQ(result.ending, Ending::kTimedOut);
  EXPECT_EQ(result.stdout_tail, "ready\n");
  EXPECT_LT(result.wall_time, absl::Seconds(60));
}

TEST(RunSubprocessTest, BackgroundedGrandchildDoesNotHoldTheRunOpen) {
  const SubprocessResult result = RunToEnd(Shell("sleep 300 & echo $!; exit 0"));
  EXPECT_EQ(result.ending, Ending::kExited);
  EXPECT_LT(result.wall_time, absl::Seconds(60));
  int grandchild = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(result.stdout_tail), &grandchild));
  EXPECT_TRUE(BecomesDead(grandchild));
}

TEST(RunSubprocessTest, CancellationStopsTheChild) {
  absl::Notification cancel;
  std::thread canceller([&] {
    absl::SleepFor(absl::Milliseconds(100));
    cancel.Notify();
  });
  absl::StatusOr<SubprocessResult> result = RunSubprocess(Shell("sleep 300"), cancel);
  canceller.join();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->ending, Ending::kCancelled);
  EXPECT_EQ(DescribeEnding(*result, absl::InfiniteDuration()), "cancelled");
}

TEST(RunSubprocessTest, EnvironmentAndWorkingDirectory) {
  SubprocessOptions options = Shell("echo \"$PARATUNE_TEST_VALUE\"; pwd");
  options.env = {{"PARATUNE_TEST_VALUE", "tp=2"}};
  options.working_directory = "/";
  EXPECT_EQ(RunToEnd(options).stdout_tail, "tp=2\n/\n");
}

TEST(RunSubprocessTest, StdinIsDevNullUnlessAFileIsGiven) {
  EXPECT_EQ(RunToEnd(Shell("cat; echo end")).stdout_tail, "end\n");
  SubprocessOptions options = Shell("cat");
  options.stdin_path = WriteTestFile("subprocess_stdin", "fed\n");
  EXPECT_EQ(RunToEnd(options).stdout_tail, "fed\n");
}

TEST(RunSubprocessTest, KeepsTheLastBytesOfALongOutput) {
  SubprocessOptions options = Shell("i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done");
  options.max_output_bytes = 100;
  const SubprocessResult result = RunToEnd(options);
  EXPECT_EQ(result.stdout_tail.size(), 100u);
  EXPECT_TRUE(absl::EndsWith(result.stdout_tail, "line1999\n")) << result.stdout_tail;
}

TEST(RunSubprocessTest, ErrorsNameTheProblem) {
  absl::Notification never;
  SubprocessOptions missing;
  missing.argv = {"/nonexistent/paratune-probe"};
  const absl::Status status = RunSubprocess(missing, never).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("/nonexistent/paratune-probe"));
  EXPECT_EQ(RunSubprocess(SubprocessOptions(), never).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace paratune
