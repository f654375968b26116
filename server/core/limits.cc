#include "server/core/limits.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace paratune {
namespace {

constexpr int64_t kMinRequestBytes = 1024;

}  // namespace

absl::Status ValidateLimits(const Limits& limits) {
  const std::pair<const char*, int64_t> counts[] = {
      {"max_searches_per_principal", limits.max_searches_per_principal},
      {"max_probes_in_flight_per_principal", limits.max_probes_in_flight_per_principal},
      {"max_enumerated_candidates", limits.max_enumerated_candidates},
  };
  for (const auto& [flag, value] : counts) {
    if (value < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, " (", value, ") must be >= 0 (0: no limit)"));
    }
  }
  if (limits.max_request_bytes < kMinRequestBytes || limits.max_request_bytes > kMaxRequestBytes) {
    return absl::InvalidArgumentError(absl::StrCat("--max_request_bytes (",
                                                   limits.max_request_bytes, ") must be in [",
                                                   kMinRequestBytes, ", ", kMaxRequestBytes, "]"));
  }
  return absl::OkStatus();
}

bool ExemptFromLimits(const Caller& caller) {
  return caller.has_value() && caller->role == Role::kAdmin;
}

std::string LimitedPrincipal(absl::string_view owner) {
  return owner.empty() ? "the anonymous principal" : std::string(owner);
}

absl::Status TooManySearchesError(absl::string_view owner, int64_t unfinished, int64_t limit) {
  return absl::ResourceExhaustedError(absl::StrCat(
      LimitedPrincipal(owner), " has ", unfinished,
      " unfinished searches, the limit per principal (--max_searches_per_principal=", limit,
      "); wait for one to end or cancel one"));
}

absl::Status TooManyCandidatesError(int64_t enumerated, int64_t limit) {
  return absl::InvalidArgumentError(absl::StrCat(
      "the spec enumerates ", enumerated,
      " configurations, more than the limit (--max_enumerated_candidates=", limit,
      "); narrow spec.space (micro-batch sizes, virtual pipeline sizes, recompute modes) or "
      "the cluster"));
}

absl::Status RequestTooLargeError(absl::string_view method, int64_t bytes, int64_t limit) {
  return absl::InvalidArgumentError(absl::StrCat(method, " request (", bytes,
                                                 " bytes) is larger than the limit "
                                                 "(--max_request_bytes=",
                                                 limit, ")"));
}

absl::Status CheckRequestBytes(absl::string_view method, size_t bytes, int64_t limit) {
  if (static_cast<int64_t>(bytes) <= limit) return absl::OkStatus();
  return RequestTooLargeError(method, static_cast<int64_t>(bytes), limit);
}

std::string ProbesInFlightWaitingReason(absl::string_view owner, int64_t limit) {
  return absl::StrCat("waiting: ", LimitedPrincipal(owner), " has ", limit,
                      " probes in flight, the limit per principal "
                      "(--max_probes_in_flight_per_principal=",
                      limit, ")");
}

}  // namespace paratune
