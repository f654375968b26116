#include "cli/command.h"

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "estimator/field_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/search.pb.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr FlagChoice kColors[] = {{"red", 1}, {"blue", 2}};
constexpr Flag kCount = {"count", FlagType::kInt, "1", "How many to make."};
constexpr Flag kColor = {"color", FlagType::kString, "red", "Their colour.", kColors};
constexpr Flag kLoud = {"loud", FlagType::kBool, "false", "Say it loudly."};
constexpr Flag kServer = {"server", FlagType::kString, "localhost:1", "Where to send it.",
                          {},       "TEST_SERVER"};

constexpr FlagField kMakeFields[] = {{&kCount, "top_k"}, {&kColor}, {&kLoud}};
constexpr FlagField kSendFields[] = {{&kServer}, {&kLoud}};

// Prints what it was given, or the field error a bad count makes.
absl::Status Make(const Invocation& invocation, std::ostream& out) {
  const FlagValues& flags = invocation.flags;
  if (flags.Int(kCount) < 0) return FieldError("top_k", "(-1) must be >= 0");
  out << "make " << flags.Int(kCount) << " " << flags.String(kColor) << " " << flags.Choice(kColor)
      << (flags.Bool(kLoud) ? " loudly" : "") << "\n";
  return absl::OkStatus();
}

absl::Status Send(const Invocation& invocation, std::ostream& out) {
  out << "send " << invocation.operand << " to " << invocation.flags.String(kServer)
      << (invocation.flags.Bool(kLoud) ? " loudly" : "") << "\n";
  return absl::OkStatus();
}

constexpr FlagGroup kMakeGroups[] = {{"Making", &v1::SearchSpec::descriptor, "", kMakeFields}};
constexpr FlagGroup kSendGroups[] = {{"Sending", nullptr, "", kSendFields}};
constexpr Command kLocal[] = {
    {"make", nullptr, nullptr, "make things\n  tool make --count=2\n", kMakeGroups, &Make}};
constexpr Command kRemote[] = {{"send", "NAME", "thing's name, e.g. things/1",
                                "send a thing\nsomewhere else\n", kSendGroups, &Send}};
constexpr CommandSection kSections[] = {{"Here:", kLocal}, {"There:", kRemote}};
constexpr CommandSet kTool = {"tool", "makes and sends things.", kSections, "Notes.\n"};

struct Result {
  int status;
  std::string out;
  std::string err;
};

class RunCommandLineTest : public ::testing::Test {
 protected:
  Result Run(std::vector<const char*> args) {
    surroundings_.environment = [this](const char* name) -> const char* {
      const auto it = environment_.find(name);
      return it == environment_.end() ? nullptr : it->second.c_str();
    };
    std::ostringstream out;
    std::ostringstream err;
    const int status = RunCommandLine(kTool, args, "tool 1.0", surroundings_, out, err);
    return {status, out.str(), err.str()};
  }

  Surroundings surroundings_;
  std::map<std::string, std::string> environment_;
};

TEST_F(RunCommandLineTest, RunsTheCommandWithItsFlagsWrittenAnyWay) {
  EXPECT_EQ(Run({"make"}).out, "make 1 red 1\n");
  EXPECT_EQ(Run({"make", "--count=3", "-color", "BLUE", "--loud"}).out, "make 3 blue 2 loudly\n");
  EXPECT_EQ(Run({"--count", "3", "make", "--noloud"}).out, "make 3 red 1\n");
  const Result sent = Run({"send", "--server=far:2", "--", "-odd-name"});
  EXPECT_EQ(sent.status, 0);
  EXPECT_EQ(sent.out, "send -odd-name to far:2\n");
}

TEST_F(RunCommandLineTest, TheEnvironmentStandsInForAFlagNotGiven) {
  environment_["TEST_SERVER"] = "env:3";
  EXPECT_EQ(Run({"send", "things/1"}).out, "send things/1 to env:3\n");
  EXPECT_EQ(Run({"send", "things/1", "--server=flag:4"}).out, "send things/1 to flag:4\n");
}

