// Resource names of the API: searches/{id}, searches/{id}/candidates/{n},
// searches/{id}/candidates/{n}/probes/{attempt}, workers/{id}.
#ifndef PARATUNE_SERVER_CORE_RESOURCE_NAMES_H_
#define PARATUNE_SERVER_CORE_RESOURCE_NAMES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace paratune {

std::string SearchName(int64_t id);
std::string CandidateName(int64_t search_id, int64_t n);
std::string ProbeName(int64_t search_id, int64_t n, int64_t attempt);
std::string WorkerName(int64_t id);

// The parts of a probe name.
struct ProbeId {
  int64_t search_id = 0;
  int64_t candidate = 0;
  int64_t attempt = 0;
};

// The id of "searches/{id}" (id >= 1). INVALID_ARGUMENT naming `field` and the value
// otherwise.
absl::StatusOr<int64_t> ParseSearchName(absl::string_view field, absl::string_view name);
// The id of "workers/{id}" (id >= 1). INVALID_ARGUMENT naming `field` and the value otherwise.
absl::StatusOr<int64_t> ParseWorkerName(absl::string_view field, absl::string_view name);
// "searches/{id}/candidates/{n}/probes/{attempt}" (id >= 1, n >= 0, attempt >= 1).
// INVALID_ARGUMENT naming `field` and the value otherwise.
absl::StatusOr<ProbeId> ParseProbeName(absl::string_view field, absl::string_view name);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_RESOURCE_NAMES_H_
