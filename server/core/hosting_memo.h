// WorkerRegistry::WhyUnplaceable (and so CanHost) for many probes while the registry stays as
// it is: one scheduler pass over the queue asks it of every queued candidate, and most of
// them need the same thing of the fleet. Each distinct need is answered once.
//
// A probe's answer depends on its name only when workers are reserved for it
// (kProbeReservationLabel, launch_target.h): then the registry answers afresh. Every other
// probe is kept off every reserved worker alike, so probes with equal needs share an answer.
#ifndef PARATUNE_SERVER_CORE_HOSTING_MEMO_H_
#define PARATUNE_SERVER_CORE_HOSTING_MEMO_H_

#include <cstdint>
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
  bool CanHost(const ProbeNeeds& needs) { return WhyUnplaceable(needs).empty(); }

 private:
  // ProbeNeeds without the probe's name (its shard group is in the answer's text).
  using NeedsKey = std::tuple<std::string, std::string, std::string, int64_t, int64_t, int64_t,
                              DataParallelSharding, int64_t, int64_t>;

  const WorkerRegistry& workers_;
  // Probes that live workers are reserved for.
  absl::flat_hash_set<std::string> reserved_probes_;
  absl::flat_hash_map<NeedsKey, std::string> answers_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_HOSTING_MEMO_H_
