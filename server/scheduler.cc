#include "server/scheduler.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "convert/estimate_convert.h"
#include "convert/spec_convert.h"
#include "estimator/performance_model.h"
#include "estimator/planner.h"
#include "google/protobuf/util/time_util.h"
#include "server/candidate_ranking.h"
#include "server/candidate_selection.h"
#include "common/log.h"
#include "server/page_token.h"
#include "server/resource_names.h"
#include "server/search_request.h"
#include "server/search_text.h"
#include "server/worker_request.h"

namespace paratune {
namespace {

constexpr int64_t kDefaultPageSize = 50;
constexpr int64_t kMaxPageSize = 1000;

google::protobuf::Timestamp ToTimestamp(absl::Time t) {
  return google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
}

bool Ended(v1::SearchState state) {
  return state == v1::SUCCEEDED || state == v1::FAILED || state == v1::CANCELLED;
}

std::string CandidateLabel(int64_t n) { return absl::StrCat("candidates/", n); }

int64_t ReplicaGpus(const v1::ParallelConfig& config) {
  return config.tensor_parallel() * config.pipeline_parallel() * config.context_parallel();
}

v1::Search RankedCopy(const v1::Search& search) {
  v1::Search copy = search;
  std::vector<v1::Candidate> ranked = RankCandidates(
      std::vector<v1::Candidate>(search.candidates().begin(), search.candidates().end()));
  copy.clear_candidates();
  for (v1::Candidate& candidate : ranked) *copy.add_candidates() = std::move(candidate);
  return copy;
}

// Why a search could not start probing, with the counts that show where configurations went.
std::string NothingToProbeReason(const v1::SearchCounts& counts, bool include_risky) {
  if (counts.valid() == 0) {
    return absl::StrCat("no valid configuration: ", counts.enumerated(),
                        " enumerated, 0 pass the validity rules (Plan lists the rejection "
                        "reasons)");
  }
  std::string reason = absl::StrCat("no memory-safe configuration to probe: ", counts.enumerated(),
                                    " enumerated, ", counts.valid(), " valid, ",
                                    counts.memory_safe(), " memory-safe, ", counts.memory_risky(),
                                    " risky, ", counts.memory_out_of_memory(), " out of memory");
  if (!include_risky && counts.memory_risky() > 0) {
    absl::StrAppend(&reason, "; set space.include_risky to probe the risky ones, or add GPUs");
  } else {
    absl::StrAppend(&reason, "; add GPUs, use GPUs with more memory or shorten the sequence");
  }
  return reason;
}

// The stop reason of a search whose selected candidates have all been probed.
std::string ProbedAllReason(const v1::Search& search) {
  const v1::SearchCounts& counts = search.counts();
  const v1::Candidate* best = nullptr;
  const v1::Candidate* first_failure = nullptr;
  for (const v1::Candidate& candidate : search.candidates()) {
    if (candidate.probe_result().outcome() == v1::PROBE_OK) {
      if (best == nullptr || candidate.probe_result().model_tflops_per_gpu() >
                                 best->probe_result().model_tflops_per_gpu()) {
        best = &candidate;
      }
    } else if (first_failure == nullptr) {
      first_failure = &candidate;
    }
  }
  if (best == nullptr) {
    std::string reason =
        absl::StrCat("all ", counts.selected(), " selected candidates failed their probes");
    if (first_failure != nullptr) {
      absl::StrAppend(&reason, "; first: ", DescribeConfig(first_failure->config()), ": ",
                      DescribeResult(first_failure->probe_result()));
    }
    return reason;
  }
  std::string reason = absl::StrCat("probed all ", counts.selected(), " selected candidates");
  if (counts.failed() > 0) absl::StrAppend(&reason, " (", counts.failed(), " failed)");
  absl::StrAppend(&reason, "; best ", DescribeConfig(best->config()), " at ",
                  DescribeResult(best->probe_result()));
  return reason;
}

}  // namespace

Scheduler::Scheduler(Options options, std::unique_ptr<SearchStore> store)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : RealClock()),
      store_(std::move(store)) {}

