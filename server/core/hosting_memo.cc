#include "server/core/hosting_memo.h"

#include <utility>

namespace paratune {

HostingMemo::HostingMemo(const WorkerRegistry& workers) : workers_(workers) {
  for (const v1::Worker* worker : workers.Live()) {
    std::string probe = ReservedProbe(*worker);
    if (!probe.empty()) reserved_probes_.insert(std::move(probe));
  }
}

std::string HostingMemo::WhyUnplaceable(const ProbeNeeds& needs) {
  if (reserved_probes_.contains(needs.probe)) return workers_.WhyUnplaceable(needs);
  const ShardGroup& group = needs.shard_group;
  NeedsKey key{needs.kind.backend,  needs.kind.command_template,
               needs.kind.gpu_type, needs.kind.gpu_memory_bytes,
               needs.gpus_per_node, needs.ranks,
               group.sharding,      group.ranks,
               group.data_parallel};
  auto [answer, inserted] = answers_.try_emplace(std::move(key));
  if (inserted) answer->second = workers_.WhyUnplaceable(needs);
  return answer->second;
}

}  // namespace paratune
