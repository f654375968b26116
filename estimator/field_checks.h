// Range checks shared by the estimator's Create functions: each returns a field error
// (field_error.h) naming the field and the value, e.g. "training.seq_len (0) must be in
// [1, 4194304]".
#ifndef PARATUNE_ESTIMATOR_FIELD_CHECKS_H_
#define PARATUNE_ESTIMATOR_FIELD_CHECKS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace paratune {

// OK when lo <= value <= hi; "<field> (<value>) must be in [<lo>, <hi>]" otherwise.
absl::Status CheckIntInRange(absl::string_view field, int64_t value, int64_t lo, int64_t hi);

// OK when value >= 1; "<field> (<value>) must be >= 1" otherwise.
absl::Status CheckIntPositive(absl::string_view field, int64_t value);

// OK when value is finite and > 0; "<field> (<value>) must be a finite number > 0" otherwise.
absl::Status CheckDoublePositive(absl::string_view field, double value);

// OK when value is finite, > 0 and <= hi; "<field> (<value>) must be in (0, <hi>]" otherwise.
absl::Status CheckDoublePositiveAtMost(absl::string_view field, double value, double hi);

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_FIELD_CHECKS_H_