absl::StatusOr<v1::Search> Scheduler::CreateSearch(const v1::CreateSearchRequest& request) {
  PT_ASSIGN_OR_RETURN(ValidatedSearchRequest validated, ValidateCreateSearchRequest(request));
  const ResolvedSpec& resolved = validated.resolved;
  // Planning runs before the search exists and outside the lock: it is pure and may take a
  // noticeable fraction of a second for the largest clusters.
  PT_ASSIGN_OR_RETURN(
      const Plan plan,
      PlanConfigurations(resolved.model, resolved.training, resolved.cluster, resolved.plan_options,
                         DefaultPerformanceParameters(resolved.cluster.gpu())));
  const std::vector<size_t> selected = SelectCandidates(validated.spec, plan);
  PT_ASSIGN_OR_RETURN(const int64_t id, store_->AllocateSearchId());

  SearchRecord record;
  record.id = id;
  record.world_size = resolved.cluster.world_size();
  v1::Search& search = record.search;
  search.set_name(SearchName(id));
  search.set_display_name(request.display_name());
  *search.mutable_spec() = validated.spec;
  *search.mutable_create_time() = ToTimestamp(clock_->Now());
  const bool include_risky = validated.spec.space().include_risky();
  // `search` and `counts` refer into `record`, which moves into active_ below.
  v1::SearchCounts& counts = *search.mutable_counts();
  counts.set_enumerated(plan.counts.enumerated);
  counts.set_valid(plan.counts.valid);
  counts.set_memory_safe(plan.counts.safe + (include_risky ? plan.counts.risky : 0));
  counts.set_memory_risky(plan.counts.risky);
  counts.set_memory_out_of_memory(plan.counts.out_of_memory);
  counts.set_selected(static_cast<int64_t>(selected.size()));
  const double safe_fraction = resolved.plan_options.memory.safe_fraction;
  for (size_t i = 0; i < selected.size(); ++i) {
    const PlannedConfig& planned = plan.candidates[selected[i]];
    v1::Candidate& candidate = *search.add_candidates();
    candidate.set_name(CandidateName(id, static_cast<int64_t>(i)));
    *candidate.mutable_config() = ParallelConfigToProto(planned.config);
    *candidate.mutable_memory() =
        MemoryEstimateToProto(planned.memory, planned.config, safe_fraction);
    *candidate.mutable_predicted() = PerformanceEstimateToProto(planned.predicted);
    candidate.set_state(v1::CANDIDATE_QUEUED);
  }
  std::string event;
  if (selected.empty()) {
    search.set_state(v1::FAILED);
    search.set_stop_reason(NothingToProbeReason(counts, include_risky));
    event = absl::StrCat("search failed: ", search.stop_reason());
  } else {
    search.set_state(v1::PROBING);
    event = absl::StrCat("search created: probing ", selected.size(), " of ", counts.memory_safe(),
                         " memory-safe candidates (",
                         v1::SearchPolicy_Name(validated.spec.policy()), ")");
  }

  v1::Search created;
  {
    absl::MutexLock lock(&mu_);
    if (shutdown_) return absl::UnavailableError("the server is shutting down");
    for (int64_t n = 0; n < static_cast<int64_t>(selected.size()); ++n) queue_.Push({id, n});
    SearchRecord& stored = active_[id] = std::move(record);
    PublishLocked(stored, event);
    // PublishLocked forgot the record if the search ended at once; the store has it.
    PT_ASSIGN_OR_RETURN(created, store_->GetSearch(id));
  }
  Log(LogLevel::kInfo, "search created",
      {{"search", created.name()},
       {"state", v1::SearchState_Name(created.state())},
       {"selected", absl::StrCat(created.counts().selected())},
       {"memory_safe", absl::StrCat(created.counts().memory_safe())},
       {"stop_reason", created.stop_reason()}});
  if (!selected.empty()) NotifyProbesQueued();
  return created;
}

