#include "common/log.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

class LogTest : public ::testing::Test {
 protected:
  void TearDown() override { SetMinLogLevel(LogLevel::kInfo); }
};

TEST_F(LogTest, WritesOneLogfmtLineWithQuotedValues) {
  SetLogComponent("log-test");
  ::testing::internal::CaptureStderr();
  Log(LogLevel::kWarning, "probe failed", {{"probe", "searches/1"}, {"error", "a \"b\" = c"}});
  const std::string line = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(line, MatchesRegex("time=[0-9T:.-]+Z level=warning component=log-test "
                                 "msg=\"probe failed\" probe=searches/1 "
                                 "error=\"a \\\\\"b\\\\\" = c\"\n"));
}

TEST_F(LogTest, DropsLinesBelowTheMinimumLevel) {
  SetMinLogLevel(LogLevel::kWarning);
  ::testing::internal::CaptureStderr();
  Log(LogLevel::kInfo, "quiet");
  Log(LogLevel::kError, "loud");
  const std::string lines = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(lines, Not(HasSubstr("quiet")));
  EXPECT_THAT(lines, HasSubstr("level=error"));

  SetMinLogLevel(LogLevel::kDebug);
  ::testing::internal::CaptureStderr();
  Log(LogLevel::kDebug, "detail");
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("level=debug"));
}

TEST_F(LogTest, ParsesLevelNamesAndNamesTheFieldOnError) {
  EXPECT_EQ(*ParseLogLevel("--log_level", "debug"), LogLevel::kDebug);
  EXPECT_EQ(*ParseLogLevel("--log_level", "error"), LogLevel::kError);
  const absl::StatusOr<LogLevel> bad = ParseLogLevel("--log_level", "verbose");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("--log_level (\"verbose\")"));
}

TEST_F(LogTest, ConfigureLogSetsComponentAndMinimumLevel) {
  ASSERT_TRUE(ConfigureLog("configured", "warning").ok());
  ::testing::internal::CaptureStderr();
  Log(LogLevel::kInfo, "quiet");
  Log(LogLevel::kWarning, "loud");
  const std::string lines = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(lines, Not(HasSubstr("quiet")));
  EXPECT_THAT(lines, HasSubstr("component=configured msg=loud"));
  EXPECT_EQ(ConfigureLog("configured", "loud").code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace paratune
