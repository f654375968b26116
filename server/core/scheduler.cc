#include "server/core/scheduler.h"

#include <algorithm>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "convert/search_request.h"
#include "convert/search_state.h"
#include "convert/search_view.h"
#include "convert/spec_convert.h"
#include "estimator/planner.h"
#include "google/protobuf/util/time_util.h"
#include "server/core/gang_result.h"
#include "server/core/lease.h"
#include "server/core/resource_names.h"
#include "server/core/search_events.h"
#include "server/core/search_planning.h"
#include "server/core/stop_reasons.h"
#include "server/core/worker_request.h"

namespace paratune {
namespace {

int64_t ReplicaGpus(const v1::ParallelConfig& config) {
  return config.tensor_parallel() * config.pipeline_parallel() * config.context_parallel();
}

}  // namespace

Scheduler::Scheduler(Options options, std::unique_ptr<SearchStore> store)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : RealClock()),
      store_(std::move(store)),
      reader_(store_.get()) {}

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(Options options,
                                                             std::unique_ptr<SearchStore> store) {
  std::unique_ptr<Scheduler> scheduler(new Scheduler(std::move(options), std::move(store)));
  absl::MutexLock lock(&scheduler->mu_);
  PT_RETURN_IF_ERROR(scheduler->RecoverLocked());
  return scheduler;
}

void Scheduler::AddListener(ProbesQueuedListener* listener) {
  absl::MutexLock lock(&listeners_mu_);
  listeners_.push_back(listener);
}

void Scheduler::RemoveListener(ProbesQueuedListener* listener) {
  absl::MutexLock lock(&listeners_mu_);
  listeners_.erase(std::remove(listeners_.begin(), listeners_.end(), listener), listeners_.end());
}

void Scheduler::NotifyListeners() {
  absl::MutexLock lock(&listeners_mu_);
  for (ProbesQueuedListener* listener : listeners_) listener->OnProbesQueued();
}

absl::Status Scheduler::CommitLocked() {
  absl::Status status = changes_.Commit(*store_);
  if (!status.ok()) {
    Log(LogLevel::kError, "storing scheduler state failed; retrying with the next change",
        {{"error", status.ToString()}});
  }
  return status;
}

absl::Status Scheduler::Mutate(absl::FunctionRef<absl::Status()> change) {
  absl::Status status;
  bool queued = false;
  {
    absl::MutexLock lock(&mu_);
    status = change();
    // Whatever `change` did before failing is stored too: a failure never leaves memory and
    // store apart for longer than the next commit.
    absl::Status committed = CommitLocked();
    if (status.ok()) status = std::move(committed);
    queued = changes_.TakeProbesQueued();
  }
  if (queued) NotifyListeners();
  return status;
}

absl::StatusOr<v1::Search> Scheduler::CreateSearch(const v1::CreateSearchRequest& request,
                                                   const Caller& caller) {
  PT_ASSIGN_OR_RETURN(ValidatedSearchRequest validated, ValidateCreateSearchRequest(request));
  const int64_t max_enumerated = options_.limits.max_enumerated_candidates;
  if (max_enumerated > 0) {
    const int64_t enumerated = CountEnumeratedConfigurations(
        validated.resolved.cluster.world_size(), validated.resolved.plan_options);
    if (enumerated > max_enumerated) return TooManyCandidatesError(enumerated, max_enumerated);
  }
  {
    // Checked again below, once planned: this only spares the planning of a refused search.
    absl::MutexLock lock(&mu_);
    PT_RETURN_IF_ERROR(CheckSearchLimitLocked(caller));
  }
  // Planning runs before the search exists and outside the lock.
  PT_ASSIGN_OR_RETURN(PlannedSearch planned, PlanSearch(validated.spec));
  PT_ASSIGN_OR_RETURN(const int64_t id, store_->AllocateSearchId());

  ActiveSearch record(id, request, validated, std::move(planned), clock_->Now());
  record.set_creator(OwnerName(caller));
  record.set_exempt_from_limits(ExemptFromLimits(caller));
  const bool nothing_to_probe = !record.has_candidates();
  std::vector<v1::SearchEvent> events = {
      CreatedEvent(record.search(), ProbesRiskyConfigurations(validated.spec.space()))};
  if (nothing_to_probe) events.push_back(StoppedEvent(record.search()));

  v1::Search created;
  bool queued = false;
  {
    absl::MutexLock lock(&mu_);
    if (shutdown_) return absl::UnavailableError("the server is shutting down");
    PT_RETURN_IF_ERROR(CheckSearchLimitLocked(caller));
    // Stored before it is queued: a search the store refused never runs, and earlier
    // changes are stored first so that a refusal discards only this search.
    PT_RETURN_IF_ERROR(CommitLocked());
    PublishLocked(active_.try_emplace(id, std::move(record)).first->second, std::move(events));
    if (absl::Status status = CommitLocked(); !status.ok()) {
      active_.erase(id);
      changes_.Discard();
      return status;
    }
    if (!nothing_to_probe) AdvanceLocked(active_.at(id), {});
    UpdateWaitingReasonsLocked();
    // The search exists now: a failure to store its first picks is retried with the next
    // change (CheckLeases makes one every half heartbeat interval), not reported as a
    // failure to create it.
    CommitLocked().IgnoreError();
    auto active = active_.find(id);
    if (active != active_.end()) {
      created = active->second.search();
    } else {
      PT_ASSIGN_OR_RETURN(created, store_->GetSearch(id));
    }
    queued = changes_.TakeProbesQueued();
  }
  Log(LogLevel::kInfo, "search created",
      {{"search", created.name()},
       {"creator", DescribeCaller(caller)},
       {"state", v1::SearchState_Name(created.state())},
       {"selected", absl::StrCat(created.counts().selected())},
       {"memory_safe", absl::StrCat(created.counts().memory_safe())},
       {"stop_reason", created.stop_reason()}});
  if (queued) NotifyListeners();
  return ClientView(std::move(created));
}