absl::StatusOr<v1::Search> Scheduler::GetSearch(absl::string_view name) {
  PT_ASSIGN_OR_RETURN(const int64_t id, ParseSearchName("name", name));
  return store_->GetSearch(id);
}

absl::StatusOr<v1::ListSearchesResponse> Scheduler::ListSearches(
    const v1::ListSearchesRequest& request) {
  if (request.page_size() < 0 || request.page_size() > kMaxPageSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size (", request.page_size(), ") must be in [0, ", kMaxPageSize, "]"));
  }
  const int64_t page_size = request.page_size() == 0 ? kDefaultPageSize : request.page_size();
  PT_ASSIGN_OR_RETURN(const int64_t before_id, DecodePageToken(request.page_token()));
  PT_ASSIGN_OR_RETURN(SearchPage page, store_->ListSearches(page_size, before_id));
  v1::ListSearchesResponse response;
  for (v1::Search& search : page.searches) *response.add_searches() = std::move(search);
  if (page.more && response.searches_size() > 0) {
    PT_ASSIGN_OR_RETURN(
        const int64_t last_id,
        ParseSearchName("name", response.searches(response.searches_size() - 1).name()));
    response.set_next_page_token(EncodePageToken(last_id));
  }
  return response;
}

absl::StatusOr<v1::Search> Scheduler::CancelSearch(absl::string_view name) {
  PT_ASSIGN_OR_RETURN(const int64_t id, ParseSearchName("name", name));
  absl::MutexLock lock(&mu_);
  auto it = active_.find(id);
  if (it == active_.end()) {
    PT_ASSIGN_OR_RETURN(v1::Search search, store_->GetSearch(id));
    return absl::FailedPreconditionError(absl::StrCat("search ", search.name(), " already ended (",
                                                      v1::SearchState_Name(search.state()),
                                                      "); only a running search can be "
                                                      "cancelled"));
  }
  SearchRecord& record = it->second;
  queue_.RemoveSearch(id);
  int64_t stopped = 0;
  for (v1::Candidate& candidate : *record.search.mutable_candidates()) {
    if (candidate.state() == v1::CANDIDATE_QUEUED) {
      candidate.set_state(v1::CANDIDATE_SKIPPED);
    } else if (candidate.state() == v1::CANDIDATE_RUNNING) {
      candidate.set_state(v1::CANDIDATE_SKIPPED);
      ++stopped;
    }
  }
  for (auto lease = leases_.begin(); lease != leases_.end();) {
    if (lease->second.search_id != id) {
      ++lease;
      continue;
    }
    auto worker = workers_.find(lease->second.worker_id);
    if (worker != workers_.end()) {
      // The worker hears about it on its next heartbeat; until then it is free to ask for
      // another probe, which gives this one up anyway.
      worker->second.cancel_probes.push_back(lease->first);
      worker->second.worker.set_state(v1::WORKER_IDLE);
      worker->second.worker.clear_current_probe();
      StoreWorkerLocked(worker->second);
    }
    leases_.erase(lease++);
  }
  const v1::SearchCounts& counts = record.search.counts();
  record.search.set_state(v1::CANCELLED);
  record.search.set_stop_reason(absl::StrCat("cancelled by a client after ", counts.probed(),
                                             " of ", counts.selected(),
                                             " selected candidates were probed"));
  PublishLocked(record,
                absl::StrCat("search cancelled; ", stopped, " running probes told to stop"));
  Log(LogLevel::kInfo, "search cancelled", {{"search", SearchName(id)}});
  return store_->GetSearch(id);
}

absl::StatusOr<Scheduler::WatchStart> Scheduler::Watch(absl::string_view name,
                                                       SearchObserver* observer) {
  PT_ASSIGN_OR_RETURN(const int64_t id, ParseSearchName("name", name));
  absl::MutexLock lock(&mu_);
  if (shutdown_) return absl::UnavailableError("the server is shutting down");
  auto it = active_.find(id);
  if (it == active_.end()) {
    PT_ASSIGN_OR_RETURN(v1::Search search, store_->GetSearch(id));
    return WatchStart{std::move(search), true};
  }
  it->second.observers.push_back(observer);
  return WatchStart{RankedCopy(it->second.search), false};
}

