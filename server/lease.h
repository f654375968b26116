// A probe lease (scheduler_state.proto's LeaseState) and the assignments it implies: pure
// functions, so that a restarted scheduler rebuilds exactly what it handed out before.
#ifndef PARATUNE_SERVER_LEASE_H_
#define PARATUNE_SERVER_LEASE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "proto/probe.pb.h"
#include "proto/search.pb.h"
#include "server/gang_placement.h"
#include "server/scheduler_state.pb.h"

namespace paratune {

// The worker a lease member runs on, as the lease needs it.
struct LeaseWorker {
  int64_t id = 0;
  std::string hostname;
  // Gpu.index of the worker's GPUs, in registration order.
  std::vector<int64_t> gpu_indices;
  // Their device name and catalog type (Worker.gpu_type).
  std::string gpu_name;
  std::string gpu_type;
};

// A lease of candidate n's probe `probe` on the shares' workers (`workers` in share order),
// expiring at `expires_unix_nanos`. Member i runs on the first num_ranks GPUs of its worker.
internal::LeaseState MakeLease(const std::string& probe, int64_t search_id, int64_t candidate,
                               v1::ProbeScope scope, int64_t num_ranks,
                               const std::vector<RankShare>& shares,
                               const std::vector<LeaseWorker>& workers, int64_t expires_unix_nanos);

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

}  // namespace paratune

#endif  // PARATUNE_SERVER_LEASE_H_
