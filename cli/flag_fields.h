// Where a command's flags go in the requests it builds, declared as data: each flag bound to a
// field of a proto message by the field's path. The same binding sets the field from the flag
// and names the flag in an error about the field (estimator/field_error.h), so a request and
// its errors cannot disagree about which flag is which field.
#ifndef PARATUNE_CLI_FLAG_FIELDS_H_
#define PARATUNE_CLI_FLAG_FIELDS_H_

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "cli/flags.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace paratune {

// One flag of a command and the field it sets, if any.
struct FlagField {
  const Flag* flag;
  // The field's path below its group's prefix, names joined by '.' ("space.micro_batch_sizes");
  // null for a flag the command reads itself (--watch, --server).
  const char* field = nullptr;
  // A kDouble flag's field holds its value times `scale`; a kDuration flag's holds seconds
  // times `scale`.
  double scale = 1;
  // The field's units where they are not the flag's ("GPU-seconds"), which an error about the
  // field then says.
  const char* unit = nullptr;
};

// Flags that a command's help lists under one title, with the fields they set in one message.
struct FlagGroup {
  // "Model"; a title equal to the previous group's is not repeated.
  const char* title;
  // The message the fields are in (e.g. &v1::PlanRequest::descriptor); null when no flag of
  // the group sets a field.
  const google::protobuf::Descriptor* (*message)();
  // The path of the fields' parent in that message, with a trailing '.' ("spec."), or "".
  const char* prefix;
  absl::Span<const FlagField> flags;
};

// Sets, in `message`, the field of every flag of `groups` whose message is `message`'s type to
// the flag's value in `values`: a number, a bool or a text as it is (a double times the
// binding's scale), a duration as seconds, a choice (or a bool with choices) as the enum value
// it stands for, a list entry by entry. A choice left empty leaves its field unset.
// INTERNAL when a path names no field of the message, or a field the flag's type cannot set:
// a fault in the command's table (cli/command_table_test.cc sets every one).
absl::Status SetFlagFields(absl::Span<const FlagGroup> groups, const FlagValues& values,
                           google::protobuf::Message& message);

// `status` in the words of the command line: a field error (estimator/field_error.h) about a
// field a flag of `groups` sets becomes INVALID_ARGUMENT "<flag> <problem>", composed from the
// error's parts ("--safe_fraction (1.5) must be in (0, 1]"); an entry of a list flag keeps its
// index ("--micro_batches[2] (0) ..."); a field in other units than its flag says so
// ("--max_gpu_hours, in GPU-seconds, (3.6e+15) ..."). Any other status is returned as it is.
absl::Status InFlagWords(const absl::Status& status, absl::Span<const FlagGroup> groups);

}  // namespace paratune

#endif  // PARATUNE_CLI_FLAG_FIELDS_H_