void Scheduler::Unwatch(absl::string_view name, SearchObserver* observer) {
  absl::StatusOr<int64_t> id = ParseSearchName("name", name);
  if (!id.ok()) return;
  absl::MutexLock lock(&mu_);
  auto it = active_.find(*id);
  if (it == active_.end()) return;
  std::vector<SearchObserver*>& observers = it->second.observers;
  observers.erase(std::remove(observers.begin(), observers.end(), observer), observers.end());
}

absl::StatusOr<v1::ListWorkersResponse> Scheduler::ListWorkers() {
  PT_ASSIGN_OR_RETURN(std::vector<v1::Worker> workers, store_->ListWorkers());
  v1::ListWorkersResponse response;
  for (v1::Worker& worker : workers) *response.add_workers() = std::move(worker);
  return response;
}

absl::StatusOr<v1::RegisterWorkerResponse> Scheduler::RegisterWorker(
    const v1::RegisterWorkerRequest& request) {
  PT_RETURN_IF_ERROR(ValidateRegisterWorkerRequest(request));
  v1::RegisterWorkerResponse response;
  {
    absl::MutexLock lock(&mu_);
    const int64_t id = ++last_worker_id_;
    WorkerRecord& record = workers_[id];
    record.id = id;
    record.last_heartbeat = clock_->Now();
    v1::Worker& worker = record.worker;
    worker.set_name(WorkerName(id));
    worker.set_hostname(request.hostname());
    *worker.mutable_gpus() = request.gpus();
    *worker.mutable_backends() = request.backends();
    *worker.mutable_labels() = request.labels();
    worker.set_state(v1::WORKER_IDLE);
    StoreWorkerLocked(record);
    response.set_name(worker.name());
  }
  response.set_heartbeat_interval_seconds(absl::ToDoubleSeconds(options_.heartbeat_interval));
  Log(LogLevel::kInfo, "worker registered",
      {{"worker", response.name()},
       {"hostname", request.hostname()},
       {"gpus", absl::StrCat(request.gpus_size())},
       {"backends", absl::StrJoin(request.backends(), ",")}});
  return response;
}

absl::StatusOr<v1::HeartbeatResponse> Scheduler::Heartbeat(const v1::HeartbeatRequest& request) {
  absl::MutexLock lock(&mu_);
  PT_ASSIGN_OR_RETURN(WorkerRecord * worker, FindLiveWorkerLocked(request.worker()));
  worker->last_heartbeat = clock_->Now();
  v1::HeartbeatResponse response;
  std::vector<std::string> cancel = std::move(worker->cancel_probes);
  worker->cancel_probes.clear();
  for (const std::string& probe : request.running_probes()) {
    auto lease = leases_.find(probe);
    if (lease == leases_.end() || lease->second.worker_id != worker->id) {
      cancel.push_back(probe);
    }
  }
  std::sort(cancel.begin(), cancel.end());
  cancel.erase(std::unique(cancel.begin(), cancel.end()), cancel.end());
  for (std::string& probe : cancel) response.add_cancel_probes(std::move(probe));
  return response;
}

