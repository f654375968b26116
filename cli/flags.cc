#include "cli/flags.h"

#include <cstdio>
#include <cstdlib>
#include <optional>

#include "absl/flags/marshalling.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"

namespace paratune {
namespace {

// "a, b or c": the words of a choice flag.
std::string ChoiceList(const Flag& flag) {
  std::string list;
  for (size_t i = 0; i < flag.choices.size(); ++i) {
    if (i > 0) list += i + 1 == flag.choices.size() ? " or " : ", ";
    list += flag.choices[i].word;
  }
  return list;
}

// `text` as a T, as Abseil's flags parse it; `label` names the flag (or a list's entry) and
// `what` says what T is, for the error.
template <typename T>
absl::StatusOr<T> ParseAs(absl::string_view label, absl::string_view text, const char* what) {
  T value;
  std::string error;
  if (!absl::ParseFlag(text, &value, &error)) {
    return absl::InvalidArgumentError(absl::StrCat(label, " (\"", text, "\") is not ", what));
  }
  return value;
}

// `text` as one of the words of `flag`, in lower case.
absl::StatusOr<std::string> ParseChoice(const Flag& flag, absl::string_view label,
                                        absl::string_view text) {
  const std::string word = absl::AsciiStrToLower(text);
  for (const FlagChoice& choice : flag.choices) {
    if (word == choice.word) return word;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(label, " (\"", text, "\") must be ", ChoiceList(flag)));
}

// The entries of a comma list; none for an empty text.
std::vector<absl::string_view> ListEntries(absl::string_view text) {
  if (text.empty()) return {};
  return absl::StrSplit(text, ',');
}

[[noreturn]] void FaultReading(const Flag& flag, const char* what) {
  std::fprintf(stderr, "paratune: internal error: %s %s\n", Dashed(flag).c_str(), what);
  std::abort();
}

}  // namespace

std::string Dashed(const Flag& flag) { return absl::StrCat("--", flag.name); }

absl::StatusOr<FlagValue> ParseFlagValue(const Flag& flag, absl::string_view text) {
  const std::string label = Dashed(flag);
  switch (flag.type) {
    case FlagType::kBool:
      return ParseAs<bool>(label, text, "true or false");
    case FlagType::kInt:
      return ParseAs<int64_t>(label, text, "an integer");
    case FlagType::kUint:
      return ParseAs<uint64_t>(label, text, "an integer >= 0");
    case FlagType::kDouble:
      return ParseAs<double>(label, text, "a number");
    case FlagType::kDuration:
      return ParseAs<absl::Duration>(label, text, "a duration such as 90s, 2h or 1h30m");
    case FlagType::kString:
      // A choice flag whose default is none takes none.
      if (flag.choices.empty() || (text.empty() && *flag.default_value == '\0')) {
        return std::string(text);
      }
      return ParseChoice(flag, label, text);
    case FlagType::kIntList: {
      std::vector<int64_t> values;
      const std::vector<absl::string_view> entries = ListEntries(text);
      for (size_t i = 0; i < entries.size(); ++i) {
        PT_ASSIGN_OR_RETURN(const int64_t value, ParseAs<int64_t>(absl::StrCat(label, "[", i, "]"),
                                                                  entries[i], "an integer"));
        values.push_back(value);
      }
      return values;
    }
    case FlagType::kStringList: {
      std::vector<std::string> values;
      const std::vector<absl::string_view> entries = ListEntries(text);
      for (size_t i = 0; i < entries.size(); ++i) {
        if (flag.choices.empty()) {
          values.emplace_back(entries[i]);
          continue;
        }
        PT_ASSIGN_OR_RETURN(std::string word,
                            ParseChoice(flag, absl::StrCat(label, "[", i, "]"), entries[i]));
        values.push_back(std::move(word));
      }
      return values;
    }
  }
  return absl::InternalError(absl::StrCat(label, " has no known type"));
}

int ChoiceValue(const Flag& flag, absl::string_view word) {
  for (const FlagChoice& choice : flag.choices) {
    if (word == choice.word) return choice.value;
  }
  return flag.choices.empty() ? 0 : flag.choices.front().value;
}

absl::StatusOr<FlagValues> FlagValues::Create(
    absl::Span<const Flag* const> taken,
    absl::Span<const std::pair<const Flag*, std::string>> given,
    const std::function<const char*(const char*)>& environment) {
  FlagValues values;
  for (const Flag* flag : taken) {
    std::optional<std::string> given_text;
    for (const auto& [given_flag, text] : given) {
      if (given_flag == flag) given_text = text;
    }
    // A value given stays; a flag not given, or given empty, takes its variable's.
    const bool has_value = given_text.has_value() && !given_text->empty();
    const char* variable =
        has_value || flag->environment == nullptr ? nullptr : environment(flag->environment);
    const std::string text =
        variable != nullptr ? variable : given_text.value_or(flag->default_value);
    PT_ASSIGN_OR_RETURN(FlagValue value, ParseFlagValue(*flag, text));
    values.values_.insert_or_assign(flag, std::move(value));
  }
  return values;
}

const FlagValue& FlagValues::Value(const Flag& flag) const {
  const auto it = values_.find(&flag);
  if (it == values_.end()) FaultReading(flag, "is read by a command that does not take it");
  return it->second;
}

template <typename T>
const T& FlagValues::Get(const Flag& flag) const {
  const T* value = std::get_if<T>(&Value(flag));
  if (value == nullptr) FaultReading(flag, "is read as a type it does not have");
  return *value;
}

bool FlagValues::Bool(const Flag& flag) const { return Get<bool>(flag); }
int64_t FlagValues::Int(const Flag& flag) const { return Get<int64_t>(flag); }
double FlagValues::Double(const Flag& flag) const { return Get<double>(flag); }
absl::Duration FlagValues::Duration(const Flag& flag) const { return Get<absl::Duration>(flag); }
const std::string& FlagValues::String(const Flag& flag) const { return Get<std::string>(flag); }
int FlagValues::Choice(const Flag& flag) const { return ChoiceValue(flag, String(flag)); }

}  // namespace paratune
