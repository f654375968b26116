#include "server/core/hosting_memo.h"

#include <utility>

#include "convert/search_text.h"

namespace paratune {

HostingMemo::HostingMemo(const WorkerRegistry& workers) : workers_(workers) {
  for (const v1::Worker* worker : workers.Live()) {
    std::string probe = ReservedProbe(*worker);
    if (!probe.empty()) reserved_probes_.insert(std::move(probe));
  }
}

int64_t HostingMemo::HostableShares(const ProbeNeeds& needs) {
  if (reserved_probes_.contains(needs.probe)) return workers_.HostableShares(needs);
  const WorkerKind& kind = needs.kind;
  NeedsKey key{kind.backend,          kind.command_template, kind.gpu_type,
               kind.gpu_memory_bytes, needs.gpus_per_node,   needs.ranks};
  auto [count, inserted] = hostable_shares_.try_emplace(std::move(key));
  if (inserted) count->second = workers_.HostableShares(needs);
  return count->second;
}

bool HostingMemo::CanHost(const ProbeNeeds& needs) {
  return HostsEveryShare(needs, HostableShares(needs));
}

std::string HostingMemo::WhyUnplaceable(const ProbeNeeds& needs) {
  const int64_t hostable = HostableShares(needs);
  if (HostsEveryShare(needs, hostable)) return "";
  if (!fleet_.has_value()) fleet_ = DescribeFleet(workers_.Live());
  return UnplaceableReason(needs, hostable, *fleet_);
}

}  // namespace paratune