absl::StatusOr<v1::Search> Scheduler::CancelSearch(absl::string_view name, const Caller& caller) {
  PT_ASSIGN_OR_RETURN(const int64_t id, ParseSearchName("name", name));
  const std::string who = DescribeCaller(caller);
  PT_RETURN_IF_ERROR(Mutate([&]() -> absl::Status {
    auto it = active_.find(id);
    if (it == active_.end()) {
      PT_ASSIGN_OR_RETURN(v1::Search search, store_->GetSearch(id));
      if (!MayAccess(caller, search.creator())) return SearchNotFoundError(id);
      return absl::FailedPreconditionError(absl::StrCat(
          "search ", search.name(), " already ended (", v1::SearchState_Name(search.state()),
          "); only a running search can be cancelled"));
    }
    ActiveSearch& record = it->second;
    if (!MayAccess(caller, record.search().creator())) return SearchNotFoundError(id);
    const int64_t stopped = static_cast<int64_t>(leases_.OfSearch(id).size());
    const v1::SearchCounts& counts = record.search().counts();
    // The members hear about it on their next heartbeat; until then they are free to ask
    // for another probe, which gives this one up anyway.
    EndSearchLocked(record, v1::CANCELLED,
                    absl::StrCat("cancelled by ", who, " after ", counts.probed(), " of ",
                                 counts.selected(), " selected candidates were probed"));
    PublishLocked(
        record, {CancelledEvent(record.search(), caller.has_value() ? caller->name : "", stopped)});
    return absl::OkStatus();
  }));
  Log(LogLevel::kInfo, "search cancelled", {{"search", SearchName(id)}, {"by", who}});
  return reader_.GetSearch(name, caller);
}

absl::StatusOr<Scheduler::WatchStart> Scheduler::Watch(absl::string_view name,
                                                       SearchObserver* observer,
                                                       const Caller& caller) {
  PT_ASSIGN_OR_RETURN(const int64_t id, ParseSearchName("name", name));
  absl::MutexLock lock(&mu_);
  if (shutdown_) return absl::UnavailableError("the server is shutting down");
  auto it = active_.find(id);
  if (it == active_.end()) {
    PT_ASSIGN_OR_RETURN(v1::Search search, store_->GetSearch(id));
    if (!MayAccess(caller, search.creator())) return SearchNotFoundError(id);
    return WatchStart{std::move(search), true};
  }
  if (!MayAccess(caller, it->second.search().creator())) return SearchNotFoundError(id);
  it->second.observers().push_back(observer);
  return WatchStart{it->second.search(), false};
}

void Scheduler::Unwatch(absl::string_view name, SearchObserver* observer) {
  absl::StatusOr<int64_t> id = ParseSearchName("name", name);
  if (!id.ok()) return;
  absl::MutexLock lock(&mu_);
  changes_.ForgetObserver(observer);
  auto it = active_.find(*id);
  if (it == active_.end()) return;
  std::vector<SearchObserver*>& observers = it->second.observers();
  observers.erase(std::remove(observers.begin(), observers.end(), observer), observers.end());
}

