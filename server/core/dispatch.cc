#include "server/core/dispatch.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "server/core/lease.h"
#include "server/core/worker_request.h"

namespace paratune {
namespace {

// Whether the worker holds a share of `lease` it has not reported yet.
bool HoldsShare(const internal::LeaseState& lease, int64_t worker_id) {
  const int member = MemberIndex(lease, worker_id);
  return member >= 0 && !lease.members(member).has_result();
}

}  // namespace

Dispatch::Dispatch(ChangeSet* changes) : changes_(changes) {}

const v1::Worker& Dispatch::Register(const v1::RegisterWorkerRequest& request,
                                     const std::string& registered_by, absl::Time now) {
  WorkerRegistry::Record& record = workers_.Add(request, now);
  record.worker.set_registered_by(registered_by);
  changes_->PutWorker(record.id, record.worker);
  return record.worker;
}

void Dispatch::Restore(std::map<int64_t, v1::Worker> workers, int64_t last_worker_id,
                       std::vector<internal::LeaseState> leases, absl::Time now,
                       absl::FunctionRef<bool(const internal::LeaseState&)> running) {
  for (auto& [id, worker] : workers) workers_.Restore(id, std::move(worker), now);
  workers_.ReserveIdsThrough(last_worker_id);
  for (internal::LeaseState& lease : leases) {
    if (running(lease)) {
      leases_.Add(std::move(lease));
    } else {
      changes_->EndLease(lease.probe());
    }
  }
  for (const auto& [id, record] : workers_.all()) {
    const std::string& probe = record.worker.current_probe();
    if (probe.empty()) continue;
    const internal::LeaseState* lease = leases_.Find(probe);
    if (lease == nullptr || !HoldsShare(*lease, id)) Free(workers_.Mutable(id));
  }
}

absl::StatusOr<std::vector<std::string>> Dispatch::Heartbeat(const v1::HeartbeatRequest& request,
                                                             absl::Time now) {
  PT_ASSIGN_OR_RETURN(const WorkerRegistry::Record* live, workers_.FindLive(request.worker()));
  WorkerRegistry::Record& worker = workers_.Mutable(live->id);
  worker.last_heartbeat = now;
  std::vector<std::string> cancel = std::exchange(worker.cancel_probes, {});
  for (const std::string& probe : request.running_probes()) {
    if (!leases_.FindMembership(probe, worker.id, worker.worker.name()).ok()) {
      cancel.push_back(probe);
    }
  }
  std::sort(cancel.begin(), cancel.end());
  cancel.erase(std::unique(cancel.begin(), cancel.end()), cancel.end());
  return cancel;
}

absl::StatusOr<Dispatch::Asked> Dispatch::Ask(const v1::AcquireProbeRequest& request,
                                              absl::Time now) {
  PT_ASSIGN_OR_RETURN(const WorkerRegistry::Record* live, workers_.FindLive(request.worker()));
  WorkerRegistry::Record& worker = workers_.Mutable(live->id);
  worker.last_asked = now;
  Asked asked;
  asked.worker_id = worker.id;
  const std::string& held = worker.worker.current_probe();
  if (held.empty()) return asked;
  if (held == request.last_probe()) {
    asked.unreported = Release(worker);
    return asked;
  }
  PT_ASSIGN_OR_RETURN(auto membership,
                      leases_.FindMembership(held, worker.id, worker.worker.name()));
  auto [lease, member] = membership;
  if (lease->members(member).delivered()) {
    Log(LogLevel::kWarning, "probe handed over again: its first reply never reached the worker",
        {{"worker", worker.worker.name()}, {"probe", held}});
  } else {
    lease->mutable_members(member)->set_delivered(true);
    changes_->PutLease(*lease);
  }
  asked.undelivered = lease;
  asked.member = member;
  return asked;
}

const internal::LeaseState& Dispatch::Lease(internal::LeaseState lease) {
  for (const internal::LeaseMember& member : lease.members()) {
    Hold(workers_.Mutable(member.worker_id()), lease.probe());
  }
  lease.mutable_members(0)->set_delivered(true);
  changes_->PutLease(lease);
  const std::string probe = lease.probe();
  leases_.Add(std::move(lease));
  return *leases_.Find(probe);
}

absl::StatusOr<Dispatch::Report> Dispatch::TakeReport(const v1::ReportProbeRequest& request,
                                                      PlausibilityCheck plausible) {
  PT_ASSIGN_OR_RETURN(const WorkerRegistry::Record* live, workers_.FindLive(request.worker()));
  WorkerRegistry::Record& worker = workers_.Mutable(live->id);
  const v1::ProbeResult& result = request.result();
  Report report;
  // A retry after a lost reply (or after a failed commit, which stored this one since).
  if (leases_.IsRepeatedReport(request.probe(), worker.id, result)) {
    report.repeated = true;
    return report;
  }
  PT_ASSIGN_OR_RETURN(auto membership,
                      leases_.FindMembership(request.probe(), worker.id, worker.worker.name()));
  auto [lease, member] = membership;
  PT_RETURN_IF_ERROR(ValidateProbeResult(result, lease->members_size() > 1));
  PT_RETURN_IF_ERROR(plausible(result, *lease, worker.worker));
  if (lease->members(member).has_result()) {
    return absl::FailedPreconditionError(absl::StrCat(
        worker.worker.name(), " reported a different result for ", request.probe(), " already"));
  }
  leases_.RememberReport(request.probe(), worker.id, result);
  worker.worker.set_probes_completed(worker.worker.probes_completed() + 1);
  changes_->PutWorker(worker.id, worker.worker);
  report.member = member;
  if (result.outcome() == v1::PROBE_OK) {
    *lease->mutable_members(member)->mutable_result() = result;
    if (!AllMembersReported(*lease)) {
      // Its ranks are done: the worker may take other work while the rest finish.
      changes_->PutLease(*lease);
      Free(worker);
      report.lease = *lease;
      return report;
    }
  }
  report.lease = *EndLease(request.probe(), worker.id);
  report.ended = true;
  return report;
}

absl::StatusOr<std::string> Dispatch::Rendezvous(const v1::RendezvousRequest& request) {
  PT_ASSIGN_OR_RETURN(const WorkerRegistry::Record* worker, workers_.FindLive(request.worker()));
  PT_ASSIGN_OR_RETURN(auto membership,
                      leases_.FindMembership(request.probe(), worker->id, worker->worker.name()));
  auto [lease, member] = membership;
  PT_ASSIGN_OR_RETURN(const bool changed, AcceptRendezvousToken(*lease, member, request.token()));
  if (changed) changes_->PutLease(*lease);
  return lease->rendezvous_token();
}

std::optional<internal::LeaseState> Dispatch::EndLease(const std::string& probe,
                                                       int64_t reporter_id) {
  if (!leases_.Contains(probe)) return std::nullopt;
  internal::LeaseState lease = leases_.End(probe);
  // `probe` may be a member's current_probe, which Free clears.
  const std::string& name = lease.probe();
  changes_->EndLease(name);
  for (const internal::LeaseMember& member : lease.members()) {
    // A member that reported its share before holds nothing of it any more, and may have left.
    const WorkerRegistry::Record* holder = workers_.Find(member.worker_id());
    if (holder == nullptr || holder->worker.current_probe() != name) continue;
    WorkerRegistry::Record& worker = workers_.Mutable(member.worker_id());
    // A member that never received its share has nothing to stop.
    if (member.worker_id() != reporter_id && member.delivered()) {
      worker.cancel_probes.push_back(name);
    }
    Free(worker);
  }
  return lease;
}

std::optional<internal::LeaseState> Dispatch::LoseWorker(int64_t worker_id) {
  WorkerRegistry::Record& worker = workers_.Mutable(worker_id);
  std::optional<internal::LeaseState> ended = Release(worker);
  worker.worker.set_state(v1::WORKER_LOST);
  worker.cancel_probes.clear();
  changes_->PutWorker(worker.id, worker.worker);
  return ended;
}

std::optional<internal::LeaseState> Dispatch::Deregister(int64_t worker_id) {
  if (workers_.Find(worker_id) == nullptr) return std::nullopt;
  std::optional<internal::LeaseState> ended = Release(workers_.Mutable(worker_id));
  workers_.Remove(worker_id);
  changes_->RemoveWorker(worker_id);
  return ended;
}

void Dispatch::Hold(WorkerRegistry::Record& worker, const std::string& probe) {
  worker.worker.set_state(v1::WORKER_BUSY);
  worker.worker.set_current_probe(probe);
  changes_->PutWorker(worker.id, worker.worker);
}

void Dispatch::Free(WorkerRegistry::Record& worker) {
  worker.worker.set_state(v1::WORKER_IDLE);
  worker.worker.clear_current_probe();
  changes_->PutWorker(worker.id, worker.worker);
}

std::optional<internal::LeaseState> Dispatch::Release(WorkerRegistry::Record& worker) {
  if (worker.worker.current_probe().empty()) return std::nullopt;
  return EndLease(worker.worker.current_probe(), worker.id);
}

}  // namespace paratune