absl::StatusOr<std::optional<v1::ProbeAssignment>> Scheduler::TryAcquireProbe(
    absl::string_view worker_name) {
  bool requeued = false;
  std::optional<v1::ProbeAssignment> assignment;
  {
    absl::MutexLock lock(&mu_);
    PT_ASSIGN_OR_RETURN(WorkerRecord * worker, FindLiveWorkerLocked(worker_name));
    if (!worker->worker.current_probe().empty()) {
      const std::string held = worker->worker.current_probe();
      worker->cancel_probes.push_back(held);
      requeued = ReleaseLeaseLocked(
          *worker,
          absl::StrCat(worker->worker.name(), " asked for a new probe while holding ", held));
    }
    const int64_t gpus = worker->worker.gpus_size();
    const auto& backends = worker->worker.backends();
    std::optional<ProbeQueue::Item> item =
        queue_.PopFirstFitting([&](const ProbeQueue::Item& item) {
          auto it = active_.find(item.search_id);
          if (it == active_.end()) return false;
          const v1::Search& search = it->second.search;
          return std::find(backends.begin(), backends.end(), search.spec().probe().backend()) !=
                     backends.end() &&
                 gpus >= ReplicaGpus(search.candidates(item.candidate).config());
        });
    if (item.has_value()) {
      SearchRecord& record = active_.at(item->search_id);
      assignment = MakeAssignmentLocked(record, item->candidate, *worker);
      v1::Candidate& candidate = *record.search.mutable_candidates(item->candidate);
      candidate.set_state(v1::CANDIDATE_RUNNING);
      candidate.set_worker(worker->worker.name());
      leases_[assignment->name()] = Lease{
          record.id, item->candidate, worker->id,
          clock_->Now() + absl::Seconds(assignment->deadline_seconds()) + options_.lease_grace};
      worker->worker.set_state(v1::WORKER_BUSY);
      worker->worker.set_current_probe(assignment->name());
      StoreWorkerLocked(*worker);
      PublishLocked(record,
                    absl::StrCat(CandidateLabel(item->candidate), " leased to ",
                                 worker->worker.name(), " (attempt ", candidate.attempts(), " of ",
                                 record.search.spec().probe().max_attempts(), ", ",
                                 assignment->scope() == v1::PROBE_SCOPE_FULL ? "full" : "replica",
                                 " scope)"));
    }
  }
  if (requeued) NotifyProbesQueued();
  return assignment;
}

absl::Status Scheduler::ReportProbe(const v1::ReportProbeRequest& request) {
  bool requeued = false;
  {
    absl::MutexLock lock(&mu_);
    PT_ASSIGN_OR_RETURN(WorkerRecord * worker, FindLiveWorkerLocked(request.worker()));
    auto lease_it = leases_.find(request.probe());
    if (lease_it == leases_.end() || lease_it->second.worker_id != worker->id) {
      return absl::FailedPreconditionError(
          absl::StrCat("probe (\"", request.probe().substr(0, 128), "\") is not leased to ",
                       worker->worker.name(), "; it was cancelled, re-leased or reported already"));
    }
    PT_RETURN_IF_ERROR(ValidateProbeResult(request.result()));
    const Lease lease = lease_it->second;
    leases_.erase(lease_it);
    worker->worker.set_state(v1::WORKER_IDLE);
    worker->worker.clear_current_probe();
    worker->worker.set_probes_completed(worker->worker.probes_completed() + 1);
    StoreWorkerLocked(*worker);

    SearchRecord& record = active_.at(lease.search_id);
    const v1::ProbeResult& result = request.result();
    if (result.outcome() == v1::PROBE_INFRA_ERROR) {
      requeued = RetryOrGiveUpLocked(
          record, lease.candidate,
          absl::StrCat("infrastructure error on ", worker->worker.name(), ": ", result.message()));
    } else {
      RecordResultLocked(record, lease.candidate, result,
                         absl::StrCat(CandidateLabel(lease.candidate), " probed on ",
                                      worker->worker.name(), ": ", DescribeResult(result)));
    }
  }
  if (requeued) NotifyProbesQueued();
  return absl::OkStatus();
}

