#include "server/core/dispatch_invariants.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "server/core/lease.h"
#include "server/core/resource_names.h"

namespace paratune {

std::vector<std::string> DispatchViolations(const Dispatch& dispatch) {
  std::vector<std::string> violations;
  const LeaseTable& leases = dispatch.leases();
  for (const auto& [id, record] : dispatch.workers().all()) {
    const v1::Worker& worker = record.worker;
    const std::string& probe = worker.current_probe();
    const std::string name =
        absl::StrCat(WorkerName(id), " is ", v1::WorkerState_Name(worker.state()));
    if (worker.state() != v1::WORKER_BUSY) {
      if (!probe.empty()) violations.push_back(absl::StrCat(name, " but holds ", probe));
      continue;
    }
    const internal::LeaseState* lease = probe.empty() ? nullptr : leases.Find(probe);
    const int member = lease == nullptr ? -1 : MemberIndex(*lease, id);
    if (member < 0 || lease->members(member).has_result()) {
      violations.push_back(
          absl::StrCat(name, " but holds no share of a live lease",
                       probe.empty() ? "" : absl::StrCat(" (it names ", probe, ")")));
    }
  }
  for (const auto& [probe, lease] : leases.all()) {
    bool unreported = false;
    std::set<int64_t> members;
    for (const internal::LeaseMember& member : lease.members()) {
      const std::string who = WorkerName(member.worker_id());
      if (!members.insert(member.worker_id()).second) {
        violations.push_back(absl::StrCat("lease ", probe, " has ", who, " twice"));
      }
      if (member.has_result()) continue;
      unreported = true;
      const WorkerRegistry::Record* worker = dispatch.workers().Find(member.worker_id());
      if (worker == nullptr || worker->worker.state() != v1::WORKER_BUSY ||
          worker->worker.current_probe() != probe) {
        violations.push_back(
            absl::StrCat("lease ", probe, " has a share on ", who, ", which does not hold it"));
      }
    }
    if (!unreported) {
      violations.push_back(absl::StrCat("lease ", probe, " is live with every member reported"));
    }
  }
  return violations;
}

}  // namespace paratune