absl::StatusOr<v1::RegisterWorkerResponse> Scheduler::RegisterWorker(
    const v1::RegisterWorkerRequest& request, const Caller& caller) {
  PT_RETURN_IF_ERROR(ValidateRegisterWorkerRequest(request));
  v1::RegisterWorkerResponse response;
  v1::Worker registered;
  PT_RETURN_IF_ERROR(Mutate([&]() -> absl::Status {
    WorkerRecord& record = workers_.Add(request, clock_->Now());
    record.worker.set_registered_by(OwnerName(caller));
    StoreWorkerLocked(record);
    registered = record.worker;
    // A larger fleet may place probes that waited for GPUs, and parked workers may now
    // form gangs with this one.
    UpdateWaitingReasonsLocked();
    changes_.NoteProbesQueued();
    return absl::OkStatus();
  }));
  response.set_name(registered.name());
  response.set_heartbeat_interval_seconds(absl::ToDoubleSeconds(options_.heartbeat_interval));
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

absl::Status Scheduler::CheckWorkerAccess(absl::string_view worker, const Caller& caller) const {
  if (!caller.has_value() || caller->role == Role::kAdmin) return absl::OkStatus();
  PT_ASSIGN_OR_RETURN(const int64_t id, ParseWorkerName("worker", worker));
  absl::MutexLock lock(&mu_);
  const auto it = workers_.all().find(id);
  if (it == workers_.all().end() || MayAccess(caller, it->second.worker.registered_by())) {
    return absl::OkStatus();
  }
  return absl::NotFoundError(absl::StrCat("worker ", WorkerName(id), " was not registered by ",
                                          caller->name, "; register again"));
}

absl::Status Scheduler::DeregisterWorker(const v1::DeregisterWorkerRequest& request) {
  PT_ASSIGN_OR_RETURN(const int64_t id, ParseWorkerName("worker", request.worker()));
  PT_RETURN_IF_ERROR(ValidateDeregisterWorkerRequest(request));
  return Mutate([&]() -> absl::Status {
    WorkerRecord* worker = workers_.Find(id);
    if (worker == nullptr) return absl::OkStatus();
    const std::string reason =
        absl::StrCat(worker->worker.name(), " left",
                     request.reason().empty() ? "" : absl::StrCat(": ", request.reason()));
    Log(LogLevel::kInfo, "worker deregistered",
        {{"worker", worker->worker.name()}, {"reason", request.reason()}});
    ReleaseLeaseLocked(*worker, reason, /*lost_because=*/std::nullopt);
    workers_.Remove(id);
    changes_.RemoveWorker(id);
    UpdateWaitingReasonsLocked();
    return absl::OkStatus();
  });
}

absl::StatusOr<v1::HeartbeatResponse> Scheduler::Heartbeat(const v1::HeartbeatRequest& request) {
  PT_RETURN_IF_ERROR(ValidateHeartbeatRequest(request));
  absl::MutexLock lock(&mu_);
  PT_ASSIGN_OR_RETURN(WorkerRecord * worker, workers_.FindLive(request.worker()));
  worker->last_heartbeat = clock_->Now();
  v1::HeartbeatResponse response;
  std::vector<std::string> cancel = std::move(worker->cancel_probes);
  worker->cancel_probes.clear();
  for (const std::string& probe : request.running_probes()) {
    if (!leases_.FindMembership(probe, worker->id, worker->worker.name()).ok()) {
      cancel.push_back(probe);
    }
  }
  std::sort(cancel.begin(), cancel.end());
  cancel.erase(std::unique(cancel.begin(), cancel.end()), cancel.end());
  for (std::string& probe : cancel) response.add_cancel_probes(std::move(probe));
  return response;
}

absl::StatusOr<std::optional<v1::ProbeAssignment>> Scheduler::TryAcquireProbe(
    const v1::AcquireProbeRequest& request) {
  PT_RETURN_IF_ERROR(ValidateAcquireProbeRequest(request));
  std::optional<v1::ProbeAssignment> assignment;
  // When the lease cannot be stored the worker is not told: its next call, which does not
  // name the lease as its last probe, hands the same share over.
  PT_RETURN_IF_ERROR(Mutate([&]() -> absl::Status {
    PT_ASSIGN_OR_RETURN(WorkerRecord * worker, workers_.FindLive(request.worker()));
    assignment = AcquireLocked(*worker, request.last_probe());
    return absl::OkStatus();
  }));
  return assignment;
}

std::optional<v1::ProbeAssignment> Scheduler::AcquireLocked(WorkerRecord& worker,
                                                            absl::string_view last_probe) {
  const absl::Time now = clock_->Now();
  worker.last_asked = now;
  const std::string held = worker.worker.current_probe();
  if (!held.empty()) {
    auto membership = leases_.FindMembership(held, worker.id, worker.worker.name());
    // The worker asks only when it runs nothing: a share it holds but did not receive last
    // never reached it.
    if (membership.ok() && held != last_probe) {
      auto [lease, member] = *membership;
      if (lease->members(member).delivered()) {
        Log(LogLevel::kWarning, "probe handed over again: its first reply never reached the worker",
            {{"worker", worker.worker.name()}, {"probe", held}});
      } else {
        lease->mutable_members(member)->set_delivered(true);
        changes_.PutLease(*lease);
      }
      return MemberAssignment(active_.at(lease->search_id()).search(), *lease, member);
    }
    ReleaseLeaseLocked(
        worker, absl::StrCat(worker.worker.name(), " ran ", held, " but its report never arrived"),
        /*lost_because=*/std::nullopt);
  }
  v1::ProbeScope scope = v1::PROBE_SCOPE_UNSPECIFIED;
  int64_t ranks = 0;
  std::vector<RankShare> shares;
  absl::flat_hash_map<std::string, int64_t> in_flight;
  std::optional<ProbeQueue::Item> item = queue_.PopFirstFitting([&](const ProbeQueue::Item& item) {
    auto it = active_.find(item.search_id);
    if (it == active_.end()) return false;
    if (AtProbeLimitLocked(it->second, in_flight)) {
      held_back_by_limit_ = true;
      return false;
    }
    auto [probe_scope, needs] = NextProbeLocked(it->second, item.candidate);
    std::optional<std::vector<RankShare>> placed = workers_.Place(needs, worker, now);
    if (!placed.has_value()) return false;
    scope = probe_scope;
    ranks = needs.ranks;
    shares = *std::move(placed);
    return true;
  });
  if (!item.has_value()) return std::nullopt;
  // The other members' parked calls must look again to receive their shares.
  if (shares.size() > 1) changes_.NoteProbesQueued();
  return LeaseLocked(active_.at(item->search_id), item->candidate, scope, ranks, shares);
}

absl::Status Scheduler::ReportProbe(const v1::ReportProbeRequest& request) {
  PT_RETURN_IF_ERROR(ParseProbeName("probe", request.probe()).status());
  return Mutate([&]() -> absl::Status {
    PT_ASSIGN_OR_RETURN(WorkerRecord * worker, workers_.FindLive(request.worker()));
    const v1::ProbeResult& result = request.result();
    // A retry after a lost reply (or a failed commit, which Mutate retries now).
    if (leases_.IsRepeatedReport(request.probe(), worker->id, result)) return absl::OkStatus();
    PT_ASSIGN_OR_RETURN(auto membership,
                        leases_.FindMembership(request.probe(), worker->id, worker->worker.name()));
    auto [lease, member] = membership;
    PT_RETURN_IF_ERROR(ValidateProbeResult(result, lease->members_size() > 1));
    if (lease->members(member).has_result()) {
      return absl::FailedPreconditionError(absl::StrCat(
          worker->worker.name(), " reported a different result for ", request.probe(), " already"));
    }
    leases_.RememberReport(request.probe(), worker->id, result);
    worker->worker.set_probes_completed(worker->worker.probes_completed() + 1);
    active_.at(lease->search_id())
        .AddGpuSeconds(result.wall_seconds() * lease->members(member).num_ranks(),
                       result.outcome() != v1::PROBE_OK);
    if (result.outcome() == v1::PROBE_OK) {
      *lease->mutable_members(member)->mutable_result() = result;
      if (!AllMembersReported(*lease)) {
        // Its ranks are done: the worker may take other work while the rest finish. The
        // search is stored with the share, so that its GPU time counts after a restart too.
        changes_.PutLease(*lease);
        worker->worker.set_state(v1::WORKER_IDLE);
        worker->worker.clear_current_probe();
        StoreWorkerLocked(*worker);
        PublishLocked(active_.at(lease->search_id()), {ShareFinishedEvent(*lease, member)});
        return absl::OkStatus();
      }
    }
    const internal::LeaseState ended = EndLeaseLocked(request.probe(), worker->id);
    StoreWorkerLocked(*worker);
    ActiveSearch& record = active_.at(ended.search_id());
    if (result.outcome() == v1::PROBE_INFRA_ERROR) {
      RetryOrGiveUpLocked(record, ended.candidate(),
                          absl::StrCat("infrastructure error on ", MemberLabel(ended, member), ": ",
                                       result.message()),
                          {});
      return absl::OkStatus();
    }
    ProbeEnding ending = EndingOf(ended, member, result);
    RecordResultLocked(record, ended.candidate(), std::move(ending.result), &ended, member, {});
    return absl::OkStatus();
  });
}

absl::StatusOr<v1::RendezvousResponse> Scheduler::Rendezvous(const v1::RendezvousRequest& request) {
  PT_RETURN_IF_ERROR(ParseProbeName("probe", request.probe()).status());
  PT_RETURN_IF_ERROR(ValidateRendezvousRequest(request));
  v1::RendezvousResponse response;
  PT_RETURN_IF_ERROR(Mutate([&]() -> absl::Status {
    PT_ASSIGN_OR_RETURN(WorkerRecord * worker, workers_.FindLive(request.worker()));
    PT_ASSIGN_OR_RETURN(auto membership,
                        leases_.FindMembership(request.probe(), worker->id, worker->worker.name()));
    auto [lease, member] = membership;
    PT_ASSIGN_OR_RETURN(const bool changed, AcceptRendezvousToken(*lease, member, request.token()));
    if (changed) changes_.PutLease(*lease);
    response.set_token(lease->rendezvous_token());
    return absl::OkStatus();
  }));
  return response;
}

void Scheduler::CheckLeases() {
  // A commit error is logged by CommitLocked and retried at the next call.
  Mutate([&]() -> absl::Status {
    const absl::Time now = clock_->Now();
    const absl::Duration silence_limit =
        options_.heartbeat_interval * options_.missed_heartbeats_until_lost;
    for (int64_t id : workers_.Silent(now, silence_limit)) {
      WorkerRecord& worker = *workers_.Find(id);
      const std::string cause = absl::StrCat(
          "no heartbeat for ",
          absl::FormatDuration(absl::Trunc(now - worker.last_heartbeat, absl::Milliseconds(100))));
      Log(LogLevel::kWarning, "worker lost", {{"worker", worker.worker.name()}, {"reason", cause}});
      LoseWorkerLocked(worker, cause);
    }
    for (const std::string& probe : leases_.Overdue(now)) {
      const internal::LeaseState ended = EndLeaseLocked(probe, /*reporter_id=*/0);
      auto record = active_.find(ended.search_id());
      if (record == active_.end()) continue;
      RetryOrGiveUpLocked(record->second, ended.candidate(),
                          absl::StrCat(probe, " was not reported within its deadline plus ",
                                       absl::FormatDuration(options_.lease_grace)),
                          {});
    }
    for (int64_t id : ActiveIdsLocked()) {
      auto record = active_.find(id);
      if (record != active_.end() &&
          DeadlinePassed(record->second.search().spec().budget(), record->second.Use(now))) {
        AdvanceLocked(record->second, {});
      }
    }
    UpdateWaitingReasonsLocked();
    return absl::OkStatus();
  }).IgnoreError();
}

void Scheduler::Shutdown() {
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
  for (auto& [id, record] : active_) {
    for (SearchObserver* observer : record.observers()) {
      changes_.ForgetObserver(observer);
      observer->OnSchedulerShutdown();
    }
    record.observers().clear();
  }
}

SchedulerStats Scheduler::Stats() const {
  absl::MutexLock lock(&mu_);
  SchedulerStats stats;
  stats.totals = ended_totals_;
  for (const auto& [id, record] : active_) AddActiveSearch(record.search(), stats);
  stats.searches.insert(stats.searches.end(), ended_summaries_.summaries().begin(),
                        ended_summaries_.summaries().end());
  stats.queued_probes = queue_.size();
  stats.running_probes = leases_.size();
  for (const auto& [id, record] : workers_.all()) {
    ++stats.workers[record.worker.state()];
    stats.worker_gpus[record.worker.state()] += record.worker.gpus_size();
  }
  return stats;
}

void Scheduler::PublishLocked(ActiveSearch& record, std::vector<v1::SearchEvent> events) {
  const absl::Time now = clock_->Now();
  for (v1::SearchEvent& event : events) {
    *event.mutable_time() =
        google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(now));
  }
  SearchUpdate update = record.TakeUpdate(now);
  // Watchers are sent what changed: the search's own fields and the candidates this change
  // named, in selection order, so that a change costs the same in a search of 20 and of 20,000
  // candidates (the client derives the rest, convert/search_view.h).
  if (!record.observers().empty()) {
    v1::WatchSearchResponse change;
    *change.mutable_search() = update.fields;
    for (const auto& [n, candidate] : update.candidates) {
      *change.add_changed_candidates() = candidate;
    }
    change.mutable_events()->Add(events.begin(), events.end());
    changes_.Tell(record.observers(), std::move(change));
  }
  changes_.PutSearch(record.id(), std::move(update), events, now);
  if (SearchEnded(record.search().state())) {
    AddSearchTotals(record.search(), ended_totals_);
    ended_summaries_.Add(SummarizeSearch(record.search()));
    const int64_t id = record.id();
    active_.erase(id);
  }
}

