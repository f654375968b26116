// A probe lease (scheduler_state.proto's LeaseState) and the assignments it implies: pure
// functions, so that a restarted scheduler rebuilds exactly what it handed out before.
#ifndef PARATUNE_SERVER_CORE_LEASE_H_
#define PARATUNE_SERVER_CORE_LEASE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/probe.pb.h"
#include "proto/search.pb.h"
#include "proto/worker.pb.h"
#include "server/core/gang_placement.h"
#include "server/core/scheduler_state.pb.h"

namespace paratune {

// A lease of candidate n's probe `probe` on the shares' workers (`workers[i]` runs
// shares[i]), expiring at `expires_unix_nanos`. Member i runs on the first num_ranks GPUs of
// its worker, in registration order.
internal::LeaseState MakeLease(const std::string& probe, int64_t search_id, int64_t candidate,
                               v1::ProbeScope scope, int64_t num_ranks,
                               const std::vector<RankShare>& shares,
                               const std::vector<const v1::Worker*>& workers,
                               int64_t expires_unix_nanos);

// Member `member`'s assignment of `lease`, a probe of candidate lease.candidate() of `search`
// (whose name gives the workers' names' form).
v1::ProbeAssignment MemberAssignment(const v1::Search& search, const internal::LeaseState& lease,
                                     int member);

// The index of worker `worker_id` among the lease's members, or -1.
int MemberIndex(const internal::LeaseState& lease, int64_t worker_id);

// Whether every member reported PROBE_OK.
bool AllMembersReported(const internal::LeaseState& lease);

// Where the lease's probe runs, for ProbeResult.ran_on: one entry per member, in rank order.
std::vector<v1::ProbeHost> LeaseHosts(const internal::LeaseState& lease);

// How a probe ended once member `member` of `ended` (its lease, just ended) reported
// `reported`, a final outcome other than PROBE_INFRA_ERROR.
struct ProbeEnding {
  // What to record: the gang's combined result when every member reported PROBE_OK
  // (gang_result.h), else the report, its message naming the member of a gang.
  v1::ProbeResult result;
  // Who ran it, for the search's event: "workers/1 + workers/2", or the failing member.
  std::string where;
};
ProbeEnding EndingOf(const internal::LeaseState& ended, int member,
                     const v1::ProbeResult& reported);

// The reporting worker of member `member` for people: its name, and its place in a gang.
std::string MemberLabel(const internal::LeaseState& lease, int member);

// Takes member `member`'s rendezvous token for the lease (only gang[0] sends one), its size
// checked already (ValidateRendezvousRequest, worker_request.h). Returns whether the lease
// changed. INVALID_ARGUMENT when another member sends one; FAILED_PRECONDITION for a second,
// different token.
absl::StatusOr<bool> AcceptRendezvousToken(internal::LeaseState& lease, int member,
                                           const std::string& token);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_LEASE_H_