void Scheduler::CheckLeases() {
  bool requeued = false;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_->Now();
    const absl::Duration silence_limit =
        options_.heartbeat_interval * options_.missed_heartbeats_until_lost;
    for (auto& [id, worker] : workers_) {
      if (worker.worker.state() == v1::WORKER_LOST) continue;
      const absl::Duration silence = now - worker.last_heartbeat;
      if (silence <= silence_limit) continue;
      const std::string reason =
          absl::StrCat(worker.worker.name(), " lost: no heartbeat for ",
                       absl::FormatDuration(absl::Trunc(silence, absl::Milliseconds(100))));
      Log(LogLevel::kWarning, "worker lost",
          {{"worker", worker.worker.name()}, {"reason", reason}});
      requeued |= ReleaseLeaseLocked(worker, reason);
      worker.worker.set_state(v1::WORKER_LOST);
      worker.cancel_probes.clear();
      StoreWorkerLocked(worker);
    }
    std::vector<std::string> overdue;
    for (const auto& [probe, lease] : leases_) {
      if (now > lease.expires) overdue.push_back(probe);
    }
    for (const std::string& probe : overdue) {
      WorkerRecord& worker = workers_.at(leases_.at(probe).worker_id);
      worker.cancel_probes.push_back(probe);
      requeued |=
          ReleaseLeaseLocked(worker, absl::StrCat(worker.worker.name(), " did not report ", probe,
                                                  " within its deadline plus ",
                                                  absl::FormatDuration(options_.lease_grace)));
    }
  }
  if (requeued) NotifyProbesQueued();
}

void Scheduler::Shutdown() {
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
  for (auto& [id, record] : active_) {
    for (SearchObserver* observer : record.observers) observer->OnSchedulerShutdown();
    record.observers.clear();
  }
}

SchedulerStats Scheduler::Stats() const {
  absl::MutexLock lock(&mu_);
  SchedulerStats stats;
  stats.totals = ended_totals_;
  for (const auto& [id, record] : active_) AddActiveSearch(record.search, stats);
  stats.queued_probes = queue_.size();
  stats.running_probes = static_cast<int64_t>(leases_.size());
  for (const auto& [id, record] : workers_) {
    ++stats.workers[record.worker.state()];
    stats.worker_gpus[record.worker.state()] += record.worker.gpus_size();
  }
  return stats;
}

absl::StatusOr<Scheduler::WorkerRecord*> Scheduler::FindLiveWorkerLocked(absl::string_view name) {
  PT_ASSIGN_OR_RETURN(const int64_t id, ParseWorkerName("worker", name));
  auto it = workers_.find(id);
  if (it == workers_.end() || it->second.worker.state() == v1::WORKER_LOST) {
    return absl::NotFoundError(
        absl::StrCat("worker ", name, " is not registered",
                     it == workers_.end() ? "" : " (declared lost after missing heartbeats)",
                     "; register again"));
  }
  return &it->second;
}

void Scheduler::PublishLocked(SearchRecord& record, const std::string& event) {
  *record.search.mutable_update_time() = ToTimestamp(clock_->Now());
  const v1::Search snapshot = RankedCopy(record.search);
  if (absl::Status status = store_->PutSearch(record.id, snapshot); !status.ok()) {
    Log(LogLevel::kError, "storing a search failed",
        {{"search", snapshot.name()}, {"error", status.ToString()}});
  }
  for (SearchObserver* observer : record.observers) observer->OnSearchChanged(snapshot, event);
  if (Ended(record.search.state())) {
    AddSearchTotals(record.search, ended_totals_);
    const int64_t id = record.id;
    active_.erase(id);
  }
}

void Scheduler::StoreWorkerLocked(const WorkerRecord& worker) {
  if (absl::Status status = store_->PutWorker(worker.id, worker.worker); !status.ok()) {
    Log(LogLevel::kError, "storing a worker failed",
        {{"worker", worker.worker.name()}, {"error", status.ToString()}});
  }
}

bool Scheduler::ReleaseLeaseLocked(WorkerRecord& worker, const std::string& reason) {
  const std::string probe = worker.worker.current_probe();
  worker.worker.clear_current_probe();
  worker.worker.set_state(v1::WORKER_IDLE);
  StoreWorkerLocked(worker);
  auto lease_it = leases_.find(probe);
  if (probe.empty() || lease_it == leases_.end()) return false;
  const Lease lease = lease_it->second;
  leases_.erase(lease_it);
  auto record = active_.find(lease.search_id);
  if (record == active_.end()) return false;
  return RetryOrGiveUpLocked(record->second, lease.candidate, reason);
}

