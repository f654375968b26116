#include "metrics/metric_family.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace paratune::metrics {
namespace {

bool IsNameChar(char c, bool first, bool allow_colon) {
  const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  const bool digit = c >= '0' && c <= '9';
  return letter || (allow_colon && c == ':') || (!first && digit);
}

bool IsValidName(absl::string_view name, bool allow_colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!IsNameChar(name[i], i == 0, allow_colon)) return false;
  }
  return true;
}

}  // namespace

absl::Status ValidateDescriptor(const MetricDescriptor& descriptor) {
  const std::string& name = descriptor.name;
  if (!IsValidName(name, /*allow_colon=*/true)) {
    return absl::InvalidArgumentError(
        absl::StrCat("metric name (\"", name, "\") must match [a-zA-Z_:][a-zA-Z0-9_:]*"));
  }
  if (descriptor.type == MetricType::kCounter && !absl::EndsWith(name, "_total")) {
    return absl::InvalidArgumentError(
        absl::StrCat("counter name (\"", name, "\") must end in _total"));
  }
  if (descriptor.type != MetricType::kCounter && absl::EndsWith(name, "_total")) {
    return absl::InvalidArgumentError(
        absl::StrCat("metric name (\"", name, "\") ends in _total but is not a counter"));
  }
  if (descriptor.help.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("help of ", name, " (\"\") must be set"));
  }
  const std::vector<std::string>& labels = descriptor.label_names;
  for (size_t i = 0; i < labels.size(); ++i) {
    const std::string& label = labels[i];
    if (!IsValidName(label, /*allow_colon=*/false) || absl::StartsWith(label, "__")) {
      return absl::InvalidArgumentError(
          absl::StrCat("label name of ", name, " (\"", label,
                       "\") must match [a-zA-Z_][a-zA-Z0-9_]* and not start with __"));
    }
    if (descriptor.type == MetricType::kHistogram && label == "le") {
      return absl::InvalidArgumentError(
          absl::StrCat("label name of histogram ", name, " (\"le\") is reserved for buckets"));
    }
    if (std::find(labels.begin(), labels.begin() + i, label) != labels.begin() + i) {
      return absl::InvalidArgumentError(
          absl::StrCat("label name of ", name, " (\"", label, "\") is listed twice"));
    }
  }
  return absl::OkStatus();
}

}  // namespace paratune::metrics
