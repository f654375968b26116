// The flags of the paratune command line, declared as data (cli/command_table.cc), and their
// values on one command line. A value is written as Abseil writes it: an integer, a number, a
// bool (true, false, 1, 0, yes, no), a duration (90s, 2h, 1h30m), a comma list.
#ifndef PARATUNE_CLI_FLAGS_H_
#define PARATUNE_CLI_FLAGS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace paratune {

// What a flag's value is.
enum class FlagType { kBool, kInt, kUint, kDouble, kDuration, kString, kIntList, kStringList };

// A word a flag takes, and the value it stands for: the number of an enum value of proto/ where
// the flag sets an enum field, else of the enum the command reads it as (ExportFormat).
struct FlagChoice {
  const char* word;
  int value;
};

// One flag. It means the same in every command that takes it; where its value goes in a
// command's request is that command's concern (cli/flag_fields.h).
struct Flag {
  // Without dashes: "safe_fraction" is given as --safe_fraction=0.9.
  const char* name;
  FlagType type;
  // The value when the flag is not given, as it would be typed ("0.80", "true", "24h"); empty
  // for a string or a list means none.
  const char* default_value;
  // What it does, for its help; without the default, which help adds.
  const char* help;
  // The only words the flag takes, in the order help lists them (a kStringList: each entry's),
  // in any case; an empty text takes none of them and leaves the flag's field unset. A kBool
  // flag that sets an enum field names the field's values for "false" and "true". Empty for a
  // flag that takes any value of its type.
  absl::Span<const FlagChoice> choices = {};
  // The environment variable whose value stands in when the flag is not given, or given
  // empty; null when none.
  const char* environment = nullptr;
};

// "--name", as messages and help name a flag.
std::string Dashed(const Flag& flag);

// The value of a flag, by FlagType in order: a choice is the word, in lower case.
using FlagValue = std::variant<bool, int64_t, uint64_t, double, absl::Duration, std::string,
                               std::vector<int64_t>, std::vector<std::string>>;

// `text` as a value of `flag`. INVALID_ARGUMENT naming the flag and the text otherwise:
// '--tp ("two") is not an integer', '--policy ("greedy") must be adaptive, top_k or exhaustive',
// '--micro_batches[1] ("x") is not an integer'.
absl::StatusOr<FlagValue> ParseFlagValue(const Flag& flag, absl::string_view text);

// The value `word` of a choice flag stands for; the flag's first choice's when none matches,
// which ParseFlagValue rules out.
int ChoiceValue(const Flag& flag, absl::string_view word);

// The values of the flags one command takes on one command line. Reading a flag the command
// does not take, or as another type, is a fault of the command's code: it aborts, naming the
// flag.
class FlagValues {
 public:
  // Each flag of `taken` with its text in `given` (the last one given wins), else its
  // environment variable's (`environment` returns a variable's value, or null when unset),
  // else its default, parsed. INVALID_ARGUMENT naming the flag when a text is not a value of
  // it; a flag in `given` that is not in `taken` is the caller's to refuse beforehand.
  static absl::StatusOr<FlagValues> Create(
      absl::Span<const Flag* const> taken,
      absl::Span<const std::pair<const Flag*, std::string>> given,
      const std::function<const char*(const char*)>& environment);

  bool Bool(const Flag& flag) const;
  int64_t Int(const Flag& flag) const;
  double Double(const Flag& flag) const;
  absl::Duration Duration(const Flag& flag) const;
  const std::string& String(const Flag& flag) const;
  // The value the word of a choice flag stands for (FlagChoice::value).
  int Choice(const Flag& flag) const;
  // Any flag's value.
  const FlagValue& Value(const Flag& flag) const;

 private:
  template <typename T>
  const T& Get(const Flag& flag) const;

  absl::flat_hash_map<const Flag*, FlagValue> values_;
};

}  // namespace paratune

#endif  // PARATUNE_CLI_FLAGS_H_