bool Scheduler::RetryOrGiveUpLocked(SearchRecord& record, int64_t n, const std::string& reason) {
  v1::Candidate& candidate = *record.search.mutable_candidates(n);
  const int64_t max_attempts = record.search.spec().probe().max_attempts();
  if (candidate.attempts() < max_attempts) {
    candidate.set_state(v1::CANDIDATE_QUEUED);
    candidate.clear_worker();
    queue_.Push({record.id, n});
    PublishLocked(record, absl::StrCat(CandidateLabel(n), " re-queued after attempt ",
                                       candidate.attempts(), " of ", max_attempts, ": ", reason));
    return true;
  }
  v1::ProbeResult result;
  result.set_outcome(v1::PROBE_INFRA_ERROR);
  result.set_backend(record.search.spec().probe().backend());
  result.set_message(
      absl::StrCat("gave up after ", candidate.attempts(), " attempts; last: ", reason));
  RecordResultLocked(record, n, result,
                     absl::StrCat(CandidateLabel(n), " failed: ", result.message()));
  return false;
}

void Scheduler::RecordResultLocked(SearchRecord& record, int64_t n, const v1::ProbeResult& result,
                                   const std::string& event) {
  v1::Search& search = record.search;
  v1::Candidate& candidate = *search.mutable_candidates(n);
  candidate.set_state(v1::CANDIDATE_PROBED);
  *candidate.mutable_probe_result() = result;
  v1::SearchCounts& counts = *search.mutable_counts();
  counts.set_probed(counts.probed() + 1);
  if (result.outcome() == v1::PROBE_OK) {
    counts.set_succeeded(counts.succeeded() + 1);
  } else {
    counts.set_failed(counts.failed() + 1);
  }
  const bool pending = std::any_of(
      search.candidates().begin(), search.candidates().end(), [](const v1::Candidate& c) {
        return c.state() == v1::CANDIDATE_QUEUED || c.state() == v1::CANDIDATE_RUNNING;
      });
  if (pending) {
    PublishLocked(record, event);
    return;
  }
  search.set_state(counts.succeeded() > 0 ? v1::SUCCEEDED : v1::FAILED);
  search.set_stop_reason(ProbedAllReason(search));
  Log(search.state() == v1::SUCCEEDED ? LogLevel::kInfo : LogLevel::kWarning, "search ended",
      {{"search", search.name()},
       {"state", v1::SearchState_Name(search.state())},
       {"stop_reason", search.stop_reason()}});
  PublishLocked(record, absl::StrCat(event, "; search ",
                                     search.state() == v1::SUCCEEDED ? "succeeded" : "failed", ": ",
                                     search.stop_reason()));
}

v1::ProbeAssignment Scheduler::MakeAssignmentLocked(SearchRecord& record, int64_t n,
                                                    const WorkerRecord& worker) {
  const v1::SearchSpec& spec = record.search.spec();
  v1::Candidate& candidate = *record.search.mutable_candidates(n);
  candidate.set_attempts(candidate.attempts() + 1);
  v1::ProbeAssignment assignment;
  assignment.set_name(ProbeName(record.id, n, candidate.attempts()));
  assignment.set_backend(spec.probe().backend());
  *assignment.mutable_model() = spec.model();
  *assignment.mutable_training() = spec.training();
  *assignment.mutable_cluster() = spec.cluster();
  *assignment.mutable_config() = candidate.config();
  // A probe runs on one worker in this version: the whole configuration when the worker
  // has every GPU of it, else one data-parallel replica with DP communication modelled.
  assignment.set_scope(worker.worker.gpus_size() >= record.world_size ? v1::PROBE_SCOPE_FULL
                                                                      : v1::PROBE_SCOPE_REPLICA);
  assignment.set_warmup_steps(spec.probe().warmup_steps());
  assignment.set_timed_steps(spec.probe().timed_steps());
  assignment.set_deadline_seconds(spec.probe().deadline_seconds());
  assignment.set_seed(spec.seed());
  return assignment;
}

void Scheduler::NotifyProbesQueued() {
  if (options_.on_probes_queued) options_.on_probes_queued();
}

}  // namespace paratune
