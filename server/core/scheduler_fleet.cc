// The scheduler as the fleet sees it (Scheduler::Fleet): the WorkerService's calls, what a
// launcher of workers sees of the queue (LaunchTarget) and what follows when a launch ends or
// is refused, and who hears that probes were queued.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "convert/search_state.h"
#include "server/core/lease.h"
#include "server/core/resource_names.h"
#include "server/core/result_plausibility.h"
#include "server/core/scheduler.h"
#include "server/core/search_events.h"
#include "server/core/worker_request.h"

namespace paratune {

absl::StatusOr<v1::RegisterWorkerResponse> Scheduler::Fleet::RegisterWorker(
    const v1::RegisterWorkerRequest& request, const Caller& caller) {
  PT_RETURN_IF_ERROR(ValidateRegisterWorkerRequest(request));
  v1::Worker registered;
  PT_RETURN_IF_ERROR(scheduler_.Mutate([&]() -> absl::Status {
    registered =
        scheduler_.dispatch_.Register(request, OwnerName(caller), scheduler_.clock_->Now());
    // A larger fleet may place probes that waited for GPUs, and parked workers may now
    // form gangs with this one.
    scheduler_.UpdateWaitingReasonsLocked();
    scheduler_.changes_.NoteProbesQueued();
    return absl::OkStatus();
  }));
  v1::RegisterWorkerResponse response;
  response.set_name(registered.name());
  response.set_heartbeat_interval_seconds(
      absl::ToDoubleSeconds(scheduler_.options_.heartbeat_interval));
  Log(LogLevel::kInfo, "worker registered",
      {{"worker", registered.name()},
       {"registered_by", caller.has_value() ? caller->name : "anyone (no tokens)"},
       {"hostname", registered.hostname()},
       {"gpus", absl::StrCat(registered.gpus_size())},
       {"gpu_type",
        registered.gpu_type().empty() ? "none of the catalog's" : registered.gpu_type()},
       {"backends", absl::StrJoin(registered.backends(), ",")}});
  return response;
}

absl::Status Scheduler::Fleet::CheckWorkerAccess(absl::string_view worker,
                                                 const Caller& caller) const {
  if (!caller.has_value() || caller->role == Role::kAdmin) return absl::OkStatus();
  PT_ASSIGN_OR_RETURN(const int64_t id, ParseWorkerName("worker", worker));
  absl::MutexLock lock(&scheduler_.mu_);
  const WorkerRegistry::Record* record = scheduler_.dispatch_.workers().Find(id);
  if (record == nullptr || MayAccess(caller, record->worker.registered_by())) {
    return absl::OkStatus();
  }
  return absl::NotFoundError(absl::StrCat("worker ", WorkerName(id), " was not registered by ",
                                          caller->name, "; register again"));
}

absl::Status Scheduler::Fleet::DeregisterWorker(const v1::DeregisterWorkerRequest& request) {
  PT_ASSIGN_OR_RETURN(const int64_t id, ParseWorkerName("worker", request.worker()));
  PT_RETURN_IF_ERROR(ValidateDeregisterWorkerRequest(request));
  return scheduler_.Mutate([&]() -> absl::Status {
    if (scheduler_.dispatch_.workers().Find(id) == nullptr) return absl::OkStatus();
    const std::string reason =
        absl::StrCat(WorkerName(id), " left",
                     request.reason().empty() ? "" : absl::StrCat(": ", request.reason()));
    Log(LogLevel::kInfo, "worker deregistered",
        {{"worker", WorkerName(id)}, {"reason", request.reason()}});
    if (std::optional<internal::LeaseState> ended = scheduler_.dispatch_.Deregister(id)) {
      scheduler_.RetryLeaseLocked(*ended, reason, {});
    }
    scheduler_.UpdateWaitingReasonsLocked();
    return absl::OkStatus();
  });
}

absl::StatusOr<v1::HeartbeatResponse> Scheduler::Fleet::Heartbeat(
    const v1::HeartbeatRequest& request) {
  PT_RETURN_IF_ERROR(ValidateHeartbeatRequest(request));
  absl::MutexLock lock(&scheduler_.mu_);
  PT_ASSIGN_OR_RETURN(std::vector<std::string> cancel,
                      scheduler_.dispatch_.Heartbeat(request, scheduler_.clock_->Now()));
  v1::HeartbeatResponse response;
  for (std::string& probe : cancel) response.add_cancel_probes(std::move(probe));
  return response;
}

absl::StatusOr<std::optional<v1::ProbeAssignment>> Scheduler::Fleet::TryAcquireProbe(
    const v1::AcquireProbeRequest& request) {
  PT_RETURN_IF_ERROR(ValidateAcquireProbeRequest(request));
  std::optional<v1::ProbeAssignment> assignment;
  // When the lease cannot be stored the worker is not told: its next call, which does not
  // name the lease as its last probe, hands the same share over.
  PT_RETURN_IF_ERROR(scheduler_.Mutate([&]() -> absl::Status {
    const absl::Time now = scheduler_.clock_->Now();
    PT_ASSIGN_OR_RETURN(const Dispatch::Asked asked, scheduler_.dispatch_.Ask(request, now));
    if (asked.undelivered != nullptr) {
      const internal::LeaseState& lease = *asked.undelivered;
      assignment = MemberAssignment(scheduler_.FindLiveLocked(lease.search_id())->search(), lease,
                                    asked.member);
      return absl::OkStatus();
    }
    if (asked.unreported.has_value()) {
      scheduler_.RetryLeaseLocked(
          *asked.unreported,
          absl::StrCat(WorkerName(asked.worker_id), " ran ", asked.unreported->probe(),
                       " but its report never arrived"),
          {});
    }
    assignment =
        scheduler_.LeaseNextLocked(*scheduler_.dispatch_.workers().Find(asked.worker_id), now);
    return absl::OkStatus();
  }));
  return assignment;
}

absl::Status Scheduler::Fleet::ReportProbe(const v1::ReportProbeRequest& request) {
  PT_RETURN_IF_ERROR(ParseProbeName("probe", request.probe()).status());
  return scheduler_.Mutate([&]() -> absl::Status {
    const auto plausible = [this](const v1::ProbeResult& result, const internal::LeaseState& lease,
                                  const v1::Worker& worker) -> absl::Status {
      PT_ASSIGN_OR_RETURN(
          const ResultLimits limits,
          ResultLimitsOf(scheduler_.FindLiveLocked(lease.search_id())->search().spec(), worker));
      return CheckResultPlausible(result, limits);
    };
    PT_ASSIGN_OR_RETURN(const Dispatch::Report report,
                        scheduler_.dispatch_.TakeReport(request, plausible));
    if (report.repeated) return absl::OkStatus();
    const internal::LeaseState& lease = report.lease;
    const v1::ProbeResult& result = request.result();
    ActiveSearch& record = *scheduler_.FindLiveLocked(lease.search_id());
    record.AddGpuSeconds(result.wall_seconds() * lease.members(report.member).num_ranks(),
                         result.outcome() != v1::PROBE_OK);
    if (!report.ended) {
      // The search is stored with the share, so that its GPU time counts after a restart too.
      scheduler_.PublishLocked(record, {ShareFinishedEvent(lease, report.member)});
      return absl::OkStatus();
    }
    if (result.outcome() == v1::PROBE_INFRA_ERROR) {
      scheduler_.RetryLeaseLocked(
          lease,
          absl::StrCat("infrastructure error on ", MemberLabel(lease, report.member), ": ",
                       result.message()),
          {});
      return absl::OkStatus();
    }
    ProbeEnding ending = EndingOf(lease, report.member, result);
    scheduler_.RecordResultLocked(record, lease.candidate(), std::move(ending.result), lease,
                                  report.member);
    return absl::OkStatus();
  });
}

absl::StatusOr<v1::RendezvousResponse> Scheduler::Fleet::Rendezvous(
    const v1::RendezvousRequest& request) {
  PT_RETURN_IF_ERROR(ParseProbeName("probe", request.probe()).status());
  PT_RETURN_IF_ERROR(ValidateRendezvousRequest(request));
  v1::RendezvousResponse response;
  PT_RETURN_IF_ERROR(scheduler_.Mutate([&]() -> absl::Status {
    PT_ASSIGN_OR_RETURN(std::string token, scheduler_.dispatch_.Rendezvous(request));
    response.set_token(std::move(token));
    return absl::OkStatus();
  }));
  return response;
}

void Scheduler::Fleet::AddListener(ProbesQueuedListener* listener) {
  absl::MutexLock lock(&scheduler_.listeners_mu_);
  scheduler_.listeners_.push_back(listener);
}

void Scheduler::Fleet::RemoveListener(ProbesQueuedListener* listener) {
  absl::MutexLock lock(&scheduler_.listeners_mu_);
  std::vector<ProbesQueuedListener*>& listeners = scheduler_.listeners_;
  listeners.erase(std::remove(listeners.begin(), listeners.end(), listener), listeners.end());
}

std::vector<PendingProbe> Scheduler::Fleet::PendingProbes() {
  absl::MutexLock lock(&scheduler_.mu_);
  std::vector<PendingProbe> pending;
  absl::flat_hash_map<std::string, int64_t> in_flight;
  HostingMemo hosting(scheduler_.dispatch_.workers());
  for (int64_t id : scheduler_.ActiveIdsLocked()) {
    const ActiveSearch& record = scheduler_.active_.at(id);
    const v1::SearchSpec& spec = record.search().spec();
    // Probes waiting for their principal's limit are not the launcher's to start.
    const bool at_limit = scheduler_.AtProbeLimitLocked(record, in_flight);
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
        const ProbeNeeds needs = scheduler_.NextProbeLocked(record, n, hosting).second;
        probe.probe = needs.probe;
        probe.ranks = needs.ranks;
        probe.unplaceable = !candidate.waiting_reason().empty();
        probe.deadline = absl::Seconds(record.Timing(n).deadline_seconds);
        continue;
      }
      probe.probe = ProbeName(id, n, candidate.attempts());
      probe.running = true;
      const internal::LeaseState* lease = scheduler_.dispatch_.leases().Find(probe.probe);
      if (lease == nullptr) continue;
      probe.ranks = lease->num_ranks();
      probe.deadline = absl::Seconds(lease->deadline_seconds());
      for (const internal::LeaseMember& member : lease->members()) {
        const WorkerRegistry::Record* worker =
            scheduler_.dispatch_.workers().Find(member.worker_id());
        probe.on_reserved_workers |= worker != nullptr && ReservedFor(worker->worker, probe.probe);
      }
    }
  }
  return pending;
}