void Scheduler::StoreWorkerLocked(const WorkerRecord& worker) {
  changes_.PutWorker(worker.id, worker.worker);
}

std::pair<v1::ProbeScope, ProbeNeeds> Scheduler::NextProbeLocked(const ActiveSearch& record,
                                                                 int64_t n) {
  const v1::SearchSpec& spec = record.search().spec();
  const v1::Candidate& candidate = record.search().candidates(n);
  const std::string probe = ProbeName(record.id(), n, candidate.attempts() + 1);
  v1::ProbeScope scope = spec.probe().scope();
  ProbeNeeds full = NeedsOf(spec, probe, record.world_size());
  // FULL when the fleet could run every rank at once, even if it is busy now: a full probe
  // measures the data-parallel traffic a replica can only model.
  if (scope == v1::PROBE_SCOPE_UNSPECIFIED) {
    scope = workers_.CanHost(full) ? v1::PROBE_SCOPE_FULL : v1::PROBE_SCOPE_REPLICA;
  }
  if (scope == v1::PROBE_SCOPE_FULL) return {scope, std::move(full)};
  return {scope, NeedsOf(spec, probe, ReplicaGpus(candidate.config()))};
}

v1::ProbeAssignment Scheduler::LeaseLocked(ActiveSearch& record, int64_t n, v1::ProbeScope scope,
                                           int64_t ranks, const std::vector<RankShare>& shares) {
  const v1::ProbeSettings& probe = record.search().spec().probe();
  record.Leased(n, WorkerName(shares[0].worker_id));
  const v1::Candidate& candidate = record.search().candidates(n);

  const std::string name = ProbeName(record.id(), n, candidate.attempts());
  std::vector<const v1::Worker*> members;
  for (const RankShare& share : shares) {
    WorkerRecord& worker = *workers_.Find(share.worker_id);
    worker.worker.set_state(v1::WORKER_BUSY);
    worker.worker.set_current_probe(name);
    StoreWorkerLocked(worker);
    members.push_back(&worker.worker);
  }
  const int64_t timed_steps = record.TimedSteps(n);
  const ProbeTiming timing = record.Timing(n);
  const absl::Time expires =
      clock_->Now() + absl::Seconds(timing.deadline_seconds) + options_.lease_grace;
  internal::LeaseState lease =
      MakeLease(name, record.id(), n, scope, ranks, shares, members, absl::ToUnixNanos(expires));
  if (timed_steps != probe.timed_steps()) lease.set_timed_steps(timed_steps);
  lease.set_deadline_seconds(timing.deadline_seconds);
  for (int64_t count : timing.micro_batch_counts) lease.add_micro_batch_counts(count);
  // The asking worker gets its share now; the others at their next AcquireProbe.
  lease.mutable_members(0)->set_delivered(true);
  changes_.PutLease(lease);
  v1::ProbeAssignment assignment = MemberAssignment(record.search(), lease, 0);
  v1::SearchEvent leased = LeasedEvent(candidate, lease, probe.max_attempts());
  leases_.Add(std::move(lease));
  PublishLocked(record, {std::move(leased)});
  return assignment;
}

