#include "server/core/worker_registry.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "convert/search_text.h"
#include "estimator/cluster_spec.h"
#include "server/core/resource_names.h"

namespace paratune {

WorkerRegistry::Record& WorkerRegistry::Add(const v1::RegisterWorkerRequest& request,
                                            absl::Time now) {
  const int64_t id = ++last_id_;
  Record& record = workers_[id];
  record.id = id;
  record.last_heartbeat = now;
  v1::Worker& worker = record.worker;
  worker.set_name(WorkerName(id));
  worker.set_hostname(request.hostname());
  *worker.mutable_gpus() = request.gpus();
  *worker.mutable_backends() = request.backends();
  *worker.mutable_labels() = request.labels();
  *worker.mutable_command_templates() = request.command_templates();
  // Validation made every GPU of a worker the same type.
  worker.set_gpu_type(CatalogGpuType(request.gpus(0).name(), request.gpus(0).memory_bytes()));
  worker.set_state(v1::WORKER_IDLE);
  return record;
}

WorkerRegistry::Record& WorkerRegistry::Restore(int64_t id, v1::Worker worker, absl::Time now) {
  last_id_ = std::max(last_id_, id);
  Record& record = workers_[id];
  record = Record{id, std::move(worker), now, {}};
  return record;
}

void WorkerRegistry::Remove(int64_t id) { workers_.erase(id); }

absl::StatusOr<const WorkerRegistry::Record*> WorkerRegistry::FindLive(
    absl::string_view name) const {
  const absl::StatusOr<int64_t> id = ParseWorkerName("worker", name);
  if (!id.ok()) return id.status();
  auto it = workers_.find(*id);
  if (it == workers_.end() || it->second.worker.state() == v1::WORKER_LOST) {
    return absl::NotFoundError(
        absl::StrCat("worker ", name, " is not registered",
                     it == workers_.end() ? "" : " (declared lost after missing heartbeats)",
                     "; register again"));
  }
  return &it->second;
}

const WorkerRegistry::Record* WorkerRegistry::Find(int64_t id) const {
  auto it = workers_.find(id);
  return it == workers_.end() ? nullptr : &it->second;
}

std::vector<int64_t> WorkerRegistry::Silent(absl::Time now, absl::Duration limit) const {
  std::vector<int64_t> silent;
  for (const auto& [id, record] : workers_) {
    if (record.worker.state() != v1::WORKER_LOST && now - record.last_heartbeat > limit) {
      silent.push_back(id);
    }
  }
  return silent;
}

std::vector<int64_t> WorkerRegistry::ReservedWorkers(const std::string& probe) const {
  std::vector<int64_t> reserved;
  for (const auto& [id, record] : workers_) {
    if (record.worker.state() != v1::WORKER_LOST && ReservedFor(record.worker, probe)) {
      reserved.push_back(id);
    }
  }
  return reserved;
}

bool WorkerRegistry::HasReservedWorkers(const std::string& probe) const {
  return !ReservedWorkers(probe).empty();
}

std::vector<FreeWorker> WorkerRegistry::Eligible(const ProbeNeeds& needs, bool free_only,
                                                 int64_t except_id) const {
  const bool probe_reserved = HasReservedWorkers(needs.probe);
  std::vector<FreeWorker> eligible;
  for (const auto& [id, record] : workers_) {
    const v1::Worker& worker = record.worker;
    if (id == except_id || worker.state() == v1::WORKER_LOST) continue;
    if (free_only && !worker.current_probe().empty()) continue;
    if (!WorkerMismatch(worker, needs, probe_reserved).empty()) continue;
    eligible.push_back(FreeWorker{id, worker.gpus_size()});
  }
  return eligible;
}

std::vector<const v1::Worker*> WorkerRegistry::Live() const {
  std::vector<const v1::Worker*> live;
  for (const auto& [id, record] : workers_) {
    if (record.worker.state() != v1::WORKER_LOST) live.push_back(&record.worker);
  }
  return live;
}

std::optional<std::vector<RankShare>> WorkerRegistry::Place(const ProbeNeeds& needs,
                                                            const Record& requester,
                                                            absl::Time now) const {
  if (!WorkerMismatch(requester.worker, needs, HasReservedWorkers(needs.probe)).empty()) {
    return std::nullopt;
  }
  const std::vector<FreeWorker> others = Eligible(needs, /*free_only=*/true, requester.id);
  const std::vector<int64_t> shares = NodeShares(needs.ranks, needs.gpus_per_node);
  const int64_t gpus = requester.worker.gpus_size();
  if (shares.size() == 1) {
    for (const FreeWorker& other : others) {
      const bool tighter = other.gpus >= shares[0] && other.gpus < gpus;
      if (tighter && now - workers_.at(other.worker_id).last_asked <= kAskedRecently) {
        return std::nullopt;
      }
    }
  }
  return PlaceGang(needs.ranks, needs.gpus_per_node, FreeWorker{requester.id, gpus}, others);
}

int64_t WorkerRegistry::HostableShares(const ProbeNeeds& needs) const {
  return paratune::HostableShares(needs.ranks, needs.gpus_per_node,
                                  Eligible(needs, /*free_only=*/false));
}

bool WorkerRegistry::CanHost(const ProbeNeeds& needs) const {
  return HostsEveryShare(needs, HostableShares(needs));
}

std::string WorkerRegistry::WhyUnplaceable(const ProbeNeeds& needs) const {
  const int64_t hostable = HostableShares(needs);
  if (HostsEveryShare(needs, hostable)) return "";
  return UnplaceableReason(needs, hostable, DescribeFleet(Live()));
}

bool HostsEveryShare(const ProbeNeeds& needs, int64_t hostable) {
  return hostable == static_cast<int64_t>(NodeShares(needs.ranks, needs.gpus_per_node).size());
}

std::string UnplaceableReason(const ProbeNeeds& needs, int64_t hostable, absl::string_view fleet) {
  return absl::StrCat("needs ", DescribeNeeds(needs), "; live workers: ", fleet, "; they can host ",
                      hostable, " of its ", NodeShares(needs.ranks, needs.gpus_per_node).size(),
                      " node shares");
}

}  // namespace paratune
