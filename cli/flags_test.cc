#include "cli/flags.h"

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace paratune {
namespace {

constexpr FlagChoice kModes[] = {{"none", 1}, {"selective", 2}, {"full", 3}};
constexpr Flag kCount = {"count", FlagType::kInt, "1", "A count."};
constexpr Flag kSeed = {"seed", FlagType::kUint, "1", "A seed."};
constexpr Flag kFraction = {"fraction", FlagType::kDouble, "0.8", "A fraction."};
constexpr Flag kOn = {"on", FlagType::kBool, "true", "A switch."};
constexpr Flag kWait = {"wait", FlagType::kDuration, "30s", "A wait."};
constexpr Flag kMode = {"mode", FlagType::kString, "none", "A mode.", kModes};
constexpr Flag kOptionalMode = {"optional_mode", FlagType::kString, "", "A mode or none.", kModes};
constexpr Flag kSizes = {"sizes", FlagType::kIntList, "", "Sizes."};
constexpr Flag kModeList = {"modes", FlagType::kStringList, "", "Modes.", kModes};
constexpr Flag kFile = {"file", FlagType::kString, "", "A file.", {}, "TEST_FILE"};

std::string ErrorOf(const Flag& flag, absl::string_view text) {
  const absl::StatusOr<FlagValue> value = ParseFlagValue(flag, text);
  EXPECT_EQ(value.status().code(), absl::StatusCode::kInvalidArgument) << text;
  return std::string(value.status().message());
}

TEST(ParseFlagValueTest, ReadsEachTypeAsAbseilFlagsDo) {
  EXPECT_EQ(std::get<int64_t>(*ParseFlagValue(kCount, "-3")), -3);
  EXPECT_EQ(std::get<uint64_t>(*ParseFlagValue(kSeed, "18446744073709551615")),
            18446744073709551615u);
  EXPECT_DOUBLE_EQ(std::get<double>(*ParseFlagValue(kFraction, "1e-2")), 0.01);
  EXPECT_FALSE(std::get<bool>(*ParseFlagValue(kOn, "no")));
  EXPECT_TRUE(std::get<bool>(*ParseFlagValue(kOn, "1")));
  EXPECT_EQ(std::get<absl::Duration>(*ParseFlagValue(kWait, "1h30m")), absl::Minutes(90));
  EXPECT_EQ(std::get<absl::Duration>(*ParseFlagValue(kWait, "0")), absl::ZeroDuration());
  EXPECT_EQ(std::get<std::vector<int64_t>>(*ParseFlagValue(kSizes, "1,2,16")),
            (std::vector<int64_t>{1, 2, 16}));
  EXPECT_TRUE(std::get<std::vector<int64_t>>(*ParseFlagValue(kSizes, "")).empty());
}

TEST(ParseFlagValueTest, ErrorsNameTheFlagAndTheText) {
  EXPECT_EQ(ErrorOf(kCount, "two"), "--count (\"two\") is not an integer");
  EXPECT_EQ(ErrorOf(kSeed, "-1"), "--seed (\"-1\") is not an integer >= 0");
  EXPECT_EQ(ErrorOf(kFraction, "most"), "--fraction (\"most\") is not a number");
  EXPECT_EQ(ErrorOf(kOn, "maybe"), "--on (\"maybe\") is not true or false");
  EXPECT_EQ(ErrorOf(kWait, "soon"), "--wait (\"soon\") is not a duration such as 90s, 2h or 1h30m");
  EXPECT_EQ(ErrorOf(kSizes, "1,x,3"), "--sizes[1] (\"x\") is not an integer");
}

TEST(ParseFlagValueTest, ChoicesAreTakenInAnyCaseAndKeptInLowerCase) {
  EXPECT_EQ(std::get<std::string>(*ParseFlagValue(kMode, "Selective")), "selective");
  EXPECT_EQ(ErrorOf(kMode, "most"), "--mode (\"most\") must be none, selective or full");
  EXPECT_EQ(std::get<std::vector<std::string>>(*ParseFlagValue(kModeList, "none,FULL")),
            (std::vector<std::string>{"none", "full"}));
  EXPECT_EQ(ErrorOf(kModeList, "none,,full"), "--modes[1] (\"\") must be none, selective or full");
}

TEST(ParseFlagValueTest, AnEmptyChoiceOnlyWhereTheDefaultIsNone) {
  EXPECT_EQ(std::get<std::string>(*ParseFlagValue(kOptionalMode, "")), "");
  EXPECT_EQ(ErrorOf(kMode, ""), "--mode (\"\") must be none, selective or full");
}

TEST(ChoiceValueTest, TheValueTheWordStandsFor) {
  EXPECT_EQ(ChoiceValue(kMode, "selective"), 2);
  EXPECT_EQ(ChoiceValue(kMode, "full"), 3);
}

class FlagValuesTest : public ::testing::Test {
 protected:
  absl::StatusOr<FlagValues> Create(std::vector<std::pair<const Flag*, std::string>> given) const {
    return FlagValues::Create(kTaken, given, [this](const char* name) -> const char* {
      const auto it = environment_.find(name);
      return it == environment_.end() ? nullptr : it->second.c_str();
    });
  }

  static constexpr const Flag* kTaken[] = {&kCount, &kOn, &kWait, &kMode, &kFile};
  std::map<std::string, std::string> environment_;
};

TEST_F(FlagValuesTest, DefaultsWhereNotGiven) {
  const absl::StatusOr<FlagValues> values = Create({});
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(values->Int(kCount), 1);
  EXPECT_TRUE(values->Bool(kOn));
  EXPECT_EQ(values->Duration(kWait), absl::Seconds(30));
  EXPECT_EQ(values->Choice(kMode), 1);
  EXPECT_EQ(values->String(kFile), "");
}

TEST_F(FlagValuesTest, TheLastGivenValueWins) {
  const absl::StatusOr<FlagValues> values =
      Create({{&kCount, "2"}, {&kOn, "false"}, {&kCount, "5"}, {&kMode, "FULL"}});
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(values->Int(kCount), 5);
  EXPECT_FALSE(values->Bool(kOn));
  EXPECT_EQ(values->Choice(kMode), 3);
  EXPECT_EQ(std::get<int64_t>(values->Value(kCount)), 5);
}

TEST_F(FlagValuesTest, TheEnvironmentStandsInForAFlagNotGivenOrGivenEmpty) {
  environment_["TEST_FILE"] = "/from/environment";
  EXPECT_EQ(Create({})->String(kFile), "/from/environment");
  EXPECT_EQ(Create({{&kFile, ""}})->String(kFile), "/from/environment");
  EXPECT_EQ(Create({{&kFile, "/given"}})->String(kFile), "/given");
}

TEST_F(FlagValuesTest, ABadValueNamesItsFlag) {
  const absl::StatusOr<FlagValues> values = Create({{&kWait, "later"}});
  EXPECT_EQ(values.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(values.status().message(),
            "--wait (\"later\") is not a duration such as 90s, 2h or 1h30m");
}

TEST(DashedTest, NamesTheFlagAsTyped) { EXPECT_EQ(Dashed(kCount), "--count"); }

}  // namespace
}  // namespace paratune