internal::LeaseState Scheduler::EndLeaseLocked(const std::string& probe, int64_t reporter_id) {
  internal::LeaseState lease = leases_.End(probe);
  changes_.EndLease(probe);
  if (held_back_by_limit_) {
    // A probe waiting for its principal's limit may fit now.
    held_back_by_limit_ = false;
    changes_.NoteProbesQueued();
  }
  for (const internal::LeaseMember& member : lease.members()) {
    // A member that reported its share and then deregistered is gone.
    WorkerRecord* worker = workers_.Find(member.worker_id());
    if (worker == nullptr || worker->worker.current_probe() != probe) continue;
    // A member that never received its share has nothing to stop.
    if (member.worker_id() != reporter_id && member.delivered()) {
      worker->cancel_probes.push_back(probe);
    }
    worker->worker.clear_current_probe();
    worker->worker.set_state(v1::WORKER_IDLE);
    StoreWorkerLocked(*worker);
  }
  return lease;
}

void Scheduler::ReleaseLeaseLocked(WorkerRecord& worker, const std::string& reason,
                                   const std::optional<std::string>& lost_because) {
  const std::string probe = worker.worker.current_probe();
  if (probe.empty()) return;
  if (!leases_.Contains(probe)) {
    worker.worker.clear_current_probe();
    worker.worker.set_state(v1::WORKER_IDLE);
    StoreWorkerLocked(worker);
    return;
  }
  const internal::LeaseState ended = EndLeaseLocked(probe, worker.id);
  auto record = active_.find(ended.search_id());
  if (record == active_.end()) return;
  std::vector<v1::SearchEvent> events;
  if (lost_because.has_value()) {
    events.push_back(WorkerLostEvent(ended, worker.id, *lost_because));
  }
  RetryOrGiveUpLocked(record->second, ended.candidate(), reason, std::move(events));
}

