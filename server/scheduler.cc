#include "server/scheduler.h"

#include <algorithm>
#include <tuple>
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
#include "server/gang_result.h"
#include "server/log.h"
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

constexpr size_t kMaxRendezvousTokenBytes = 4096;

int64_t ReplicaGpus(const v1::ParallelConfig& config) {
  return config.tensor_parallel() * config.pipeline_parallel() * config.context_parallel();
}

// Whether `worker` can run probes with these settings: it offers the backend and, for the
// command backend, the launch template.
bool Offers(const v1::Worker& worker, const v1::ProbeSettings& probe) {
  const auto& backends = worker.backends();
  if (std::find(backends.begin(), backends.end(), probe.backend()) == backends.end()) {
    return false;
  }
  if (probe.command_template().empty()) return true;
  const auto& templates = worker.command_templates();
  return std::find(templates.begin(), templates.end(), probe.command_template()) !=
         templates.end();
}

// Ranks that must share a host: a tensor x context parallel group talks on every layer.
int64_t GroupSize(const v1::ParallelConfig& config) {
  return config.tensor_parallel() * config.context_parallel();
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
    UpdateWaitingReasonsLocked();
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
  std::vector<std::string> probes;
  for (const auto& [probe, lease] : leases_) {
    if (lease.search_id == id) probes.push_back(probe);
  }
  // The members hear about it on their next heartbeat; until then they are free to ask for
  // another probe, which gives this one up anyway.
  for (const std::string& probe : probes) EndLeaseLocked(probe, /*reporter_id=*/0);
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
    *worker.mutable_command_templates() = request.command_templates();
    worker.set_state(v1::WORKER_IDLE);
    StoreWorkerLocked(record);
    response.set_name(worker.name());
    // A larger fleet may place probes that waited for GPUs.
    UpdateWaitingReasonsLocked();
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
    if (!FindMembershipLocked(probe, *worker).ok()) cancel.push_back(probe);
  }
  std::sort(cancel.begin(), cancel.end());
  cancel.erase(std::unique(cancel.begin(), cancel.end()), cancel.end());
  for (std::string& probe : cancel) response.add_cancel_probes(std::move(probe));
  return response;
}

absl::StatusOr<Scheduler::Acquisition> Scheduler::TryAcquireProbe(
    absl::string_view worker_name) {
  Acquisition acquisition;
  {
    absl::MutexLock lock(&mu_);
    PT_ASSIGN_OR_RETURN(WorkerRecord * worker, FindLiveWorkerLocked(worker_name));
    if (worker->undelivered.has_value()) {
      acquisition.assignment = std::move(worker->undelivered);
      worker->undelivered.reset();
      return acquisition;
    }
    if (!worker->worker.current_probe().empty()) {
      const std::string held = worker->worker.current_probe();
      worker->cancel_probes.push_back(held);
      acquisition.others_may_have_work = ReleaseLeaseLocked(
          *worker,
          absl::StrCat(worker->worker.name(), " asked for a new probe while holding ", held));
    }
    const FreeWorker requester{worker->id, worker->worker.gpus_size()};
    v1::ProbeScope scope = v1::PROBE_SCOPE_UNSPECIFIED;
    int64_t ranks = 0;
    std::vector<RankShare> shares;
    std::optional<ProbeQueue::Item> item =
        queue_.PopFirstFitting([&](const ProbeQueue::Item& item) {
          auto it = active_.find(item.search_id);
          if (it == active_.end()) return false;
          const SearchRecord& record = it->second;
          const v1::ProbeSettings& probe = record.search.spec().probe();
          if (!Offers(worker->worker, probe)) return false;
          std::tie(scope, ranks) = ProbeShapeLocked(record, item.candidate);
          std::optional<std::vector<RankShare>> placed =
              PlaceGang(ranks, GroupSize(record.search.candidates(item.candidate).config()),
                        requester, LiveWorkersLocked(probe, /*free_only=*/true, worker->id));
          if (!placed.has_value()) return false;
          shares = *std::move(placed);
          return true;
        });
    if (item.has_value()) {
      std::vector<v1::ProbeAssignment> assignments =
          LeaseLocked(active_.at(item->search_id), item->candidate, scope, ranks, shares);
      for (size_t i = 1; i < shares.size(); ++i) {
        workers_.at(shares[i].worker_id).undelivered = std::move(assignments[i]);
      }
      acquisition.others_may_have_work |= shares.size() > 1;
      acquisition.assignment = std::move(assignments[0]);
    }
  }
  return acquisition;
}

