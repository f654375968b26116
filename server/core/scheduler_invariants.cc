#include "server/core/scheduler_invariants.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "convert/search_progress.h"
#include "convert/search_state.h"
#include "google/protobuf/util/message_differencer.h"
#include "server/core/dispatch_invariants.h"
#include "server/core/resource_names.h"

namespace paratune {

using ::google::protobuf::util::MessageDifferencer;

std::vector<std::string> SchedulerInvariants::Violations(Scheduler& scheduler) {
  absl::MutexLock lock(&scheduler.mu_);
  std::vector<std::string> violations = DispatchViolations(scheduler.dispatch_);
  if (!scheduler.ended_.empty()) {
    violations.push_back(absl::StrCat(scheduler.ended_.size(), " ended searches left to retire"));
  }
  const LeaseTable& leases = scheduler.dispatch_.leases();
  int64_t queued = 0;
  for (const auto& [id, record] : scheduler.active_) {
    const v1::Search& search = record.search();
    if (SearchEnded(search.state())) {
      violations.push_back(absl::StrCat(search.name(), " ended but is still active"));
    }
    // The progress tallied as candidates changed is what counting them all says.
    if (!MessageDifferencer::Equals(search.progress(), ProgressOf(search))) {
      violations.push_back(
          absl::StrCat(search.name(), "'s progress {", search.progress().ShortDebugString(),
                       "} is not its candidates' {", ProgressOf(search).ShortDebugString(), "}"));
    }
    for (int64_t n = 0; n < search.candidates_size(); ++n) {
      const v1::Candidate& candidate = search.candidates(n);
      queued += candidate.state() == v1::CANDIDATE_QUEUED;
      const std::string probe = ProbeName(id, n, candidate.attempts());
      if (candidate.state() == v1::CANDIDATE_RUNNING && !leases.Contains(probe)) {
        violations.push_back(
            absl::StrCat(candidate.name(), " is running without its lease ", probe));
      }
    }
  }
  for (const auto& [probe, lease] : leases.all()) {
    auto it = scheduler.active_.find(lease.search_id());
    const v1::Search* search = it == scheduler.active_.end() ? nullptr : &it->second.search();
    const int64_t n = lease.candidate();
    if (search == nullptr || SearchEnded(search->state()) || n >= search->candidates_size() ||
        search->candidates(n).state() != v1::CANDIDATE_RUNNING ||
        ProbeName(lease.search_id(), n, search->candidates(n).attempts()) != probe) {
      violations.push_back(absl::StrCat("lease ", probe, " runs no running candidate"));
    }
  }
  if (scheduler.queue_.size() != queued) {
    violations.push_back(absl::StrCat("the queue holds ", scheduler.queue_.size(), " probes for ",
                                      queued, " queued candidates"));
  }
  return violations;
}

std::vector<std::string> SchedulerInvariants::StoreDifferences(Scheduler& scheduler) {
  absl::MutexLock lock(&scheduler.mu_);
  absl::StatusOr<StoredState> stored = scheduler.store_->Load();
  if (!stored.ok()) return {absl::StrCat("the store cannot be read: ", stored.status().ToString())};
  std::vector<std::string> differences;
  const Dispatch& dispatch = scheduler.dispatch_;
  for (const auto& [id, record] : dispatch.workers().all()) {
    auto it = stored->workers.find(id);
    if (it == stored->workers.end() || !MessageDifferencer::Equals(it->second, record.worker)) {
      differences.push_back(absl::StrCat(WorkerName(id), " is stored otherwise"));
    }
  }
  for (const auto& [id, worker] : stored->workers) {
    if (dispatch.workers().Find(id) == nullptr) {
      differences.push_back(absl::StrCat(WorkerName(id), " is stored but not registered"));
    }
  }
  std::map<std::string, const internal::LeaseState*> stored_leases;
  for (const internal::LeaseState& lease : stored->leases) stored_leases[lease.probe()] = &lease;
  for (const auto& [probe, lease] : dispatch.leases().all()) {
    auto it = stored_leases.find(probe);
    if (it == stored_leases.end() || !MessageDifferencer::Equals(*it->second, lease)) {
      differences.push_back(absl::StrCat("lease ", probe, " is stored otherwise"));
    }
  }
  for (const auto& [probe, lease] : stored_leases) {
    if (!dispatch.leases().Contains(probe)) {
      differences.push_back(absl::StrCat("lease ", probe, " is stored but has ended"));
    }
  }
  return differences;
}

void SchedulerInvariants::MarkBusyWithoutLease(Scheduler& scheduler, absl::string_view worker) {
  absl::MutexLock lock(&scheduler.mu_);
  const int64_t id = *ParseWorkerName("worker", worker);
  v1::Worker& planted = scheduler.dispatch_.workers_.Mutable(id).worker;
  planted.set_state(v1::WORKER_BUSY);
  // Stored, as a transition would: only the invariant can tell.
  scheduler.changes_.PutWorker(id, planted);
}

}  // namespace paratune
