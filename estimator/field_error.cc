#include "estimator/field_error.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace paratune {
namespace {

// The type URLs of the two payloads (absl::Status::SetPayload).
constexpr char kFieldUrl[] = "paratune.FieldError/field";
constexpr char kProblemUrl[] = "paratune.FieldError/problem";

}  // namespace

absl::Status FieldError(absl::string_view field, absl::string_view problem) {
  absl::Status status = absl::InvalidArgumentError(absl::StrCat(field, " ", problem));
  status.SetPayload(kFieldUrl, absl::Cord(field));
  status.SetPayload(kProblemUrl, absl::Cord(problem));
  return status;
}

std::optional<FieldFault> FieldFaultOf(const absl::Status& status) {
  const auto field = status.GetPayload(kFieldUrl);
  const auto problem = status.GetPayload(kProblemUrl);
  if (!field.has_value() || !problem.has_value()) return std::nullopt;
  return FieldFault{std::string(*field), std::string(*problem)};
}

absl::Status NestFieldError(absl::string_view parent, const absl::Status& status) {
  const std::optional<FieldFault> fault = FieldFaultOf(status);
  if (!fault.has_value()) return status;
  return FieldError(absl::StrCat(parent, ".", fault->field), fault->problem);
}

}  // namespace paratune