absl::Status Scheduler::ReportProbe(const v1::ReportProbeRequest& request) {
  bool requeued = false;
  {
    absl::MutexLock lock(&mu_);
    PT_ASSIGN_OR_RETURN(WorkerRecord * worker, FindLiveWorkerLocked(request.worker()));
    PT_ASSIGN_OR_RETURN(auto membership, FindMembershipLocked(request.probe(), *worker));
    PT_RETURN_IF_ERROR(ValidateProbeResult(request.result()));
    auto [lease, member] = membership;
    if (lease->results[member].has_value()) {
      return absl::FailedPreconditionError(absl::StrCat(
          worker->worker.name(), " reported its ranks of ", request.probe(), " already"));
    }
    const v1::ProbeResult& result = request.result();
    worker->worker.set_probes_completed(worker->worker.probes_completed() + 1);
    if (result.outcome() == v1::PROBE_OK) {
      lease->results[member] = result;
      const bool all_reported =
          std::all_of(lease->results.begin(), lease->results.end(),
                      [](const std::optional<v1::ProbeResult>& r) { return r.has_value(); });
      if (!all_reported) {
        // Its ranks are done: the worker may take other work while the rest finish.
        worker->worker.set_state(v1::WORKER_IDLE);
        worker->worker.clear_current_probe();
        StoreWorkerLocked(*worker);
        return absl::OkStatus();
      }
    }
    const Lease ended = EndLeaseLocked(request.probe(), worker->id);
    SearchRecord& record = active_.at(ended.search_id);
    const std::string gang_note =
        ended.members.size() > 1
            ? absl::StrCat(" (member ", member + 1, " of ", ended.members.size(), ")")
            : "";
    if (result.outcome() == v1::PROBE_INFRA_ERROR) {
      requeued = RetryOrGiveUpLocked(
          record, ended.candidate,
          absl::StrCat("infrastructure error on ", worker->worker.name(), gang_note, ": ",
                       result.message()));
    } else if (result.outcome() == v1::PROBE_OK) {
      std::vector<v1::ProbeResult> by_member;
      for (const std::optional<v1::ProbeResult>& r : ended.results) by_member.push_back(*r);
      const v1::ProbeResult combined = CombineGangResults(by_member);
      std::vector<std::string> members;
      for (int64_t id : ended.members) members.push_back(WorkerName(id));
      RecordResultLocked(record, ended.candidate, combined,
                         absl::StrCat(CandidateLabel(ended.candidate), " probed on ",
                                      absl::StrJoin(members, " + "), ": ",
                                      DescribeResult(combined)));
    } else {
      v1::ProbeResult failed = result;
      if (ended.members.size() > 1) {
        failed.set_message(absl::StrCat(worker->worker.name(), gang_note, ": ", result.message()));
      }
      RecordResultLocked(record, ended.candidate, failed,
                         absl::StrCat(CandidateLabel(ended.candidate), " probed on ",
                                      worker->worker.name(), gang_note, ": ",
                                      DescribeResult(failed)));
    }
  }
  if (requeued) NotifyProbesQueued();
  return absl::OkStatus();
}

absl::StatusOr<v1::RendezvousResponse> Scheduler::Rendezvous(
    const v1::RendezvousRequest& request) {
  absl::MutexLock lock(&mu_);
  PT_ASSIGN_OR_RETURN(WorkerRecord * worker, FindLiveWorkerLocked(request.worker()));
  PT_ASSIGN_OR_RETURN(auto membership, FindMembershipLocked(request.probe(), *worker));
  auto [lease, member] = membership;
  const std::string& token = request.token();
  if (!token.empty()) {
    if (member != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("token (", token.size(), " bytes) may only be sent by gang[0] (",
                       WorkerName(lease->members[0]), "); ", worker->worker.name(), " is gang[",
                       member, "]"));
    }
    if (token.size() > kMaxRendezvousTokenBytes) {
      return absl::InvalidArgumentError(absl::StrCat("token (", token.size(),
                                                     " bytes) must be at most ",
                                                     kMaxRendezvousTokenBytes, " bytes"));
    }
    if (!lease->rendezvous_token.empty() && lease->rendezvous_token != token) {
      return absl::FailedPreconditionError(
          absl::StrCat("probe ", request.probe(), " already has a different rendezvous token"));
    }
    lease->rendezvous_token = token;
  }
  v1::RendezvousResponse response;
  response.set_token(lease->rendezvous_token);
  return response;
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
      const Lease ended = EndLeaseLocked(probe, /*reporter_id=*/0);
      auto record = active_.find(ended.search_id);
      if (record == active_.end()) continue;
      requeued |= RetryOrGiveUpLocked(
          record->second, ended.candidate,
          absl::StrCat(probe, " was not reported within its deadline plus ",
                       absl::FormatDuration(options_.lease_grace)));
    }
    UpdateWaitingReasonsLocked();
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

