#include "launch/launch_template.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "estimator/data_parallel_sharding.h"

namespace paratune {
namespace {

constexpr size_t kMaxCheckedAgainstBytes = 256;
constexpr int kMaxArguments = 1024;
constexpr size_t kMaxArgumentBytes = 4096;
constexpr int kMaxEnvironment = 256;
constexpr size_t kMaxEnvironmentNameBytes = 256;

// `field ("value"): what`, the value escaped and cut to a readable length.
absl::Status FieldError(const std::string& field, absl::string_view value, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, " (\"",
                                                 absl::CHexEscape(value.substr(0, 200)),
                                                 value.size() > 200 ? "..." : "", "\"): ", what));
}

bool EnvironmentName(absl::string_view name) {
  if (name.empty() || absl::ascii_isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<LaunchTemplate::Text> LaunchTemplate::ParseText(const std::string& field,
                                                               const std::string& text) {
  Text parsed;
  std::string literal;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
      literal.push_back(c);
      ++i;
      continue;
    }
    if (c == '}') return FieldError(field, text, "a '}' without its '{' (write }} for one)");
    if (c != '{') {
      literal.push_back(c);
      continue;
    }
    const size_t close = text.find('}', i);
    if (close == std::string::npos) {
      return FieldError(field, text, "a '{' without its '}' (write {{ for one)");
    }
    const std::string name = text.substr(i + 1, close - i - 1);
    if (FindPlaceholder(name) == nullptr) {
      return FieldError(field, text, absl::StrCat("unknown placeholder {", name, "}"));
    }
    if (!literal.empty()) parsed.push_back(Segment{false, std::move(literal)});
    literal.clear();
    parsed.push_back(Segment{true, name});
    i = close;
  }
  if (!literal.empty()) parsed.push_back(Segment{false, std::move(literal)});
  return parsed;
}

absl::StatusOr<LaunchTemplate> LaunchTemplate::Create(const v1::CommandTemplate& launch,
                                                      const std::string& field) {
  if (launch.argv_size() < 1 || launch.argv_size() > kMaxArguments) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".argv (", launch.argv_size(),
                                                   " elements) must have 1 to ", kMaxArguments));
  }
  LaunchTemplate parsed;
  parsed.field_ = field;
  for (int i = 0; i < launch.argv_size(); ++i) {
    const std::string element_field = absl::StrCat(field, ".argv[", i, "]");
    const std::string& element = launch.argv(i);
    if (element.size() > kMaxArgumentBytes) {
      return FieldError(element_field, element,
                        absl::StrCat("longer than ", kMaxArgumentBytes, " bytes"));
    }
    Argument argument;
    argument.source = element;
    std::string body = element;
    if (absl::StartsWith(element, "{?")) {
      const size_t close = element.find('}');
      const std::string condition = close == std::string::npos ? "" : element.substr(2, close - 2);
      const size_t equals = condition.find('=');
      if (close == std::string::npos || equals == std::string::npos || equals == 0) {
        return FieldError(element_field, element,
                          "a condition must read {?NAME=VALUE} or {?NAME!=VALUE}");
      }
      Condition parsed_condition;
      parsed_condition.equal = condition[equals - 1] != '!';
      parsed_condition.placeholder =
          condition.substr(0, parsed_condition.equal ? equals : equals - 1);
      parsed_condition.value = condition.substr(equals + 1);
      const Placeholder* placeholder = FindPlaceholder(parsed_condition.placeholder);
      if (placeholder == nullptr) {
        return FieldError(element_field, element,
                          absl::StrCat("unknown placeholder {", parsed_condition.placeholder,
                                       "} in the condition"));
      }
      if (absl::Status value = CheckPlaceholderValue(*placeholder, parsed_condition.value);
          !value.ok()) {
        return FieldError(element_field, element, value.message());
      }
      if (parsed_condition.placeholder == "probe" &&
          (parsed_condition.value == "true") != parsed_condition.equal) {
        return FieldError(element_field, element,
                          "an element passed outside probes only would be exported without "
                          "ever being measured; mark probe-only elements {?probe=true}");
      }
      if (i == 0) return FieldError(element_field, element, "the program cannot be conditional");
      body = element.substr(close + 1);
      if (body.empty()) {
        return FieldError(element_field, element, "a condition with nothing after it");
      }
      argument.condition = std::move(parsed_condition);
    }
    PT_ASSIGN_OR_RETURN(argument.text, ParseText(element_field, body));
    parsed.argv_.push_back(std::move(argument));
  }
  if (!launch.framework_entry().empty()) {
    const std::string entry_field = absl::StrCat(field, ".framework_entry");
    for (int i = 0; i < launch.argv_size(); ++i) {
      if (launch.argv(i) != launch.framework_entry()) continue;
      if (parsed.framework_start_.has_value()) {
        return FieldError(entry_field, launch.framework_entry(),
                          absl::StrCat("is argv[", *parsed.framework_start_ - 1, "] and argv[", i,
                                       "]; it must name one element"));
      }
      parsed.framework_start_ = i + 1;
    }
    if (!parsed.framework_start_.has_value()) {
      return FieldError(entry_field, launch.framework_entry(), "is no argv element");
    }
    if (parsed.argv_[*parsed.framework_start_ - 1].condition.has_value()) {
      return FieldError(entry_field, launch.framework_entry(),
                        "names a conditional element; the framework's arguments must start "
                        "at an element every launch passes");
    }
  }
  const std::string& release = launch.checked_against();
  if (release.size() > kMaxCheckedAgainstBytes ||
      std::any_of(release.begin(), release.end(),
                  [](char c) { return absl::ascii_iscntrl(static_cast<unsigned char>(c)); })) {
    // Exports print it in a comment line, which a line break would end.
    return FieldError(
        absl::StrCat(field, ".checked_against"), release.substr(0, 64),
        absl::StrCat("must be one line of at most ", kMaxCheckedAgainstBytes, " bytes"));
  }
  if (launch.env_size() > kMaxEnvironment) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".env (", launch.env_size(), " entries) must have at most ", kMaxEnvironment));
  }
  // The map's order is unspecified; sorting keeps errors and renders reproducible.
  const std::map<std::string, std::string> env(launch.env().begin(), launch.env().end());
  for (const auto& [name, value] : env) {
    const std::string entry_field =
        absl::StrCat(field, ".env[\"", absl::CHexEscape(name.substr(0, 64)),
                     name.size() > 64 ? "..." : "", "\"]");
    if (name.size() > kMaxEnvironmentNameBytes) {
      return FieldError(
          entry_field, name,
          absl::StrCat("a variable name is at most ", kMaxEnvironmentNameBytes, " bytes"));
    }
    if (!EnvironmentName(name)) {
      return FieldError(entry_field, name,
                        "a variable name is letters, digits and '_', not starting with a digit");
    }
    if (absl::StartsWith(value, "{?")) {
      return FieldError(entry_field, value, "conditions are only for argv elements");
    }
    if (value.size() > kMaxArgumentBytes) {
      return FieldError(entry_field, value,
                        absl::StrCat("longer than ", kMaxArgumentBytes, " bytes"));
    }
    PT_ASSIGN_OR_RETURN(Text text, ParseText(entry_field, value));
    parsed.env_.emplace_back(name, std::move(text));
  }
  return parsed;
}

