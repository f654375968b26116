// How a scheduler resumes from its store (Scheduler::Create): workers get a fresh heartbeat
// allowance, leases whose probe is still running are kept so that their reports are accepted
// (and the ones whose AcquireProbe reply never left are handed over again), probes no lease
// runs any more are queued again, and each search's policy is rebuilt from its stored
// candidates.
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "server/core/resource_names.h"
#include "server/core/scheduler.h"
#include "server/core/search_events.h"

namespace paratune {

absl::Status Scheduler::RecoverLocked() {
  PT_ASSIGN_OR_RETURN(StoredState state, store_->Load());
  const absl::Time now = clock_->Now();
  // A worker that was alive when the server stopped gets a full allowance to heartbeat again
  // before it is declared lost.
  for (auto& [id, worker] : state.workers) workers_.Restore(id, std::move(worker), now);
  workers_.ReserveIdsThrough(state.last_worker_id);
  for (v1::Search& search : state.unfinished_searches) {
    PT_ASSIGN_OR_RETURN(const int64_t id, ParseSearchName("search.name", search.name()));
    const bool exempt = options_.is_admin && options_.is_admin(search.creator());
    active_.try_emplace(id, id, std::move(search)).first->second.set_exempt_from_limits(exempt);
  }
  for (internal::LeaseState& lease : state.leases) {
    auto record = active_.find(lease.search_id());
    // Otherwise its search ended or its candidate moved on in the same batch that should
    // have ended it; nothing can report to it any more.
    if (record != active_.end() && record->second.IsRunning(lease.candidate())) {
      leases_.Add(std::move(lease));
    } else {
      changes_.EndLease(lease.probe());
    }
  }
  for (auto& [id, worker] : workers_.all()) {
    const std::string& probe = worker.worker.current_probe();
    if (probe.empty() || leases_.FindMembership(probe, id, worker.worker.name()).ok()) continue;
    worker.worker.clear_current_probe();
    worker.worker.set_state(v1::WORKER_IDLE);
    StoreWorkerLocked(worker);
  }
  int64_t queued = 0;
  const std::vector<int64_t> ids = ActiveIdsLocked();
  for (int64_t id : ids) {
    ActiveSearch& record = active_.at(id);
    for (int64_t n : record.RequeueUnleased([&](int64_t n) { return leases_.IsLeased(id, n); })) {
      QueueLocked(record, n);
      ++queued;
    }
    if (absl::Status resumed = record.Resume(); !resumed.ok()) {
      // One search that cannot continue must not keep the server from starting.
      Log(LogLevel::kError, "search not resumed",
          {{"search", record.search().name()}, {"error", resumed.ToString()}});
      const std::string reason =
          absl::StrCat("could not resume after a restart: ", resumed.message());
      EndSearchLocked(record, v1::FAILED, reason);
      PublishLocked(record, {StoppedEvent(record.search())});
      continue;
    }
    AdvanceLocked(record, {ResumedEvent()});
  }
  UpdateWaitingReasonsLocked();
  PT_RETURN_IF_ERROR(CommitLocked());
  if (!ids.empty() || !workers_.all().empty()) {
    Log(LogLevel::kInfo, "resumed from the store",
        {{"searches", absl::StrCat(ids.size())},
         {"queued_probes", absl::StrCat(queued)},
         {"leased_probes", absl::StrCat(leases_.size())},
         {"workers", absl::StrCat(workers_.all().size())}});
  }
  return absl::OkStatus();
}

}  // namespace paratune
