#include "server/core/scheduler.h"

#include <algorithm>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "convert/search_request.h"
#include "convert/search_state.h"
#include "convert/search_view.h"
#include "convert/spec_convert.h"
#include "estimator/planner.h"
#include "google/protobuf/util/time_util.h"
#include "server/core/lease.h"
#include "server/core/resource_names.h"
#include "server/core/search_events.h"
#include "server/core/search_planning.h"

namespace paratune {

Scheduler::Scheduler(Options options, std::unique_ptr<SearchStore> store)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : RealClock()),
      store_(std::move(store)),
      reader_(store_.get()),
      dispatch_(&changes_) {}

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(Options options,
                                                             std::unique_ptr<SearchStore> store) {
  std::unique_ptr<Scheduler> scheduler(new Scheduler(std::move(options), std::move(store)));
  absl::MutexLock lock(&scheduler->mu_);
  PT_RETURN_IF_ERROR(scheduler->RecoverLocked());
  return scheduler;
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
    RetireEndedLocked();
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
        validated.resolved.model, validated.resolved.training,
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

  ActiveSearch search(id, request, validated, std::move(planned), clock_->Now(), OwnerName(caller),
                      ExemptFromLimits(caller));
  std::vector<v1::SearchEvent> events = {
      CreatedEvent(search.search(), ProbesRiskyConfigurations(validated.spec.space()))};
  if (SearchEnded(search.search().state())) events.push_back(StoppedEvent(search.search()));

  v1::Search created;
  bool queued = false;
  {
    absl::MutexLock lock(&mu_);
    if (shutdown_) return absl::UnavailableError("the server is shutting down");
    PT_RETURN_IF_ERROR(CheckSearchLimitLocked(caller));
    PT_ASSIGN_OR_RETURN(created, StartSearchLocked(std::move(search), std::move(events)));
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

absl::StatusOr<v1::Search> Scheduler::StartSearchLocked(ActiveSearch search,
                                                        std::vector<v1::SearchEvent> events) {
  const int64_t id = search.id();
  // Stored before it is queued: a search the store refused never runs, and earlier changes
  // are stored first so that a refusal discards only this search.
  PT_RETURN_IF_ERROR(CommitLocked());
  ActiveSearch& record = active_.try_emplace(id, std::move(search)).first->second;
  PublishLocked(record, std::move(events));
  if (absl::Status status = CommitLocked(); !status.ok()) {
    active_.erase(id);
    ended_.clear();
    changes_.Discard();
    return status;
  }
  if (!SearchEnded(record.search().state())) AdvanceLocked(record, {});
  UpdateWaitingReasonsLocked();
  v1::Search created = record.search();
  RetireEndedLocked();
  // The search exists now: a failure to store its first picks is retried with the next change
  // (CheckLeases makes one every half heartbeat interval), not reported as a failure to create
  // it.
  CommitLocked().IgnoreError();
  return created;
}

absl::StatusOr<v1::Search> Scheduler::CancelSearch(absl::string_view name, const Caller& caller) {
  PT_ASSIGN_OR_RETURN(const int64_t id, ParseSearchName("name", name));
  const std::string who = DescribeCaller(caller);
  PT_RETURN_IF_ERROR(Mutate([&]() -> absl::Status {
    ActiveSearch* record = FindLiveLocked(id);
    if (record == nullptr) {
      PT_ASSIGN_OR_RETURN(v1::Search search, store_->GetSearch(id));
      if (!MayAccess(caller, search.creator())) return SearchNotFoundError(id);
      return absl::FailedPreconditionError(absl::StrCat(
          "search ", search.name(), " already ended (", v1::SearchState_Name(search.state()),
          "); only a running search can be cancelled"));
    }
    if (!MayAccess(caller, record->search().creator())) return SearchNotFoundError(id);
    const int64_t stopped = static_cast<int64_t>(dispatch_.leases().OfSearch(id).size());
    const v1::SearchCounts& counts = record->search().counts();
    // The members hear about it on their next heartbeat; until then they are free to ask
    // for another probe, which gives this one up anyway.
    EndSearchLocked(*record, v1::CANCELLED,
                    absl::StrCat("cancelled by ", who, " after ", counts.probed(), " of ",
                                 counts.selected(), " selected candidates were probed"));
    PublishLocked(*record, {CancelledEvent(record->search(), caller.has_value() ? caller->name : "",
                                           stopped)});
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

void Scheduler::CheckLeases() {
  // A commit error is logged by CommitLocked and retried at the next call.
  Mutate([&]() -> absl::Status {
    const absl::Time now = clock_->Now();
    const absl::Duration silence_limit =
        options_.heartbeat_interval * options_.missed_heartbeats_until_lost;
    for (int64_t id : dispatch_.workers().Silent(now, silence_limit)) {
      const WorkerRegistry::Record& worker = *dispatch_.workers().Find(id);
      const std::string cause = absl::StrCat(
          "no heartbeat for ",
          absl::FormatDuration(absl::Trunc(now - worker.last_heartbeat, absl::Milliseconds(100))));
      Log(LogLevel::kWarning, "worker lost", {{"worker", worker.worker.name()}, {"reason", cause}});
      LoseWorkerLocked(id, cause);
    }
    for (const std::string& probe : dispatch_.leases().Overdue(now)) {
      // The give-up of an earlier one may have stopped this one: its search ran out of time.
      std::optional<internal::LeaseState> ended = dispatch_.EndLease(probe, /*reporter_id=*/0);
      if (!ended.has_value()) continue;
      RetryLeaseLocked(*ended,
                       absl::StrCat(probe, " was not reported within its deadline plus ",
                                    absl::FormatDuration(options_.lease_grace)),
                       {});
    }
    for (int64_t id : ActiveIdsLocked()) {
      ActiveSearch* record = FindLiveLocked(id);
      if (record != nullptr &&
          DeadlinePassed(record->search().spec().budget(), SearchAge(record->search(), now))) {
        AdvanceLocked(*record, {});
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
  stats.running_probes = dispatch_.leases().size();
  for (const auto& [id, record] : dispatch_.workers().all()) {
    ++stats.workers[record.worker.state()];
    stats.worker_gpus[record.worker.state()] += record.worker.gpus_size();
  }
  return stats;
}

ActiveSearch* Scheduler::FindLiveLocked(int64_t id) {
  auto it = active_.find(id);
  if (it == active_.end() || SearchEnded(it->second.search().state())) return nullptr;
  return &it->second;
}

void Scheduler::RetireEndedLocked() {
  for (int64_t id : std::exchange(ended_, {})) {
    auto it = active_.find(id);
    if (it == active_.end()) continue;
    AddSearchTotals(it->second.search(), ended_totals_);
    ended_summaries_.Add(SummarizeSearch(it->second.search()));
    active_.erase(it);
  }
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
  if (SearchEnded(record.search().state())) ended_.push_back(record.id());
}

std::pair<v1::ProbeScope, ProbeNeeds> Scheduler::NextProbeLocked(const ActiveSearch& record,
                                                                 int64_t n,
                                                                 HostingMemo& hosting) const {
  const v1::Candidate& candidate = record.search().candidates(n);
  return ScopedNeedsOf(record.search().spec(), candidate.config(),
                       ProbeName(record.id(), n, candidate.attempts() + 1),
                       [&](const ProbeNeeds& full) { return hosting.CanHost(full); });
}

std::optional<v1::ProbeAssignment> Scheduler::LeaseNextLocked(const WorkerRegistry::Record& worker,
                                                              absl::Time now) {
  v1::ProbeScope scope = v1::PROBE_SCOPE_UNSPECIFIED;
  int64_t ranks = 0;
  std::vector<RankShare> shares;
  absl::flat_hash_map<std::string, int64_t> in_flight;
  HostingMemo hosting(dispatch_.workers());
  std::optional<ProbeQueue::Item> item = queue_.PopFirstFitting([&](const ProbeQueue::Item& item) {
    const ActiveSearch& record = active_.at(item.search_id);
    if (AtProbeLimitLocked(record, in_flight)) {
      changes_.NoteHeldBackByLimit();
      return false;
    }
    auto [probe_scope, needs] = NextProbeLocked(record, item.candidate, hosting);
    std::optional<std::vector<RankShare>> placed = dispatch_.workers().Place(needs, worker, now);
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

v1::ProbeAssignment Scheduler::LeaseLocked(ActiveSearch& record, int64_t n, v1::ProbeScope scope,
                                           int64_t ranks, const std::vector<RankShare>& shares) {
  const v1::ProbeSettings& probe = record.search().spec().probe();
  record.Leased(n, WorkerName(shares[0].worker_id));
  const v1::Candidate& candidate = record.search().candidates(n);
  std::vector<const v1::Worker*> members;
  for (const RankShare& share : shares) {
    members.push_back(&dispatch_.workers().Find(share.worker_id)->worker);
  }
  const ProbeTiming timing = record.Timing(n);
  const absl::Time expires =
      clock_->Now() + absl::Seconds(timing.deadline_seconds) + options_.lease_grace;
  internal::LeaseState terms =
      MakeLease(ProbeName(record.id(), n, candidate.attempts()), record.id(), n, scope, ranks,
                shares, members, absl::ToUnixNanos(expires));
  if (timing.timed_steps != probe.timed_steps()) terms.set_timed_steps(timing.timed_steps);
  terms.set_deadline_seconds(timing.deadline_seconds);
  for (int64_t count : timing.micro_batch_counts) terms.add_micro_batch_counts(count);
  const internal::LeaseState& lease = dispatch_.Lease(std::move(terms));
  PublishLocked(record, {LeasedEvent(candidate, lease, probe.max_attempts())});
  return MemberAssignment(record.search(), lease, 0);
}

void Scheduler::LoseWorkerLocked(int64_t worker_id, const std::string& cause) {
  if (std::optional<internal::LeaseState> ended = dispatch_.LoseWorker(worker_id)) {
    RetryLeaseLocked(*ended, absl::StrCat(WorkerName(worker_id), " lost: ", cause),
                     {WorkerLostEvent(*ended, worker_id, cause)});
  }
}

void Scheduler::RetryLeaseLocked(const internal::LeaseState& ended, const std::string& reason,
                                 std::vector<v1::SearchEvent> events) {
  // A live lease's search has not ended: ending a search ends its leases, and it ends by
  // itself only with nothing running.
  ActiveSearch& record = *FindLiveLocked(ended.search_id());
  const ActiveSearch::Retried retried =
      record.Retry(ended.candidate(), reason, ActiveSearch::Unfinished::kLeaseEnded);
  RetriedLocked(record, ended.candidate(), reason, retried.gave_up, std::move(events));
}

void Scheduler::RetriedLocked(ActiveSearch& record, int64_t n, const std::string& reason,
                              const std::optional<ActiveSearch::Recorded>& gave_up,
                              std::vector<v1::SearchEvent> events) {
  events.push_back(RequeuedEvent(record.search().candidates(n), record.id(), n,
                                 record.search().spec().probe().max_attempts(), gave_up.has_value(),
                                 reason));
  if (gave_up.has_value()) {
    AdvanceRecordedLocked(record, *gave_up, std::move(events));
    return;
  }
  QueueLocked(record, n);
  PublishLocked(record, std::move(events));
}

void Scheduler::RecordResultLocked(ActiveSearch& record, int64_t n, v1::ProbeResult result,
                                   const internal::LeaseState& lease, int member) {
  result.clear_ran_on();
  for (v1::ProbeHost& host : LeaseHosts(lease)) *result.add_ran_on() = std::move(host);
  std::vector<v1::SearchEvent> events = {ProbedEvent(lease, member, result)};
  const ActiveSearch::Recorded recorded = record.RecordResult(n, result);
  AdvanceRecordedLocked(record, recorded, std::move(events));
}

void Scheduler::AdvanceRecordedLocked(ActiveSearch& record, const ActiveSearch::Recorded& recorded,
                                      std::vector<v1::SearchEvent> events) {
  events.back().set_screening_result_stands(recorded.screening_result_stands);
  if (!recorded.ruled_out.empty()) events.push_back(SkippedEvent(recorded.ruled_out));
  AdvanceLocked(record, std::move(events));
}

void Scheduler::AdvanceLocked(ActiveSearch& record, std::vector<v1::SearchEvent> events) {
  const ActiveSearch::Advanced advanced = record.Advance(clock_->Now());
  if (advanced.stopped) StopProbingLocked(record.id(), advanced.stop_running);
  for (const ActiveSearch::Advanced::Queued& queued : advanced.queued) {
    QueueLocked(record, queued.n);
    events.push_back(PlannedEvent(record.search().candidates(queued.n), queued.confirmation));
  }
  if (advanced.ended) {
    const v1::Search& search = record.search();
    Log(search.state() == v1::SUCCEEDED ? LogLevel::kInfo : LogLevel::kWarning, "search ended",
        {{"search", search.name()},
         {"state", v1::SearchState_Name(search.state())},
         {"stop_reason", search.stop_reason()}});
    events.push_back(StoppedEvent(search));
  }
  PublishLocked(record, std::move(events));
}

void Scheduler::StopProbingLocked(int64_t id, bool stop_running) {
  queue_.RemoveSearch(id);
  if (!stop_running) return;
  for (const std::string& probe : dispatch_.leases().OfSearch(id)) {
    dispatch_.EndLease(probe, /*reporter_id=*/0);
  }
}

void Scheduler::EndSearchLocked(ActiveSearch& record, v1::SearchState state,
                                const std::string& reason) {
  StopProbingLocked(record.id(), /*stop_running=*/true);
  record.End(state, reason);
}

void Scheduler::QueueLocked(const ActiveSearch& record, int64_t n) {
  queue_.Push({record.id(), n});
  changes_.NoteProbesQueued();
}

void Scheduler::UpdateWaitingReasonsLocked() {
  absl::flat_hash_map<std::string, int64_t> in_flight;
  HostingMemo hosting(dispatch_.workers());
  for (int64_t id : ActiveIdsLocked()) {
    ActiveSearch* record = FindLiveLocked(id);
    if (record == nullptr) continue;
    const bool at_limit = AtProbeLimitLocked(*record, in_flight);
    std::vector<v1::SearchEvent> changes;
    for (int64_t n = 0; n < record->search().candidates_size(); ++n) {
      const v1::Candidate& candidate = record->search().candidates(n);
      if (candidate.state() != v1::CANDIDATE_QUEUED) continue;
      const std::string reason =
          at_limit ? ProbesInFlightWaitingReason(record->search().creator(),
                                                 options_.limits.max_probes_in_flight_per_principal)
                   : hosting.WhyUnplaceable(NextProbeLocked(*record, n, hosting).second);
      if (reason == candidate.waiting_reason()) continue;
      changes.push_back(WaitingEvent(candidate.name(), reason));
      record->SetWaitingReason(n, reason);
    }
    if (!changes.empty()) PublishLocked(*record, std::move(changes));
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

bool Scheduler::AtProbeLimitLocked(const ActiveSearch& record,
                                   absl::flat_hash_map<std::string, int64_t>& in_flight) const {
  const int64_t limit = options_.limits.max_probes_in_flight_per_principal;
  if (limit <= 0 || record.exempt_from_limits()) return false;
  const std::string& owner = record.search().creator();
  auto [running, inserted] = in_flight.try_emplace(owner, 0);
  if (inserted) {
    // Running probes (leases) of the searches the owner created, admins' excepted.
    for (const auto& [id, other] : active_) {
      if (other.exempt_from_limits() || other.search().creator() != owner) continue;
      running->second += static_cast<int64_t>(dispatch_.leases().OfSearch(id).size());
    }
  }
  return running->second >= limit;
}

std::vector<int64_t> Scheduler::ActiveIdsLocked() const {
  std::vector<int64_t> ids;
  for (const auto& [id, record] : active_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace paratune