absl::Status Scheduler::Fleet::LaunchEnded(absl::string_view probe, const std::string& reason) {
  PT_ASSIGN_OR_RETURN(const ProbeId id, ParseProbeName("probe", probe));
  return scheduler_.Mutate([&]() -> absl::Status {
    for (int64_t worker : scheduler_.dispatch_.workers().ReservedWorkers(std::string(probe))) {
      Log(LogLevel::kInfo, "worker gone with its launch",
          {{"worker", WorkerName(worker)}, {"probe", std::string(probe)}, {"reason", reason}});
      scheduler_.LoseWorkerLocked(worker, reason);
    }
    CountLaunchAttemptLocked(id, reason, ActiveSearch::Unfinished::kLaunchEnded);
    scheduler_.UpdateWaitingReasonsLocked();
    return absl::OkStatus();
  });
}

absl::Status Scheduler::Fleet::LaunchRefused(absl::string_view probe, const std::string& reason) {
  PT_ASSIGN_OR_RETURN(const ProbeId id, ParseProbeName("probe", probe));
  return scheduler_.Mutate([&]() -> absl::Status {
    if (!CountLaunchAttemptLocked(id, reason, ActiveSearch::Unfinished::kLaunchRefused)) {
      return absl::OkStatus();
    }
    scheduler_.UpdateWaitingReasonsLocked();
    return absl::OkStatus();
  });
}

bool Scheduler::Fleet::CountLaunchAttemptLocked(const ProbeId& id, const std::string& reason,
                                                ActiveSearch::Unfinished how) {
  ActiveSearch* record = scheduler_.FindLiveLocked(id.search_id);
  if (record == nullptr || id.candidate >= record->search().candidates_size()) return false;
  const v1::Candidate& candidate = record->search().candidates(id.candidate);
  if (candidate.state() != v1::CANDIDATE_QUEUED || candidate.attempts() + 1 != id.attempt) {
    return false;
  }
  // Re-queued behind the search's other candidates, as a failed lease would be.
  scheduler_.queue_.Remove({id.search_id, id.candidate});
  const ActiveSearch::Retried retried = record->Retry(id.candidate, reason, how);
  scheduler_.RetriedLocked(*record, id.candidate, reason, retried.gave_up, {});
  // Unless the give-up ended it already.
  if (retried.stop_reason.has_value() && !SearchEnded(record->search().state())) {
    scheduler_.EndSearchLocked(*record, v1::FAILED, *retried.stop_reason);
    scheduler_.PublishLocked(*record, {StoppedEvent(record->search())});
  }
  return true;
}

}  // namespace paratune
