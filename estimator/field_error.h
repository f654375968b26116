// An INVALID_ARGUMENT about one field of a request, with the field as data. Its message is
// "<field> <problem>" ("training.seq_len (0) must be in [1, 4194304]"), as API users read it;
// the field path and the problem also travel as payloads of the status, so that a client that
// names the field in its own words (the CLI names the flag that set it) composes its message
// from them and never takes the text apart. Made where the fault is found (the estimator's
// Create functions, convert/); read by whoever shows it. A payload lives in the process: the
// gRPC boundary carries the message alone.
#ifndef PARATUNE_ESTIMATOR_FIELD_ERROR_H_
#define PARATUNE_ESTIMATOR_FIELD_ERROR_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace paratune {

// The two parts of a field error.
struct FieldFault {
  // The field's path from the message the error is about: names joined by '.', an entry of a
  // repeated field as [i] ("space.micro_batch_sizes[2]").
  std::string field;
  // What is wrong with it, the message after the field and a space: "(0) must be in [1, 1024]".
  std::string problem;
};

// INVALID_ARGUMENT "<field> <problem>", carrying both.
absl::Status FieldError(absl::string_view field, absl::string_view problem);

// The field and the problem of a status made by FieldError; nullopt for any other status, OK
// included.
std::optional<FieldFault> FieldFaultOf(const absl::Status& status);

// A field error of a message, as an error of the message holding it in field `parent`:
// "model.preset (...)" under "spec" becomes "spec.model.preset (...)", both parts kept. Any
// other status is returned as it is.
absl::Status NestFieldError(absl::string_view parent, const absl::Status& status);

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_FIELD_ERROR_H_
