#include "launch/torchtitan_options.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "launch/torchtitan_option_files.h"

namespace paratune {
namespace {

// A field as the pinned list declares it.
struct Declared {
  std::optional<TorchTitanType> type;         // none: a type paratune does not write
  std::string type_text;                      // as the list writes it, for errors
  absl::flat_hash_set<std::string> literals;  // a Literal's values; empty for other types
};

// "bool" and the other types of the pinned list (its header says how they are written).
Declared Declare(absl::string_view type_text) {
  Declared declared;
  declared.type_text = std::string(type_text);
  absl::string_view type = type_text;
  absl::ConsumeSuffix(&type, "|None");
  if (type == "bool") {
    declared.type = TorchTitanType::kBool;
  } else if (type == "int") {
    declared.type = TorchTitanType::kInt;
  } else if (type == "float" || type == "float|int") {
    declared.type = TorchTitanType::kFloat;
  } else if (type == "str") {
    declared.type = TorchTitanType::kString;
  } else if (type == "list[str]") {
    declared.type = TorchTitanType::kStringList;
  } else if (absl::ConsumePrefix(&type, "Literal[") && absl::ConsumeSuffix(&type, "]")) {
    declared.type = TorchTitanType::kString;
    for (absl::string_view literal : absl::StrSplit(type, ',')) {
      declared.literals.insert(
          std::string(absl::StripSuffix(absl::StripPrefix(literal, "\""), "\"")));
    }
  }
  return declared;
}

// The pinned list's options, by "--section.field". Its lines are "OPTION  TYPE  FILE:LINE".
const absl::flat_hash_map<std::string, Declared>& DeclaredOptions() {
  static const auto* const options = [] {
    auto* options = new absl::flat_hash_map<std::string, Declared>();
    for (const EmbeddedFile& file : TorchTitanOptionFiles()) {
      for (absl::string_view line : absl::StrSplit(file.text, '\n')) {
        if (line.empty() || line[0] == '#') continue;
        const std::vector<absl::string_view> words =
            absl::StrSplit(line, ' ', absl::SkipWhitespace());
        if (words.size() >= 2) options->emplace(std::string(words[0]), Declare(words[1]));
      }
    }
    return options;
  }();
  return *options;
}

bool IsDigits(absl::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c));
  });
}

// An integer as TOML writes one: an optional sign, then 0 or digits without a leading zero.
bool IsTomlInteger(absl::string_view text) {
  if (!absl::ConsumePrefix(&text, "-")) absl::ConsumePrefix(&text, "+");
  return IsDigits(text) && (text.size() == 1 || text[0] != '0');
}

// A float as TOML writes one (an integer part, then a fraction, an exponent or both), or an
// integer, which TOML reads as a float once written with ".0".
bool IsTomlNumber(absl::string_view text) {
  absl::string_view integer = text.substr(0, text.find_first_of(".eE"));
  absl::string_view rest = text.substr(integer.size());
  if (!IsTomlInteger(integer)) return false;
  if (absl::ConsumePrefix(&rest, ".")) {
    const size_t digits = std::min(rest.find_first_of("eE"), rest.size());
    if (!IsDigits(rest.substr(0, digits))) return false;
    rest.remove_prefix(digits);
  }
  if (absl::ConsumePrefix(&rest, "e") || absl::ConsumePrefix(&rest, "E")) {
    if (!absl::ConsumePrefix(&rest, "-")) absl::ConsumePrefix(&rest, "+");
    return IsDigits(rest);
  }
  return rest.empty();
}

const char* TypeName(TorchTitanType type) {
  switch (type) {
    case TorchTitanType::kBool:
      return "a bool";
    case TorchTitanType::kInt:
      return "an integer";
    case TorchTitanType::kFloat:
      return "a number";
    case TorchTitanType::kString:
      return "a string";
    case TorchTitanType::kStringList:
      return "a comma-separated list";
  }
  return "a value";
}

// OK when `value` is one of `declared`'s type; INVALID_ARGUMENT naming `argument` otherwise.
absl::Status CheckValue(absl::string_view argument, const Declared& declared,
                        absl::string_view value) {
  bool ok = true;
  switch (*declared.type) {
    case TorchTitanType::kInt:
      ok = IsTomlInteger(value);
      break;
    case TorchTitanType::kFloat:
      ok = IsTomlNumber(value);
      break;
    case TorchTitanType::kString:
      ok = declared.literals.empty() || declared.literals.contains(value);
      break;
    case TorchTitanType::kBool:
    case TorchTitanType::kStringList:
      break;
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("TorchTitan argument \"", absl::CHexEscape(argument), "\": \"",
                   absl::CHexEscape(value), "\" is not ", TypeName(*declared.type), " of ",
                   declared.type_text, ", the field's type in TorchTitan v0.2.2"));
}