absl::StatusOr<std::pair<Scheduler::Lease*, size_t>> Scheduler::FindMembershipLocked(
    absl::string_view probe, const WorkerRecord& worker) {
  auto it = leases_.find(probe);
  if (it != leases_.end()) {
    const std::vector<int64_t>& members = it->second.members;
    auto member = std::find(members.begin(), members.end(), worker.id);
    if (member != members.end()) {
      return std::make_pair(&it->second, static_cast<size_t>(member - members.begin()));
    }
  }
  return absl::FailedPreconditionError(
      absl::StrCat("probe (\"", probe.substr(0, 128), "\") is not leased to ",
                   worker.worker.name(), "; it was cancelled, re-leased or reported already"));
}

std::vector<FreeWorker> Scheduler::LiveWorkersLocked(const v1::ProbeSettings& probe,
                                                     bool free_only, int64_t except_id) {
  std::vector<FreeWorker> live;
  for (const auto& [id, record] : workers_) {
    const v1::Worker& worker = record.worker;
    if (id == except_id || worker.state() == v1::WORKER_LOST) continue;
    if (free_only && (!worker.current_probe().empty() || record.undelivered.has_value())) {
      continue;
    }
    if (!Offers(worker, probe)) continue;
    live.push_back(FreeWorker{id, worker.gpus_size()});
  }
  return live;
}

std::pair<v1::ProbeScope, int64_t> Scheduler::ProbeShapeLocked(const SearchRecord& record,
                                                               int64_t n) {
  const v1::ProbeSettings& probe = record.search.spec().probe();
  const v1::ParallelConfig& config = record.search.candidates(n).config();
  v1::ProbeScope scope = probe.scope();
  if (scope == v1::PROBE_SCOPE_UNSPECIFIED) {
    // FULL when the fleet could run every rank at once, even if it is busy now: a full
    // probe measures the data-parallel traffic a replica can only model.
    const int64_t capacity =
        GangCapacity(GroupSize(config), LiveWorkersLocked(probe, /*free_only=*/false, 0));
    scope = capacity >= record.world_size ? v1::PROBE_SCOPE_FULL : v1::PROBE_SCOPE_REPLICA;
  }
  return {scope, scope == v1::PROBE_SCOPE_FULL ? record.world_size : ReplicaGpus(config)};
}

std::vector<v1::ProbeAssignment> Scheduler::LeaseLocked(SearchRecord& record, int64_t n,
                                                        v1::ProbeScope scope, int64_t ranks,
                                                        const std::vector<RankShare>& shares) {
  const v1::SearchSpec& spec = record.search.spec();
  v1::Candidate& candidate = *record.search.mutable_candidates(n);
  candidate.set_attempts(candidate.attempts() + 1);
  candidate.set_state(v1::CANDIDATE_RUNNING);
  candidate.clear_waiting_reason();
  candidate.set_worker(WorkerName(shares[0].worker_id));

  v1::ProbeAssignment common;
  common.set_name(ProbeName(record.id, n, candidate.attempts()));
  common.set_backend(spec.probe().backend());
  common.set_command_template(spec.probe().command_template());
  *common.mutable_model() = spec.model();
  *common.mutable_training() = spec.training();
  *common.mutable_cluster() = spec.cluster();
  *common.mutable_config() = candidate.config();
  common.set_scope(scope);
  common.set_warmup_steps(spec.probe().warmup_steps());
  common.set_timed_steps(spec.probe().timed_steps());
  common.set_deadline_seconds(spec.probe().deadline_seconds());
  common.set_seed(spec.seed());
  common.set_num_ranks(ranks);
  for (const RankShare& share : shares) {
    v1::GangMember& member = *common.add_gang();
    const v1::Worker& worker = workers_.at(share.worker_id).worker;
    member.set_worker(worker.name());
    member.set_hostname(worker.hostname());
    member.set_first_rank(share.first_rank);
    member.set_num_ranks(share.num_ranks);
  }

  Lease lease{record.id, n, {}, std::vector<std::optional<v1::ProbeResult>>(shares.size()), "",
              clock_->Now() + absl::Seconds(spec.probe().deadline_seconds()) +
                  options_.lease_grace};
  std::vector<v1::ProbeAssignment> assignments;
  std::vector<std::string> member_labels;
  for (size_t i = 0; i < shares.size(); ++i) {
    WorkerRecord& worker = workers_.at(shares[i].worker_id);
    v1::ProbeAssignment assignment = common;
    assignment.set_gang_index(static_cast<int64_t>(i));
    for (int64_t g = 0; g < shares[i].num_ranks; ++g) {
      assignment.add_gpu_indices(worker.worker.gpus(g).index());
    }
    assignments.push_back(std::move(assignment));
    lease.members.push_back(worker.id);
    worker.worker.set_state(v1::WORKER_BUSY);
    worker.worker.set_current_probe(common.name());
    StoreWorkerLocked(worker);
    member_labels.push_back(absl::StrCat(worker.worker.name(), " (ranks ", shares[i].first_rank,
                                         "-", shares[i].first_rank + shares[i].num_ranks - 1,
                                         ")"));
  }
  leases_[common.name()] = std::move(lease);
  PublishLocked(record, absl::StrCat(CandidateLabel(n), " leased to ",
                                     absl::StrJoin(member_labels, ", "), " (attempt ",
                                     candidate.attempts(), " of ", spec.probe().max_attempts(),
                                     ", ", scope == v1::PROBE_SCOPE_FULL ? "full" : "replica",
                                     " scope, ", ranks, " GPUs)"));
  return assignments;
}

