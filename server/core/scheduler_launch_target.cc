// The scheduler's side of LaunchTarget (launch_target.h): what a launcher of workers sees of
// the queue, and what follows when a launch ends or is refused.
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "server/core/resource_names.h"
#include "server/core/scheduler.h"
#include "server/core/search_events.h"

namespace paratune {

std::vector<PendingProbe> Scheduler::PendingProbes() {
  absl::MutexLock lock(&mu_);
  std::vector<PendingProbe> pending;
  absl::flat_hash_map<std::string, int64_t> in_flight;
  for (int64_t id : ActiveIdsLocked()) {
    const ActiveSearch& record = active_.at(id);
    const v1::SearchSpec& spec = record.search().spec();
    // Probes waiting for their principal's limit are not the launcher's to start.
    const bool at_limit = AtProbeLimitLocked(record, in_flight);
    for (int64_t n = 0; n < record.search().candidates_size(); ++n) {
      const v1::Candidate& candidate = record.search().candidates(n);
      if (!Pending(candidate)) continue;
      if (at_limit && candidate.state() == v1::CANDIDATE_QUEUED) continue;
      PendingProbe& probe = pending.emplace_back();
      probe.backend = spec.probe().backend();
      probe.command_template = spec.probe().command_template();
      probe.group_size =
          candidate.config().tensor_parallel() * candidate.config().context_parallel();
      probe.gpus_per_node = spec.cluster().gpus_per_node();
      if (candidate.state() == v1::CANDIDATE_QUEUED) {
        const ProbeNeeds needs = NextProbeLocked(record, n).second;
        probe.probe = needs.probe;
        probe.ranks = needs.ranks;
        probe.unplaceable = !candidate.waiting_reason().empty();
        probe.deadline = absl::Seconds(record.Timing(n).deadline_seconds);
        continue;
      }
      probe.probe = ProbeName(id, n, candidate.attempts());
      probe.running = true;
      const internal::LeaseState* lease = leases_.Find(probe.probe);
      if (lease == nullptr) continue;
      probe.ranks = lease->num_ranks();
      probe.deadline = absl::Seconds(lease->deadline_seconds());
      for (const internal::LeaseMember& member : lease->members()) {
        const WorkerRecord* worker = workers_.Find(member.worker_id());
        probe.on_reserved_workers |= worker != nullptr && ReservedFor(worker->worker, probe.probe);
      }
    }
  }
  return pending;
}

absl::Status Scheduler::LaunchEnded(absl::string_view probe, const std::string& reason) {
  PT_ASSIGN_OR_RETURN(const ProbeId id, ParseProbeName("probe", probe));
  return Mutate([&]() -> absl::Status {
    for (int64_t worker_id : workers_.ReservedWorkers(std::string(probe))) {
      WorkerRecord& worker = *workers_.Find(worker_id);
      Log(LogLevel::kInfo, "worker gone with its launch",
          {{"worker", worker.worker.name()}, {"probe", std::string(probe)}, {"reason", reason}});
      LoseWorkerLocked(worker, reason);
    }
    CountLaunchAttemptLocked(id, reason);
    UpdateWaitingReasonsLocked();
    return absl::OkStatus();
  });
}

absl::Status Scheduler::LaunchRefused(absl::string_view probe, const std::string& reason) {
  PT_ASSIGN_OR_RETURN(const ProbeId id, ParseProbeName("probe", probe));
  return Mutate([&]() -> absl::Status {
    if (!CountLaunchAttemptLocked(id, reason)) return absl::OkStatus();
    auto it = active_.find(id.search_id);
    if (it == active_.end()) return absl::OkStatus();
    ActiveSearch& record = it->second;
    const int64_t in_a_row = record.NoteRefusal(reason);
    const int64_t limit = record.search().spec().probe().max_launch_failures();
    if (in_a_row >= limit) {
      const std::string stop_reason =
          absl::StrCat("stopped after ", in_a_row,
                       " launches in a row were refused the same way (probe.max_launch_failures ",
                       limit, "): ", reason);
      EndSearchLocked(record, v1::FAILED, stop_reason);
      PublishLocked(record, {StoppedEvent(record.search())});
    }
    UpdateWaitingReasonsLocked();
    return absl::OkStatus();
  });
}

bool Scheduler::CountLaunchAttemptLocked(const ProbeId& id, const std::string& reason) {
  auto record = active_.find(id.search_id);
  if (record == active_.end() || id.candidate >= record->second.search().candidates_size()) {
    return false;
  }
  const v1::Candidate& candidate = record->second.search().candidates(id.candidate);
  if (candidate.state() != v1::CANDIDATE_QUEUED || candidate.attempts() + 1 != id.attempt) {
    return false;
  }
  // Re-queued behind the search's other candidates, as a failed lease would be.
  queue_.Remove({id.search_id, id.candidate});
  record->second.CountAttempt(id.candidate);
  RetryOrGiveUpLocked(record->second, id.candidate, reason, {});
  return true;
}

}  // namespace paratune