absl::StatusOr<std::string> LaunchTemplate::RenderText(const Text& text,
                                                       const LaunchValues& values) {
  std::string rendered;
  for (const Segment& segment : text) {
    if (!segment.placeholder) {
      rendered += segment.text;
      continue;
    }
    PT_ASSIGN_OR_RETURN(const std::string value, values.Get(segment.text));
    rendered += value;
  }
  return rendered;
}

absl::StatusOr<std::optional<std::string>> LaunchTemplate::RenderArgument(
    const Argument& argument, const LaunchValues& values) {
  if (argument.condition.has_value()) {
    PT_ASSIGN_OR_RETURN(const std::string value, values.Get(argument.condition->placeholder));
    if ((value == argument.condition->value) != argument.condition->equal) return std::nullopt;
  }
  return RenderText(argument.text, values);
}

absl::StatusOr<LaunchTemplate::Command> LaunchTemplate::Render(const LaunchValues& values) const {
  Command command;
  for (const Argument& argument : argv_) {
    PT_ASSIGN_OR_RETURN(std::optional<std::string> rendered, RenderArgument(argument, values));
    if (rendered.has_value()) command.argv.push_back(*std::move(rendered));
  }
  for (const auto& [name, text] : env_) {
    PT_ASSIGN_OR_RETURN(command.env[name], RenderText(text, values));
  }
  return command;
}

absl::StatusOr<std::vector<std::string>> LaunchTemplate::RenderFrameworkArguments(
    const LaunchValues& values) const {
  if (!framework_start_.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat(field_,
                     ".framework_entry is empty: the template does not say where the "
                     "framework's own arguments start"));
  }
  std::vector<std::string> arguments;
  for (size_t i = *framework_start_; i < argv_.size(); ++i) {
    absl::StatusOr<std::optional<std::string>> rendered = RenderArgument(argv_[i], values);
    if (!rendered.ok()) {
      return absl::Status(rendered.status().code(),
                          FieldError(absl::StrCat(field_, ".argv[", i, "]"), argv_[i].source,
                                     rendered.status().message())
                              .message());
    }
    if (rendered->has_value()) arguments.push_back(**std::move(rendered));
  }
  return arguments;
}

std::map<std::string, std::string> LaunchTemplate::RenderFrameworkEnvironment(
    const LaunchValues& values) const {
  std::map<std::string, std::string> environment;
  for (const auto& [name, text] : env_) {
    // Create checked every placeholder, so a value is missing only where `values` have none.
    absl::StatusOr<std::string> value = RenderText(text, values);
    if (value.ok()) environment.emplace(name, *std::move(value));
  }
  return environment;
}

bool LaunchTemplate::Uses(absl::string_view placeholder) const {
  const auto passes = [placeholder](const Text& text) {
    for (const Segment& segment : text) {
      if (segment.placeholder && segment.text == placeholder) return true;
    }
    return false;
  };
  for (const Argument& argument : argv_) {
    if (passes(argument.text)) return true;
  }
  for (const auto& [name, text] : env_) {
    if (passes(text)) return true;
  }
  return false;
}

bool LaunchTemplate::Mentions(absl::string_view placeholder) const {
  for (const Argument& argument : argv_) {
    if (argument.condition.has_value() && argument.condition->placeholder == placeholder) {
      return true;
    }
  }
  return Uses(placeholder);
}

UnstatedSharding FindUnstatedSharding(const LaunchTemplate& launch, const LaunchValues& values) {
  const std::string sharding = values.Get("dp_sharding").value_or("");
  if ((sharding == DataParallelShardingName(DataParallelSharding::kGradients) ||
       sharding == DataParallelShardingName(DataParallelSharding::kFull)) &&
      launch.Mentions("distributed_optimizer") && !launch.Mentions("dp_sharding")) {
    return UnstatedSharding::kShardedGradients;
  }
  if (values.Get("distributed_optimizer_instances").value_or("1") != "1" &&
      !launch.Mentions("distributed_optimizer_instances") && !launch.Mentions("dp_replicate")) {
    return UnstatedSharding::kHybridReplicas;
  }
  return UnstatedSharding::kNone;
}

}  // namespace paratune
