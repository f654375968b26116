#include "estimator/field_checks.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "estimator/field_error.h"

namespace paratune {

absl::Status CheckIntInRange(absl::string_view field, int64_t value, int64_t lo, int64_t hi) {
  if (value >= lo && value <= hi) return absl::OkStatus();
  return FieldError(field, absl::StrCat("(", value, ") must be in [", lo, ", ", hi, "]"));
}

absl::Status CheckIntPositive(absl::string_view field, int64_t value) {
  if (value >= 1) return absl::OkStatus();
  return FieldError(field, absl::StrCat("(", value, ") must be >= 1"));
}

absl::Status CheckDoublePositive(absl::string_view field, double value) {
  if (value > 0 && std::isfinite(value)) return absl::OkStatus();
  return FieldError(field, absl::StrCat("(", value, ") must be a finite number > 0"));
}

absl::Status CheckDoublePositiveAtMost(absl::string_view field, double value, double hi) {
  if (value > 0 && value <= hi) return absl::OkStatus();  // false for NaN
  return FieldError(field, absl::StrCat("(", value, ") must be in (0, ", hi, "]"));
}

}  // namespace paratune