Scheduler::Lease Scheduler::EndLeaseLocked(const std::string& probe, int64_t reporter_id) {
  auto it = leases_.find(probe);
  Lease lease = std::move(it->second);
  leases_.erase(it);
  for (int64_t id : lease.members) {
    WorkerRecord& worker = workers_.at(id);
    if (worker.undelivered.has_value() && worker.undelivered->name() == probe) {
      worker.undelivered.reset();
    } else if (id != reporter_id && worker.worker.current_probe() == probe) {
      worker.cancel_probes.push_back(probe);
    }
    if (worker.worker.current_probe() == probe) {
      worker.worker.clear_current_probe();
      worker.worker.set_state(v1::WORKER_IDLE);
      StoreWorkerLocked(worker);
    }
  }
  return lease;
}

bool Scheduler::ReleaseLeaseLocked(WorkerRecord& worker, const std::string& reason) {
  const std::string probe = worker.worker.current_probe();
  if (probe.empty() || leases_.find(probe) == leases_.end()) return false;
  const Lease ended = EndLeaseLocked(probe, worker.id);
  auto record = active_.find(ended.search_id);
  if (record == active_.end()) return false;
  return RetryOrGiveUpLocked(record->second, ended.candidate, reason);
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

void Scheduler::UpdateWaitingReasonsLocked() {
  std::vector<int64_t> ids;
  for (const auto& [id, record] : active_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (int64_t id : ids) {
    SearchRecord& record = active_.at(id);
    const v1::ProbeSettings& probe = record.search.spec().probe();
    const std::vector<FreeWorker> live = LiveWorkersLocked(probe, /*free_only=*/false, 0);
    std::vector<std::string> changes;
    for (int64_t n = 0; n < record.search.candidates_size(); ++n) {
      v1::Candidate& candidate = *record.search.mutable_candidates(n);
      if (candidate.state() != v1::CANDIDATE_QUEUED) continue;
      const int64_t ranks = ProbeShapeLocked(record, n).second;
      const int64_t group = GroupSize(candidate.config());
      const int64_t capacity = GangCapacity(group, live);
      std::string reason;
      if (capacity < ranks) {
        reason = absl::StrCat("needs ", ranks, " GPUs in groups of ", group,
                              " on workers offering backend ", probe.backend(),
                              probe.command_template().empty()
                                  ? ""
                                  : absl::StrCat(" with template ", probe.command_template()),
                              "; the live workers hold ", capacity);
      }
      if (reason == candidate.waiting_reason()) continue;
      changes.push_back(absl::StrCat(CandidateLabel(n), reason.empty() ? " can be placed again"
                                                                         : absl::StrCat(" ", reason)));
      candidate.set_waiting_reason(reason);
    }
    if (!changes.empty()) PublishLocked(record, absl::StrJoin(changes, "; "));
  }
}

void Scheduler::NotifyProbesQueued() {
  if (options_.on_probes_queued) options_.on_probes_queued();
}

}  // namespace paratune
