// The shipped launch templates that `paratune export` renders name only arguments that the
// pinned framework releases accept: every "--flag" after pretrain_gpt.py is in Megatron-LM's
// argument list, every "a.b.c=value" override after `nemo llm pretrain` is in NeMo's
// override-key list, every "key=value" override and "--option" after Megatron-Bridge's
// run_recipe.py is in Megatron-Bridge's list, every "--section.field" after torchtitan.train is
// in TorchTitan's option list, taking a value exactly when it is no bool and, for a Literal
// field, one of its values. The lists (frameworks/*.txt) say where they came from. A template
// of none of these frameworks fails, so that a new one gets its list.
//
// Arguments: the Megatron-LM list, the NeMo list, the Megatron-Bridge list, the TorchTitan
// list, then the worker config files to check.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "frameworks/pinned_list.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "proto/worker_config.pb.h"

namespace paratune {
namespace {

struct Files {
  std::string megatron_list;
  std::string nemo_list;
  std::string bridge_list;
  std::string torchtitan_list;
  std::vector<std::string> configs;
};

Files& TestFiles() {
  static Files* const files = new Files();
  return *files;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::set<std::string> ReadList(const std::string& path) {
  absl::StatusOr<std::set<std::string>> names = ReadPinnedList(path);
  EXPECT_TRUE(names.ok()) << names.status();
  return names.ok() ? *std::move(names) : std::set<std::string>();
}

// The lines that are neither blank nor a '#' comment, split at whitespace.
std::vector<std::vector<std::string>> ListRows(const std::string& path) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(ReadFile(path));
  std::string line;
  while (std::getline(lines, line)) {
    if (absl::StripAsciiWhitespace(line).empty() || absl::StartsWith(line, "#")) continue;
    rows.push_back(absl::StrSplit(line, ' ', absl::SkipEmpty()));
  }
  return rows;
}

// TorchTitan's options: the option, then its field's type as job_config.py writes it
// ("bool", "int", 'Literal["selective","full","memory_budget","none"]', ...).
std::map<std::string, std::string> ReadTorchTitanOptions(const std::string& path) {
  std::map<std::string, std::string> options;
  for (const std::vector<std::string>& row : ListRows(path)) {
    EXPECT_EQ(row.size(), 3u) << "a row of " << path << " is not OPTION TYPE FILE:LINE";
    if (row.size() == 3) options[row[0]] = row[1];
  }
  return options;
}

// The values of a Literal type (without None); empty for any other type.
std::set<std::string> LiteralValues(const std::string& type) {
  std::set<std::string> values;
  absl::string_view rest = type;
  if (!absl::ConsumePrefix(&rest, "Literal[")) return values;
  rest = rest.substr(0, rest.find(']'));
  for (absl::string_view value : absl::StrSplit(rest, ',')) {
    absl::ConsumePrefix(&value, "\"");
    absl::ConsumeSuffix(&value, "\"");
    values.insert(std::string(value));
  }
  return values;
}

// `element` without its leading conditions ("{?NAME=VALUE}", "{?NAME!=VALUE}", any number).
absl::string_view WithoutConditions(absl::string_view element) {
  while (absl::StartsWith(element, "{?")) {
    const size_t end = element.find('}');
    if (end == absl::string_view::npos) break;
    element.remove_prefix(end + 1);
  }
  return element;
}

// `element` up to its first '='.
absl::string_view Name(absl::string_view element) { return element.substr(0, element.find('=')); }

// The index of the first argv element that, without its conditions, satisfies `is_entry`; -1
// when none does.
int EntryIndex(const v1::CommandTemplate& launch, bool (*is_entry)(absl::string_view element)) {
  for (int j = 0; j < launch.argv_size(); ++j) {
    if (is_entry(WithoutConditions(launch.argv(j)))) return j;
  }
  return -1;
}

bool IsMegatronEntry(absl::string_view element) {
  return absl::EndsWith(element, "pretrain_gpt.py");
}

bool IsNemoEntry(absl::string_view element) { return element == "pretrain"; }

bool IsBridgeEntry(absl::string_view element) { return absl::EndsWith(element, "run_recipe.py"); }

bool IsTorchTitanEntry(absl::string_view element) { return element == "torchtitan.train"; }

// What a template's argv elements after its framework's entry are checked against.
struct Check {
  const std::set<std::string>* names = nullptr;
  const std::string* list = nullptr;
  // Whether a (condition-stripped) element after the entry is one of the framework's own
  // names rather than a value or an option of the launcher.
  bool (*is_name)(absl::string_view element) = nullptr;
};

bool IsMegatronFlag(absl::string_view element) { return absl::StartsWith(element, "--"); }

// `nemo llm pretrain`'s own options ("--factory NAME") and their values are not overrides.
bool IsNemoOverride(absl::string_view element) {
  return !absl::StartsWith(element, "-") && absl::StrContains(element, '=');
}

// run_recipe.py's own options ("--recipe=NAME") are in the list as well as the overrides.
bool IsBridgeName(absl::string_view element) {
  return absl::StartsWith(element, "--") || absl::StrContains(element, '=');
}

TEST(FrameworkFlagsTest, TheListsAreRead) {
  const std::set<std::string> megatron = ReadList(TestFiles().megatron_list);
  EXPECT_GT(megatron.size(), 500u) << TestFiles().megatron_list;
  for (const std::string& name : megatron) {
    EXPECT_TRUE(absl::StartsWith(name, "--")) << name << " in " << TestFiles().megatron_list;
  }
  const std::set<std::string> nemo = ReadList(TestFiles().nemo_list);
  EXPECT_GT(nemo.size(), 20u) << TestFiles().nemo_list;
  for (const std::string& key : nemo) {
    EXPECT_TRUE(absl::StrContains(key, '.') && !absl::StrContains(key, '='))
        << key << " in " << TestFiles().nemo_list;
  }
  const std::set<std::string> bridge = ReadList(TestFiles().bridge_list);
  EXPECT_GT(bridge.size(), 40u) << TestFiles().bridge_list;
  for (const std::string& key : bridge) {
    EXPECT_FALSE(absl::StrContains(key, '=')) << key << " in " << TestFiles().bridge_list;
  }
  const std::map<std::string, std::string> torchtitan =
      ReadTorchTitanOptions(TestFiles().torchtitan_list);
  EXPECT_GT(torchtitan.size(), 100u) << TestFiles().torchtitan_list;
  for (const auto& [option, type] : torchtitan) {
    EXPECT_TRUE(absl::StartsWith(option, "--") && absl::StrContains(option, '.'))
        << option << " in " << TestFiles().torchtitan_list;
  }
  EXPECT_EQ(LiteralValues(torchtitan.at("--activation_checkpoint.mode")),
            (std::set<std::string>{"selective", "full", "memory_budget", "none"}));
}

// Every "--section.field[=value]" after torchtitan.train names an option of the release; a
// bool option takes no value (tyro's flag), any other one a value, one of a Literal's when it
// holds no placeholder.
TEST(FrameworkFlagsTest, TorchTitanTemplatesPassOptionsAsTheReleaseParsesThem) {
  const std::map<std::string, std::string> options =
      ReadTorchTitanOptions(TestFiles().torchtitan_list);
  int templates = 0;
  for (const std::string& file : TestFiles().configs) {
    v1::WorkerConfig config;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(ReadFile(file), &config)) << file;
    for (int i = 0; i < config.command_templates_size(); ++i) {
      const v1::CommandTemplate& launch = config.command_templates(i);
      const int entry = EntryIndex(launch, IsTorchTitanEntry);
      if (entry < 0) continue;
      ++templates;
      for (int j = entry + 1; j < launch.argv_size(); ++j) {
        const std::string where = absl::StrCat(file, " command_templates[", i, "].argv[", j, "] \"",
                                               launch.argv(j), "\"");
        const absl::string_view element = WithoutConditions(launch.argv(j));
        const std::string name(Name(element));
        const auto option = options.find(name);
        if (option == options.end()) continue;  // reported by the test of every template
        const bool has_value = name.size() < element.size();
        EXPECT_EQ(has_value, option->second != "bool")
            << where << ": " << name << " is a " << option->second << " option";
        const absl::string_view value = element.substr(std::min(element.size(), name.size() + 1));
        const std::set<std::string> literals = LiteralValues(option->second);
        if (!literals.empty() && !absl::StrContains(value, '{')) {
          EXPECT_EQ(literals.count(std::string(value)), 1u)
              << where << ": " << name << " takes " << option->second;
        }
      }
    }
  }
  EXPECT_GE(templates, 1);
}

TEST(FrameworkFlagsTest, EveryTemplateNamesOnlyArgumentsOfItsPinnedRelease) {
  const std::set<std::string> megatron = ReadList(TestFiles().megatron_list);
  const std::set<std::string> nemo = ReadList(TestFiles().nemo_list);
  const std::set<std::string> bridge = ReadList(TestFiles().bridge_list);
  const std::set<std::string> torchtitan = ReadList(TestFiles().torchtitan_list);
  ASSERT_FALSE(TestFiles().configs.empty());
  int megatron_templates = 0;
  int nemo_templates = 0;
  int bridge_templates = 0;
  int torchtitan_templates = 0;
  for (const std::string& file : TestFiles().configs) {
    v1::WorkerConfig config;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(ReadFile(file), &config))
        << file << " is not a paratune.v1.WorkerConfig";
    for (int i = 0; i < config.command_templates_size(); ++i) {
      const v1::CommandTemplate& launch = config.command_templates(i);
      const std::string where =
          absl::StrCat(file, " command_templates[", i, "] (", launch.name(), ")");
      Check check;
      int entry = EntryIndex(launch, IsMegatronEntry);
      if (entry >= 0) {
        check = {&megatron, &TestFiles().megatron_list, IsMegatronFlag};
        ++megatron_templates;
      } else if ((entry = EntryIndex(launch, IsNemoEntry)) >= 0) {
        check = {&nemo, &TestFiles().nemo_list, IsNemoOverride};
        ++nemo_templates;
      } else if ((entry = EntryIndex(launch, IsBridgeEntry)) >= 0) {
        check = {&bridge, &TestFiles().bridge_list, IsBridgeName};
        ++bridge_templates;
      } else if ((entry = EntryIndex(launch, IsTorchTitanEntry)) >= 0) {
        check = {&torchtitan, &TestFiles().torchtitan_list, IsMegatronFlag};
        ++torchtitan_templates;
      } else {
        ADD_FAILURE() << where
                      << " starts none of Megatron-LM (pretrain_gpt.py), NeMo (pretrain), "
                         "Megatron-Bridge (run_recipe.py) and TorchTitan (torchtitan.train): "
                         "give its framework a list in frameworks/";
        continue;
      }
      // The release the template says it was checked against is the list's.
      // "Megatron-LM core_v0.19.0": its last word is the tag in the list's file name.
      const std::string& release = launch.checked_against();
      const std::string tag = release.substr(release.rfind(' ') + 1);
      EXPECT_TRUE(!tag.empty() && absl::StrContains(*check.list, absl::StrCat("_", tag, "_")))
          << where << " says it was checked against \"" << release << "\", not the release of "
          << *check.list;
      int checked = 0;
      for (int j = entry + 1; j < launch.argv_size(); ++j) {
        const absl::string_view element = WithoutConditions(launch.argv(j));
        if (!check.is_name(element)) continue;
        ++checked;
        if (check.names->count(std::string(Name(element))) == 0) {
          ADD_FAILURE() << where << " argv[" << j << "] \"" << launch.argv(j) << "\" names "
                        << Name(element) << ", which is not in " << *check.list;
        }
      }
      EXPECT_GT(checked, 20) << where;
    }
  }
  EXPECT_GE(megatron_templates, 1);
  EXPECT_GE(nemo_templates, 1);
  EXPECT_GE(bridge_templates, 1);
  EXPECT_GE(torchtitan_templates, 1);
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 6) {
    std::cerr << "usage: " << argv[0]
              << " MEGATRON_LIST NEMO_LIST BRIDGE_LIST TORCHTITAN_LIST CONFIG...\n";
    return 2;
  }
  paratune::TestFiles().megatron_list = argv[1];
  paratune::TestFiles().nemo_list = argv[2];
  paratune::TestFiles().bridge_list = argv[3];
  paratune::TestFiles().torchtitan_list = argv[4];
  for (int i = 5; i < argc; ++i) paratune::TestFiles().configs.push_back(argv[i]);
  return RUN_ALL_TESTS();
}
