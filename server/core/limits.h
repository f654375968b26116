// What one caller may ask of a shared server (docs/operations.md, "Limits"): per-principal
// limits on unfinished searches and on probes in flight, a cap on the configurations a search
// or plan enumerates, and a cap on request sizes. Every refusal names the limit, its value and
// the paratune-server flag that sets it. Without tokens every caller is one anonymous
// principal; admins are exempt from the per-principal limits (not from the caps on sizes).
#ifndef PARATUNE_SERVER_CORE_LIMITS_H_
#define PARATUNE_SERVER_CORE_LIMITS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/core/principal.h"

namespace paratune {

// gRPC's default cap on a received message: the server receives at least this much, so that
// workers' reports are never capped by --max_request_bytes, and more when it is higher.
inline constexpr int64_t kGrpcMaxReceiveBytes = 4 << 20;
// The largest --max_request_bytes.
inline constexpr int64_t kMaxRequestBytes = 256 << 20;

struct Limits {
  // Unfinished searches one principal may have; 0: no limit. --max_searches_per_principal.
  int64_t max_searches_per_principal = 16;
  // Running probes (leases, a gang counting once) of one principal's searches; more wait
  // queued, saying so in Candidate.waiting_reason; 0: no limit.
  // --max_probes_in_flight_per_principal.
  int64_t max_probes_in_flight_per_principal = 64;
  // Configurations (dp, tp, pp, cp, b, v, recompute) a CreateSearch or Plan may enumerate;
  // 0: no limit. --max_enumerated_candidates.
  int64_t max_enumerated_candidates = 1'000'000;
  // Serialized size of a CreateSearch, Estimate or Plan request; 1 KiB to kMaxRequestBytes.
  // --max_request_bytes.
  int64_t max_request_bytes = kGrpcMaxReceiveBytes;
};

// INVALID_ARGUMENT naming the flag for a negative limit or a request cap outside
// [1 KiB, kMaxRequestBytes].
absl::Status ValidateLimits(const Limits& limits);

// Whether the per-principal limits spare `caller`: admins.
bool ExemptFromLimits(const Caller& caller);

// "alice"; "the anonymous principal" for searches created without tokens.
std::string LimitedPrincipal(absl::string_view owner);

// RESOURCE_EXHAUSTED: `owner` has `unfinished` searches, at the limit.
absl::Status TooManySearchesError(absl::string_view owner, int64_t unfinished, int64_t limit);
// INVALID_ARGUMENT: the spec enumerates `enumerated` configurations, over the cap.
absl::Status TooManyCandidatesError(int64_t enumerated, int64_t limit);
// INVALID_ARGUMENT: a `method` request of `bytes`, over the cap.
absl::Status RequestTooLargeError(absl::string_view method, int64_t bytes, int64_t limit);
// OK when `bytes` fits `limit`; else RequestTooLargeError.
absl::Status CheckRequestBytes(absl::string_view method, size_t bytes, int64_t limit);

// The waiting_reason of a queued candidate whose owner has `limit` probes in flight.
std::string ProbesInFlightWaitingReason(absl::string_view owner, int64_t limit);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_LIMITS_H_
