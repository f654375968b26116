// Errors in the CLI's words. The server and convert/ name the proto field at fault
// ("spec.space.safe_memory_fraction (1.5) must be in (0, 1]"), as API users need; a person
// who typed `paratune plan --safe_fraction=1.5` needs the flag ("--safe_fraction (1.5) must
// be in (0, 1]"). The mapping is applied where the CLI built the request from its flags.
#ifndef PARATUNE_CLI_FLAG_NAMES_H_
#define PARATUNE_CLI_FLAG_NAMES_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace paratune {

// `message` with every field path of a request the CLI builds from flags (SearchSpec,
// EstimateRequest, PlanRequest, CreateSearchRequest; "spec." prefixed or not) replaced by
// its flag, an index kept ("--micro_batches[2]"). A field whose flag gives it in other units
// says so ("--max_gpu_hours, as GPU-seconds,"). `explicit_model`: the model came from
// --hidden_size etc. rather than a --model preset; without it the model's dimensions are the
// preset's and keep their field names. Text that is no field path is left alone; a one-word
// field ("limit") counts only "spec." prefixed or opening the message, so prose keeps its
// words.
std::string NameFlagsInMessage(absl::string_view message, bool explicit_model);

// `status` with its message through NameFlagsInMessage; its code unchanged.
absl::Status NameFlags(const absl::Status& status, bool explicit_model);

}  // namespace paratune

#endif  // PARATUNE_CLI_FLAG_NAMES_H_