TEST_F(RunCommandLineTest, AFlagOfAnotherCommandIsRefusedNamingBoth) {
  const Result result = Run({"send", "things/1", "--count=2"});
  EXPECT_EQ(result.status, 1);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err,
            "tool: INVALID_ARGUMENT: send does not take --count (make takes it); 'tool help send' "
            "lists its flags\n");
}

TEST_F(RunCommandLineTest, BadCommandLinesSayWhatIsWrong) {
  EXPECT_EQ(Run({"make", "--size=2"}).err,
            "tool: INVALID_ARGUMENT: unknown flag --size; 'tool help COMMAND' lists the flags of a "
            "command\n");
  EXPECT_EQ(Run({"make", "--count"}).err, "tool: INVALID_ARGUMENT: --count needs a value\n");
  EXPECT_EQ(Run({"make", "--count=many"}).err,
            "tool: INVALID_ARGUMENT: --count (\"many\") is not an integer\n");
  EXPECT_EQ(Run({"make", "--color=green"}).err,
            "tool: INVALID_ARGUMENT: --color (\"green\") must be red or blue\n");
  EXPECT_EQ(Run({"make", "things/1"}).err,
            "tool: INVALID_ARGUMENT: make takes flags only, not \"things/1\"\n");
  EXPECT_EQ(Run({"send"}).err,
            "tool: INVALID_ARGUMENT: send takes one thing's name, e.g. things/1\n");
  const Result unknown = Run({"mend"});
  EXPECT_EQ(unknown.status, 1);
  EXPECT_EQ(unknown.err, "tool: INVALID_ARGUMENT: unknown command \"mend\"; run 'tool help'\n");
}

TEST_F(RunCommandLineTest, ACommandsFieldErrorNamesTheFlagThatSetTheField) {
  const Result result = Run({"make", "--count=-1"});
  EXPECT_EQ(result.status, 1);
  EXPECT_EQ(result.err, "tool: INVALID_ARGUMENT: --count (-1) must be >= 0\n");
}

TEST_F(RunCommandLineTest, WithoutACommandTheUsageGoesToStderr) {
  const Result result = Run({});
  EXPECT_EQ(result.status, 2);
  EXPECT_EQ(result.out, "");
  EXPECT_THAT(result.err, StartsWith("tool: makes and sends things.\n"));
}

TEST_F(RunCommandLineTest, TheUsageListsTheCommandsBySection) {
  const Result result = Run({"--help"});
  EXPECT_EQ(result.status, 0);
  EXPECT_EQ(result.out,
            "tool: makes and sends things.\n"
            "\n"
            "Usage: tool COMMAND [flags]\n"
            "       tool help [COMMAND]\n"
            "\n"
            "Here:\n"
            "  make       make things\n"
            "               tool make --count=2\n"
            "\n"
            "There:\n"
            "  send NAME  send a thing\n"
            "             somewhere else\n"
            "\n"
            "Notes.\n");
  EXPECT_EQ(Run({"help"}).out, result.out);
}

TEST_F(RunCommandLineTest, AHelpPageListsTheCommandsFlags) {
  const Result result = Run({"help", "send"});
  EXPECT_EQ(result.status, 0);
  EXPECT_EQ(result.out,
            "Usage: tool send NAME [flags]\n"
            "\n"
            "  send a thing\n"
            "  somewhere else\n"
            "\n"
            "Sending:\n"
            "  --server=TEXT (default $TEST_SERVER)\n"
            "      Where to send it.\n"
            "  --[no]loud (default false)\n"
            "      Say it loudly.\n");
  EXPECT_EQ(Run({"send", "--help"}).out, result.out);
  EXPECT_THAT(Run({"help", "make"}).out, HasSubstr("  --color=red|blue (default red)\n"));
  const Result all = Run({"--helpfull"});
  EXPECT_THAT(all.out, HasSubstr("Usage: tool make [flags]"));
  EXPECT_THAT(all.out, HasSubstr("Usage: tool send NAME [flags]"));
  EXPECT_EQ(Run({"help", "mend"}).status, 1);
}

TEST_F(RunCommandLineTest, VersionAnywhere) {
  const Result result = Run({"make", "--version"});
  EXPECT_EQ(result.status, 0);
  EXPECT_EQ(result.out, "tool 1.0\n");
}

}  // namespace
}  // namespace paratune