// `text` as a TOML basic string.
std::string TomlString(absl::string_view text) {
  std::string quoted = "\"";
  for (char c : text) {
    const unsigned char byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      absl::StrAppend(&quoted, "\\", std::string(1, c));
    } else if (byte < 0x20 || byte == 0x7f) {
      absl::StrAppendFormat(&quoted, "\\u%04X", byte);
    } else {
      quoted.push_back(c);
    }
  }
  return absl::StrCat(quoted, "\"");
}

std::string TomlValue(const TorchTitanOption& option) {
  switch (option.type) {
    case TorchTitanType::kBool:
    case TorchTitanType::kInt:
      return option.value;
    case TorchTitanType::kFloat:
      return IsTomlInteger(option.value) ? absl::StrCat(option.value, ".0") : option.value;
    case TorchTitanType::kString:
      return TomlString(option.value);
    case TorchTitanType::kStringList: {
      std::vector<std::string> elements;
      for (absl::string_view element : absl::StrSplit(option.value, ',')) {
        elements.push_back(TomlString(element));
      }
      return absl::StrCat("[", absl::StrJoin(elements, ", "), "]");
    }
  }
  return option.value;
}

}  // namespace

absl::StatusOr<std::vector<TorchTitanOption>> ReadTorchTitanArguments(
    const std::vector<std::string>& arguments) {
  std::vector<TorchTitanOption> options;
  absl::flat_hash_set<std::string> seen;
  for (const std::string& argument : arguments) {
    const size_t equals = argument.find('=');
    std::string name = argument.substr(0, equals);
    const bool has_value = equals != std::string::npos;
    std::string value = has_value ? argument.substr(equals + 1) : "";
    auto declared = DeclaredOptions().find(name);
    // tyro's negative flag of a bool: --section.no_field.
    const size_t dot = name.rfind('.');
    if (declared == DeclaredOptions().end() && !has_value && dot != std::string::npos &&
        absl::StartsWith(absl::string_view(name).substr(dot + 1), "no_")) {
      std::string positive = absl::StrCat(name.substr(0, dot + 1), name.substr(dot + 4));
      auto it = DeclaredOptions().find(positive);
      if (it != DeclaredOptions().end() && it->second.type == TorchTitanType::kBool) {
        declared = it;
        name = std::move(positive);
        value = "false";
      }
    }
    if (declared == DeclaredOptions().end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("TorchTitan argument \"", absl::CHexEscape(argument),
                       "\" is no --section.field option of TorchTitan v0.2.2 "
                       "(frameworks/torchtitan_v0.2.2_options.txt)"));
    }
    if (!declared->second.type.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("TorchTitan argument \"", absl::CHexEscape(argument), "\": its type, ",
                       declared->second.type_text, ", is none that paratune writes"));
    }
    const TorchTitanType type = *declared->second.type;
    const bool flag = type == TorchTitanType::kBool;
    if (flag == has_value) {
      return absl::InvalidArgumentError(absl::StrCat(
          "TorchTitan argument \"", absl::CHexEscape(argument), "\": ",
          flag ? "a bool is a flag without a value (--section.field, --section.no_field)"
               : "needs a value (--section.field=value)"));
    }
    if (flag && value.empty()) value = "true";
    absl::Status checked = CheckValue(argument, declared->second, value);
    if (!checked.ok()) return checked;
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("TorchTitan argument \"", absl::CHexEscape(argument), "\": ", name,
                       " comes twice, and a job file holds one value of it"));
    }
    const size_t last_dot = name.rfind('.');
    options.push_back(TorchTitanOption{name.substr(2, last_dot - 2), name.substr(last_dot + 1),
                                       type, std::move(value)});
  }
  return options;
}

std::string TorchTitanArgument(const TorchTitanOption& option) {
  if (option.type == TorchTitanType::kBool) {
    return absl::StrCat("--", option.section, ".", option.value == "true" ? "" : "no_",
                        option.field);
  }
  return absl::StrCat("--", option.section, ".", option.field, "=", option.value);
}

std::string TorchTitanToml(const std::vector<TorchTitanOption>& options) {
  std::vector<std::string> sections;
  std::map<std::string, std::vector<const TorchTitanOption*>> fields;
  for (const TorchTitanOption& option : options) {
    std::vector<const TorchTitanOption*>& section = fields[option.section];
    if (section.empty()) sections.push_back(option.section);
    section.push_back(&option);
  }
  std::string toml;
  for (const std::string& section : sections) {
    absl::StrAppend(&toml, toml.empty() ? "" : "\n", "[", section, "]\n");
    for (const TorchTitanOption* option : fields[section]) {
      absl::StrAppend(&toml, option->field, " = ", TomlValue(*option), "\n");
    }
  }
  return toml;
}

}  // namespace paratune
