#include "launch/torchtitan_options.h"

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> Arguments(const std::vector<TorchTitanOption>& options) {
  std::vector<std::string> arguments;
  for (const TorchTitanOption& option : options) arguments.push_back(TorchTitanArgument(option));
  return arguments;
}

TEST(TorchTitanOptionsTest, ArgumentsReadTypedAndWriteBackAsTheyWere) {
  const std::vector<std::string> arguments = {
      "--model.name=llama3",
      "--training.seq_len=8192",
      "--optimizer.lr=3e-4",
      "--training.max_norm=1",
      "--parallelism.fsdp_reshard_after_forward=never",
      "--compile.enable",
  };
  absl::StatusOr<std::vector<TorchTitanOption>> options = ReadTorchTitanArguments(arguments);
  ASSERT_TRUE(options.ok()) << options.status();
  ASSERT_EQ(options->size(), 6u);
  EXPECT_EQ((*options)[0].section, "model");
  EXPECT_EQ((*options)[0].field, "name");
  EXPECT_EQ((*options)[0].type, TorchTitanType::kString);
  EXPECT_EQ((*options)[1].type, TorchTitanType::kInt);
  EXPECT_EQ((*options)[2].type, TorchTitanType::kFloat);
  EXPECT_EQ((*options)[3].type, TorchTitanType::kFloat);  // float | int
  EXPECT_EQ((*options)[5].type, TorchTitanType::kBool);
  EXPECT_EQ((*options)[5].value, "true");
  EXPECT_EQ(Arguments(*options), arguments);

  // tyro's negative flag is a false bool.
  options = ReadTorchTitanArguments({"--compile.no_enable", "--quantize.linear.float8.emulate"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ((*options)[0].value, "false");
  EXPECT_EQ((*options)[1].section, "quantize.linear.float8");
  EXPECT_EQ(Arguments(*options),
            (std::vector<std::string>{"--compile.no_enable", "--quantize.linear.float8.emulate"}));
}

TEST(TorchTitanOptionsTest, TheJobFileHasATablePerSectionAndTypedValues) {
  absl::StatusOr<std::vector<TorchTitanOption>> options = ReadTorchTitanArguments({
      "--model.name=llama3",
      "--model.flavor=8B",
      "--training.seq_len=8192",
      "--optimizer.lr=3e-4",
      "--training.max_norm=1",
      "--model.converters=quantize.linear.float8",
      "--quantize.linear.float8.filter_fqns=output,attention.wq",
      "--compile.no_enable",
      "--parallelism.enable_async_tensor_parallel",
      "--job.description=say \"hi\"\\",
  });
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(TorchTitanToml(*options),
            "[model]\n"
            "name = \"llama3\"\n"
            "flavor = \"8B\"\n"
            "converters = [\"quantize.linear.float8\"]\n"
            "\n"
            "[training]\n"
            "seq_len = 8192\n"
            "max_norm = 1.0\n"
            "\n"
            "[optimizer]\n"
            "lr = 3e-4\n"
            "\n"
            "[quantize.linear.float8]\n"
            "filter_fqns = [\"output\", \"attention.wq\"]\n"
            "\n"
            "[compile]\n"
            "enable = false\n"
            "\n"
            "[parallelism]\n"
            "enable_async_tensor_parallel = true\n"
            "\n"
            "[job]\n"
            "description = \"say \\\"hi\\\"\\\\\"\n");
}

TEST(TorchTitanOptionsTest, WhatTheReleaseDoesNotTakeIsRefusedNamingTheArgument) {
  const struct {
    std::vector<std::string> arguments;
    const char* error;
  } cases[] = {
      {{"--model.nam=llama3"},
       "TorchTitan argument \"--model.nam=llama3\" is no --section.field option of TorchTitan "
       "v0.2.2"},
      {{"--parallelism.tensor-parallel-degree=2"}, "is no --section.field option"},
      {{"--compile.no_components"}, "is no --section.field option"},
      {{"--training.seq_len=8k"},
       "\"--training.seq_len=8k\": \"8k\" is not an integer of int, the field's type"},
      {{"--training.seq_len=08192"}, "is not an integer of int"},
      {{"--optimizer.lr=.3"}, "is not a number of float"},
      {{"--optimizer.lr=3e"}, "is not a number of float"},
      {{"--activation_checkpoint.mode=some"},
       "\"some\" is not a string of Literal[\"selective\",\"full\",\"memory_budget\",\"none\"]"},
      {{"--compile.enable=true"}, "a bool is a flag without a value"},
      {{"--model.flavor"}, "needs a value (--section.field=value)"},
      {{"--model.name=llama3", "--model.name=llama4"},
       "--model.name comes twice, and a job file holds one value of it"},
      {{"--parallelism.module_fqns_per_model_part=a"},
       "its type, list[list[str]]|None, is none that paratune writes"},
  };
  for (const auto& c : cases) {
    const absl::StatusOr<std::vector<TorchTitanOption>> options =
        ReadTorchTitanArguments(c.arguments);
    EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument) << c.error;
    EXPECT_THAT(options.status().message(), HasSubstr(c.error));
  }
}

// Every option of the pinned list that paratune can write is read with a value of its type:
// the list compiled in is the file.
TEST(TorchTitanOptionsTest, EveryOptionOfThePinnedListIsDeclared) {
  std::ifstream file(absl::StrCat(std::getenv("TEST_SRCDIR"),
                                  "/paratune/frameworks/torchtitan_v0.2.2_options.txt"));
  ASSERT_TRUE(file.good());
  int read = 0;
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    ASSERT_GE(words.size(), 2u) << line;
    absl::string_view type = words[1];
    absl::ConsumeSuffix(&type, "|None");
    std::string argument = words[0];
    if (type == "bool") {
    } else if (type == "int") {
      absl::StrAppend(&argument, "=1");
    } else if (type == "float" || type == "float|int") {
      absl::StrAppend(&argument, "=1.5");
    } else if (type == "str" || type == "list[str]") {
      absl::StrAppend(&argument, "=a");
    } else if (absl::ConsumePrefix(&type, "Literal[\"")) {
      absl::StrAppend(&argument, "=", type.substr(0, type.find('"')));
    } else {
      continue;  // list[list[str]], list[str] | str: no export writes them
    }
    const absl::StatusOr<std::vector<TorchTitanOption>> options =
        ReadTorchTitanArguments({argument});
    ASSERT_TRUE(options.ok()) << options.status();
    EXPECT_EQ(TorchTitanArgument(options->front()), argument);
    ++read;
  }
  EXPECT_GT(read, 130);
}

}  // namespace
}  // namespace paratune