void Scheduler::LoseWorkerLocked(WorkerRecord& worker, const std::string& cause) {
  ReleaseLeaseLocked(worker, absl::StrCat(worker.worker.name(), " lost: ", cause), cause);
  worker.worker.set_state(v1::WORKER_LOST);
  worker.cancel_probes.clear();
  StoreWorkerLocked(worker);
}

void Scheduler::RetryOrGiveUpLocked(ActiveSearch& record, int64_t n, const std::string& reason,
                                    std::vector<v1::SearchEvent> events) {
  const v1::Candidate& candidate = record.search().candidates(n);
  const int64_t max_attempts = record.search().spec().probe().max_attempts();
  const bool give_up = candidate.attempts() >= max_attempts;
  events.push_back(RequeuedEvent(candidate, record.id(), n, max_attempts, give_up, reason));
  if (!give_up) {
    record.Requeue(n);
    QueueLocked(record, n);
    PublishLocked(record, std::move(events));
    return;
  }
  v1::ProbeResult result;
  result.set_outcome(v1::PROBE_INFRA_ERROR);
  result.set_backend(record.search().spec().probe().backend());
  result.set_message(
      absl::StrCat("gave up after ", candidate.attempts(), " attempts; last: ", reason));
  RecordResultLocked(record, n, result, /*lease=*/nullptr, /*member=*/0, std::move(events));
}

