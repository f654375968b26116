// WorkerRegistry::WhyUnplaceable (and so CanHost) for many probes while the registry stays as
// it is: one scheduler pass over the queue asks it of every queued candidate, and most of
// them need the same thing of the fleet. How many node shares the fleet could host is counted
// once per distinct need; the fleet is described once.
//
// A probe's answer depends on its name only when workers are reserved for it
// (kProbeReservationLabel, launch_target.h): then the registry answers afresh. Every other
// probe is kept off every reserved worker alike, so probes with equal needs share a count.
#ifndef PARATUNE_SERVER_CORE_HOSTING_MEMO_H_
#define PARATUNE_SERVER_CORE_HOSTING_MEMO_H_

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "server/core/probe_needs.h"
#include "server/core/worker_registry.h"

namespace paratune {

// Valid while `workers` does not change; holds a reference to it.
class HostingMemo {
 public:
  explicit HostingMemo(const WorkerRegistry& workers);

  // WorkerRegistry::WhyUnplaceable(needs): empty when the live workers could host it.
  std::string WhyUnplaceable(const ProbeNeeds& needs);
  // WorkerRegistry::CanHost(needs).
  bool CanHost(const ProbeNeeds& needs);

 private:
  // WorkerRegistry::HostableShares(needs).
  int64_t HostableShares(const ProbeNeeds& needs);

  // What of ProbeNeeds decides which workers can host it and how many node shares it has:
  // its kind, the cluster's GPUs per node and its ranks (not its name nor its shard group,
  // which only the reason's text names).
  using NeedsKey = std::tuple<std::string, std::string, std::string, int64_t, int64_t, int64_t>;

  const WorkerRegistry& workers_;
  // Probes that live workers are reserved for.
  absl::flat_hash_set<std::string> reserved_probes_;
  absl::flat_hash_map<NeedsKey, int64_t> hostable_shares_;
  // DescribeFleet of the live workers, once a reason needs it.
  std::optional<std::string> fleet_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_HOSTING_MEMO_H_
