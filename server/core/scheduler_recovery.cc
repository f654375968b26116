// How a scheduler resumes from its store (Scheduler::Create): workers get a fresh heartbeat
// allowance, leases whose probe is still running are kept so that their reports are accepted
// (and the ones whose AcquireProbe reply never left are handed over again), probes no lease
// runs any more are queued again, and each search's policy is rebuilt from its stored
// candidates.
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "convert/search_state.h"
#include "server/core/resource_names.h"
#include "server/core/scheduler.h"
#include "server/core/search_events.h"

namespace paratune {

absl::Status Scheduler::RecoverLocked() {
  PT_ASSIGN_OR_RETURN(StoredState state, store_->Load());
  std::map<int64_t, v1::Search*> unfinished;
  for (v1::Search& search : state.unfinished_searches) {
    PT_ASSIGN_OR_RETURN(const int64_t id, ParseSearchName("search.name", search.name()));
    unfinished[id] = &search;
  }
  // A worker that was alive when the server stopped gets a full allowance to heartbeat again
  // before it is declared lost. A lease whose candidate moved on was left by the batch that
  // should have ended it, or its search ended: nothing can report to it any more.
  dispatch_.Restore(std::move(state.workers), state.last_worker_id, std::move(state.leases),
                    clock_->Now(), [&](const internal::LeaseState& lease) {
                      auto it = unfinished.find(lease.search_id());
                      if (it == unfinished.end()) return false;
                      const v1::Search& search = *it->second;
                      const int64_t n = lease.candidate();
                      return n >= 0 && n < search.candidates_size() &&
                             search.candidates(n).state() == v1::CANDIDATE_RUNNING;
                    });
  int64_t queued = 0;
  for (auto& [id, search] : unfinished) {
    const bool exempt = options_.is_admin && options_.is_admin(search->creator());
    ActiveSearch& record =
        active_
            .try_emplace(id, ActiveSearch::Resume(id, std::move(*search), exempt,
                                                  [&, id = id](int64_t n) {
                                                    return dispatch_.leases().IsLeased(id, n);
                                                  }))
            .first->second;
    if (SearchEnded(record.search().state())) {
      // One search that cannot continue must not keep the server from starting.
      Log(LogLevel::kError, "search not resumed",
          {{"search", record.search().name()}, {"stop_reason", record.search().stop_reason()}});
      StopProbingLocked(id, /*stop_running=*/true);
      PublishLocked(record, {StoppedEvent(record.search())});
      continue;
    }
    for (int64_t n = 0; n < record.search().candidates_size(); ++n) {
      if (record.search().candidates(n).state() != v1::CANDIDATE_QUEUED) continue;
      QueueLocked(record, n);
      ++queued;
    }
    AdvanceLocked(record, {ResumedEvent()});
  }
  UpdateWaitingReasonsLocked();
  RetireEndedLocked();
  PT_RETURN_IF_ERROR(CommitLocked());
  if (!unfinished.empty() || !dispatch_.workers().all().empty()) {
    Log(LogLevel::kInfo, "resumed from the store",
        {{"searches", absl::StrCat(unfinished.size())},
         {"queued_probes", absl::StrCat(queued)},
         {"leased_probes", absl::StrCat(dispatch_.leases().size())},
         {"workers", absl::StrCat(dispatch_.workers().all().size())}});
  }
  return absl::OkStatus();
}

}  // namespace paratune