void Scheduler::RecordResultLocked(ActiveSearch& record, int64_t n, v1::ProbeResult result,
                                   const internal::LeaseState* lease, int member,
                                   std::vector<v1::SearchEvent> events) {
  result.clear_ran_on();
  if (lease != nullptr) {
    for (v1::ProbeHost& host : LeaseHosts(*lease)) *result.add_ran_on() = std::move(host);
    events.push_back(ProbedEvent(*lease, member, result));
  }
  const ActiveSearch::Recorded recorded = record.RecordResult(n, result);
  events.back().set_screening_result_stands(recorded.screening_result_stands);
  if (!recorded.ruled_out.empty()) events.push_back(SkippedEvent(recorded.ruled_out));
  AdvanceLocked(record, std::move(events));
}

void Scheduler::AdvanceLocked(ActiveSearch& record, std::vector<v1::SearchEvent> events) {
  const v1::SearchBudget& budget = record.search().spec().budget();
  std::optional<std::string> stop_reason;
  const BudgetUse use = record.Use(clock_->Now());
  if (std::optional<std::string> spent = BudgetReached(budget, use)) {
    StopProbingLocked(record, DeadlinePassed(budget, use));
    stop_reason = std::move(spent);
  } else {
    const SearchPolicy::Decision decision = record.Next();
    for (const SearchPolicy::Pick& pick : decision.picks) {
      const int64_t n = record.AddPick(pick);
      QueueLocked(record, n);
      events.push_back(PlannedEvent(record.search().candidates(n),
                                    pick.kind == SearchPolicy::ProbeKind::kConfirmation));
    }
    stop_reason = decision.stop_reason;
  }
  if (record.HasPending()) {
    record.UpdateOutlook();
    PublishLocked(record, std::move(events));
    return;
  }
  const v1::Search& search = record.search();
  record.End(search.counts().succeeded() > 0 ? v1::SUCCEEDED : v1::FAILED,
             stop_reason.value_or(ProbedAllReason(search)));
  Log(search.state() == v1::SUCCEEDED ? LogLevel::kInfo : LogLevel::kWarning, "search ended",
      {{"search", search.name()},
       {"state", v1::SearchState_Name(search.state())},
       {"stop_reason", search.stop_reason()}});
  events.push_back(StoppedEvent(search));
  PublishLocked(record, std::move(events));
}

