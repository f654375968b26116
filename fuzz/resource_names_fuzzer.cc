// Fuzzes resource name parsing (server/core/resource_names.h): no name crashes it, a parsed name's
// numbers are in range, and the name written for them parses back to them.
#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_input.h"
#include "server/core/resource_names.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using paratune::FuzzCheck;
  const absl::string_view name = paratune::FuzzText(data, size);

  if (const absl::StatusOr<int64_t> id = paratune::ParseSearchName("name", name); id.ok()) {
    FuzzCheck(*id >= 1, "a search id is >= 1");
    const absl::StatusOr<int64_t> again =
        paratune::ParseSearchName("name", paratune::SearchName(*id));
    FuzzCheck(again.ok() && *again == *id, "a search name round-trips");
  } else {
    FuzzCheck(id.status().code() == absl::StatusCode::kInvalidArgument,
              "a bad search name is INVALID_ARGUMENT");
  }

  if (const absl::StatusOr<int64_t> id = paratune::ParseWorkerName("name", name); id.ok()) {
    FuzzCheck(*id >= 1, "a worker id is >= 1");
    const absl::StatusOr<int64_t> again =
        paratune::ParseWorkerName("name", paratune::WorkerName(*id));
    FuzzCheck(again.ok() && *again == *id, "a worker name round-trips");
  } else {
    FuzzCheck(id.status().code() == absl::StatusCode::kInvalidArgument,
              "a bad worker name is INVALID_ARGUMENT");
  }

  if (const absl::StatusOr<paratune::ProbeId> probe = paratune::ParseProbeName("name", name);
      probe.ok()) {
    FuzzCheck(probe->search_id >= 1 && probe->candidate >= 0 && probe->attempt >= 1,
              "a probe name's numbers are in range");
    const absl::StatusOr<paratune::ProbeId> again = paratune::ParseProbeName(
        "name", paratune::ProbeName(probe->search_id, probe->candidate, probe->attempt));
    FuzzCheck(again.ok() && again->search_id == probe->search_id &&
                  again->candidate == probe->candidate && again->attempt == probe->attempt,
              "a probe name round-trips");
  } else {
    FuzzCheck(probe.status().code() == absl::StatusCode::kInvalidArgument,
              "a bad probe name is INVALID_ARGUMENT");
  }
  return 0;
}