void Scheduler::StopProbingLocked(ActiveSearch& record, bool stop_running) {
  queue_.RemoveSearch(record.id());
  if (stop_running) {
    for (const std::string& probe : leases_.OfSearch(record.id())) {
      EndLeaseLocked(probe, /*reporter_id=*/0);
    }
  }
  record.SkipPending(stop_running);
}

void Scheduler::EndSearchLocked(ActiveSearch& record, v1::SearchState state,
                                const std::string& reason) {
  StopProbingLocked(record, /*stop_running=*/true);
  record.End(state, reason);
}

void Scheduler::QueueLocked(const ActiveSearch& record, int64_t n) {
  queue_.Push({record.id(), n});
  changes_.NoteProbesQueued();
}

void Scheduler::UpdateWaitingReasonsLocked() {
  absl::flat_hash_map<std::string, int64_t> in_flight;
  for (int64_t id : ActiveIdsLocked()) {
    ActiveSearch& record = active_.at(id);
    const bool at_limit = AtProbeLimitLocked(record, in_flight);
    std::vector<v1::SearchEvent> changes;
    for (int64_t n = 0; n < record.search().candidates_size(); ++n) {
      const v1::Candidate& candidate = record.search().candidates(n);
      if (candidate.state() != v1::CANDIDATE_QUEUED) continue;
      const std::string reason =
          at_limit ? ProbesInFlightWaitingReason(record.search().creator(),
                                                 options_.limits.max_probes_in_flight_per_principal)
                   : workers_.WhyUnplaceable(NextProbeLocked(record, n).second);
      if (reason == candidate.waiting_reason()) continue;
      changes.push_back(WaitingEvent(candidate.name(), reason));
      record.SetWaitingReason(n, reason);
    }
    if (!changes.empty()) PublishLocked(record, std::move(changes));
  }
}

absl::Status Scheduler::CheckSearchLimitLocked(const Caller& caller) const {
  const int64_t limit = options_.limits.max_searches_per_principal;
  if (limit <= 0 || ExemptFromLimits(caller)) return absl::OkStatus();
  const std::string owner = OwnerName(caller);
  int64_t unfinished = 0;
  for (const auto& [id, record] : active_) {
    if (!record.exempt_from_limits() && record.search().creator() == owner) ++unfinished;
  }
  if (unfinished < limit) return absl::OkStatus();
  return TooManySearchesError(owner, unfinished, limit);
}

int64_t Scheduler::ProbesInFlightLocked(absl::string_view owner) const {
  int64_t running = 0;
  for (const auto& [id, record] : active_) {
    if (record.exempt_from_limits() || record.search().creator() != owner) continue;
    running += static_cast<int64_t>(leases_.OfSearch(id).size());
  }
  return running;
}

bool Scheduler::AtProbeLimitLocked(const ActiveSearch& record,
                                   absl::flat_hash_map<std::string, int64_t>& in_flight) const {
  const int64_t limit = options_.limits.max_probes_in_flight_per_principal;
  if (limit <= 0 || record.exempt_from_limits()) return false;
  const std::string& owner = record.search().creator();
  auto [it, inserted] = in_flight.try_emplace(owner, 0);
  if (inserted) it->second = ProbesInFlightLocked(owner);
  return it->second >= limit;
}

std::vector<int64_t> Scheduler::ActiveIdsLocked() const {
  std::vector<int64_t> ids;
  for (const auto& [id, record] : active_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace paratune
