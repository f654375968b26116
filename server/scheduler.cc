#include "server/scheduler.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "convert/estimate_convert.h"
#include "convert/spec_convert.h"
#include "estimator/performance_model.h"
#include "estimator/planner.h"
#include "google/protobuf/util/time_util.h"
#include "server/candidate_ranking.h"
#include "server/candidate_selection.h"
#include "server/gang_result.h"
#include "server/lease.h"
#include "server/page_token.h"
#include "server/resource_names.h"
#include "server/search_request.h"
#include "convert/search_text.h"
#include "server/worker_request.h"

namespace paratune {
namespace {

constexpr int64_t kDefaultPageSize = 50;
constexpr int64_t kDefaultEventPageSize = 100;
constexpr int64_t kMaxPageSize = 1000;

google::protobuf::Timestamp ToTimestamp(absl::Time t) {
  return google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
}

bool Ended(v1::SearchState state) {
  return state == v1::SUCCEEDED || state == v1::FAILED || state == v1::CANCELLED;
}

std::string CandidateLabel(int64_t n) { return absl::StrCat("candidates/", n); }

bool Pending(const v1::Candidate& candidate) {
  return candidate.state() == v1::CANDIDATE_QUEUED || candidate.state() == v1::CANDIDATE_RUNNING;
}

constexpr size_t kMaxRendezvousTokenBytes = 4096;

int64_t ReplicaGpus(const v1::ParallelConfig& config) {
  return config.tensor_parallel() * config.pipeline_parallel() * config.context_parallel();
}

// Whether the worker is reserved for the probe called `probe_name` (kProbeReservationLabel).
bool ReservedFor(const v1::Worker& worker, absl::string_view probe_name) {
  auto reserved = worker.labels().find(kProbeReservationLabel);
  return reserved != worker.labels().end() && reserved->second == probe_name;
}

// Whether `worker` can run the probe called `probe_name` with these settings: it offers the
// backend and, for the command backend, the launch template. A worker reserved for a probe
// runs that one only, and a probe that has live workers reserved for it (`probe_reserved`)
// runs on those only: they were started for it.
bool Offers(const v1::Worker& worker, const v1::ProbeSettings& probe, absl::string_view probe_name,
            bool probe_reserved) {
  if (worker.labels().contains(kProbeReservationLabel) || probe_reserved) {
    if (!ReservedFor(worker, probe_name)) return false;
  }
  const auto& backends = worker.backends();
  if (std::find(backends.begin(), backends.end(), probe.backend()) == backends.end()) {
    return false;
  }
  if (probe.command_template().empty()) return true;
  const auto& templates = worker.command_templates();
  return std::find(templates.begin(), templates.end(), probe.command_template()) !=
         templates.end();
}

absl::StatusOr<int64_t> CheckPageSize(int64_t page_size, int64_t default_size) {
  if (page_size < 0 || page_size > kMaxPageSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size (", page_size, ") must be in [0, ", kMaxPageSize, "]"));
  }
  return page_size == 0 ? default_size : page_size;
}

// Ranks that must share a host: a tensor x context parallel group talks on every layer.
int64_t GroupSize(const v1::ParallelConfig& config) {
  return config.tensor_parallel() * config.context_parallel();
}

// The name of the candidate's next lease.
std::string NextProbeName(int64_t search_id, int64_t n, const v1::Candidate& candidate) {
  return ProbeName(search_id, n, candidate.attempts() + 1);
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

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(Options options,
                                                             std::unique_ptr<SearchStore> store) {
  std::unique_ptr<Scheduler> scheduler(new Scheduler(std::move(options), std::move(store)));
  absl::MutexLock lock(&scheduler->mu_);
  PT_RETURN_IF_ERROR(scheduler->RecoverLocked());
  return scheduler;
}

absl::Status Scheduler::RecoverLocked() {
  PT_ASSIGN_OR_RETURN(StoredState state, store_->Load());
  const absl::Time now = clock_->Now();
  for (auto& [id, worker] : state.workers) {
    // A worker that was alive when the server stopped gets a full allowance to heartbeat
    // again before it is declared lost.
    workers_[id] = WorkerRecord{id, std::move(worker), now, {}};
    last_worker_id_ = std::max(last_worker_id_, id);
  }
  for (v1::Search& search : state.unfinished_searches) {
    PT_ASSIGN_OR_RETURN(const int64_t id, ParseSearchName("search.name", search.name()));
    SearchRecord& record = active_[id];
    record.id = id;
    record.world_size = search.spec().cluster().num_nodes() * search.spec().cluster().gpus_per_node();
    record.search = std::move(search);
  }
  for (internal::LeaseState& lease : state.leases) {
    auto record = active_.find(lease.search_id());
    const bool valid = record != active_.end() &&
                       lease.candidate() < record->second.search.candidates_size() &&
                       record->second.search.candidates(lease.candidate()).state() ==
                           v1::CANDIDATE_RUNNING;
    if (!valid) {
      // Its search ended or its candidate moved on in the same batch that should have ended
      // it; nothing can report to it any more.
      pending_.ended_leases.insert(lease.probe());
      continue;
    }
    const std::string probe = lease.probe();
    leases_[probe] = std::move(lease);
  }
  for (auto& [id, worker] : workers_) {
    const std::string& probe = worker.worker.current_probe();
    if (probe.empty() || FindMembershipLocked(probe, worker).ok()) continue;
    worker.worker.clear_current_probe();
    worker.worker.set_state(v1::WORKER_IDLE);
    StoreWorkerLocked(worker);
  }
  int64_t queued = 0, running = 0;
  std::vector<int64_t> ids;
  for (const auto& [id, record] : active_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (int64_t id : ids) {
    SearchRecord& record = active_.at(id);
    for (int64_t n = 0; n < record.search.candidates_size(); ++n) {
      v1::Candidate& candidate = *record.search.mutable_candidates(n);
      if (candidate.state() == v1::CANDIDATE_RUNNING) {
        const bool leased = std::any_of(leases_.begin(), leases_.end(), [&](const auto& entry) {
          return entry.second.search_id() == id && entry.second.candidate() == n;
        });
        if (leased) {
          ++running;
          continue;
        }
        candidate.set_state(v1::CANDIDATE_QUEUED);
      }
      if (candidate.state() == v1::CANDIDATE_QUEUED) {
        QueueLocked(record, n);
        ++queued;
      }
    }
    if (record.search.spec().policy() == v1::ADAPTIVE) {
      if (absl::Status rebuilt = RebuildPolicyLocked(record); !rebuilt.ok()) {
        // One search that cannot continue must not keep the server from starting.
        StopProbingLocked(record, /*stop_running=*/true);
        record.search.set_state(v1::FAILED);
        record.search.set_stop_reason(
            absl::StrCat("could not resume after a restart: ", rebuilt.message()));
        Log(LogLevel::kError, "search not resumed",
            {{"search", record.search.name()}, {"error", rebuilt.ToString()}});
        PublishLocked(record, record.search.stop_reason());
        continue;
      }
    }
    AdvanceLocked(record, "server restarted; search resumed");
  }
  UpdateWaitingReasonsLocked();
  PT_RETURN_IF_ERROR(FlushLocked());
  if (!ids.empty() || !workers_.empty()) {
    Log(LogLevel::kInfo, "resumed from the store",
        {{"searches", absl::StrCat(ids.size())},
         {"queued_probes", absl::StrCat(queued)},
         {"leased_probes", absl::StrCat(running)},
         {"workers", absl::StrCat(workers_.size())}});
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Search> Scheduler::CreateSearch(const v1::CreateSearchRequest& request) {
  PT_ASSIGN_OR_RETURN(ValidatedSearchRequest validated, ValidateCreateSearchRequest(request));
  const ResolvedSpec& resolved = validated.resolved;
  // Planning runs before the search exists and outside the lock: it is pure and may take a
  // noticeable fraction of a second for the largest clusters.
  PT_ASSIGN_OR_RETURN(
      const Plan plan,
      PlanConfigurations(resolved.model, resolved.training, resolved.cluster, resolved.plan_options,
                         DefaultPerformanceParameters(resolved.cluster.gpu())));
  const bool adaptive = validated.spec.policy() == v1::ADAPTIVE;
  const std::vector<size_t> selected =
      adaptive ? std::vector<size_t>() : SelectCandidates(validated.spec, plan);
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
  const bool nothing_to_probe = adaptive ? plan.candidates.empty() : selected.empty();
  if (adaptive && !nothing_to_probe) {
    const v1::AdaptiveSettings& settings = validated.spec.adaptive();
    AdaptiveOptions options;
    options.tolerance = settings.tolerance();
    options.confidence_sigmas = settings.confidence_sigmas();
    options.max_in_flight = settings.max_in_flight();
    options.max_confirmations = settings.max_confirmations();
    record.adaptive = std::make_unique<AdaptivePolicy>(
        resolved.model, resolved.training, resolved.cluster, plan.candidates,
        DefaultPerformanceParameters(resolved.cluster.gpu()), options);
  }
  std::string event;
  if (nothing_to_probe) {
    search.set_state(v1::FAILED);
    search.set_stop_reason(NothingToProbeReason(counts, include_risky));
    event = absl::StrCat("search failed: ", search.stop_reason());
  } else {
    search.set_state(v1::PROBING);
    event = adaptive ? absl::StrCat("search created: ", counts.memory_safe(),
                                    " memory-safe candidates, probed adaptively")
                     : absl::StrCat("search created: probing ", selected.size(), " of ",
                                    counts.memory_safe(), " memory-safe candidates (",
                                    v1::SearchPolicy_Name(validated.spec.policy()), ")");
  }

  v1::Search created;
  bool queued = false;
  {
    absl::MutexLock lock(&mu_);
    if (shutdown_) return absl::UnavailableError("the server is shutting down");
    // Stored before it is queued: a search the store refused never runs.
    PT_RETURN_IF_ERROR(FlushLocked());
    SearchRecord& stored = active_[id] = std::move(record);
    PublishLocked(stored, event);
    if (absl::Status status = FlushLocked(); !status.ok()) {
      active_.erase(id);
      pending_ = StoreBatch();
      notices_.clear();
      return status;
    }
    if (!nothing_to_probe) {
      SearchRecord& probing = active_.at(id);
      for (int64_t n = 0; n < static_cast<int64_t>(selected.size()); ++n) QueueLocked(probing, n);
      // ADAPTIVE picks its first candidates here.
      if (adaptive) AdvanceLocked(probing, "first candidates chosen");
    }
    UpdateWaitingReasonsLocked();
    FlushLocked().IgnoreError();
    PT_ASSIGN_OR_RETURN(created, store_->GetSearch(id));
    queued = TakeQueuedFlagLocked();
  }
  Log(LogLevel::kInfo, "search created",
      {{"search", created.name()},
       {"state", v1::SearchState_Name(created.state())},
       {"selected", absl::StrCat(created.counts().selected())},
       {"memory_safe", absl::StrCat(created.counts().memory_safe())},
       {"stop_reason", created.stop_reason()}});
  if (queued) NotifyProbesQueued();
  return RankedCopy(created);
}

absl::StatusOr<v1::Search> Scheduler::GetSearch(absl::string_view name) {
  PT_ASSIGN_OR_RETURN(const int64_t id, ParseSearchName("name", name));
  PT_ASSIGN_OR_RETURN(const v1::Search search, store_->GetSearch(id));
  return RankedCopy(search);
}

absl::StatusOr<v1::ListSearchesResponse> Scheduler::ListSearches(
    const v1::ListSearchesRequest& request) {
  PT_ASSIGN_OR_RETURN(const int64_t page_size,
                      CheckPageSize(request.page_size(), kDefaultPageSize));
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

absl::StatusOr<v1::ListSearchEventsResponse> Scheduler::ListSearchEvents(
    const v1::ListSearchEventsRequest& request) {
  PT_ASSIGN_OR_RETURN(const int64_t id, ParseSearchName("name", request.name()));
  PT_ASSIGN_OR_RETURN(const int64_t page_size,
                      CheckPageSize(request.page_size(), kDefaultEventPageSize));
  PT_ASSIGN_OR_RETURN(const int64_t after, DecodePageToken(request.page_token()));
  // NOT_FOUND for a search that does not exist, rather than an empty log.
  PT_RETURN_IF_ERROR(store_->GetSearch(id).status());
  PT_ASSIGN_OR_RETURN(std::vector<SearchEvent> events,
                      store_->ListEvents(id, after, page_size + 1));
  v1::ListSearchEventsResponse response;
  for (size_t i = 0; i < events.size() && static_cast<int64_t>(i) < page_size; ++i) {
    v1::SearchEvent& event = *response.add_events();
    event.set_sequence(events[i].sequence);
    *event.mutable_time() = ToTimestamp(events[i].time);
    event.set_text(std::move(events[i].text));
  }
  if (static_cast<int64_t>(events.size()) > page_size) {
    response.set_next_page_token(EncodePageToken(events[page_size - 1].sequence));
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
    if (candidate.state() == v1::CANDIDATE_RUNNING) ++stopped;
    if (Pending(candidate)) {
      candidate.set_state(v1::CANDIDATE_SKIPPED);
      candidate.clear_waiting_reason();
    }
  }
  std::vector<std::string> probes;
  for (const auto& [probe, lease] : leases_) {
    if (lease.search_id() == id) probes.push_back(probe);
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
  PT_RETURN_IF_ERROR(FlushLocked());
  Log(LogLevel::kInfo, "search cancelled", {{"search", SearchName(id)}});
  PT_ASSIGN_OR_RETURN(const v1::Search cancelled, store_->GetSearch(id));
  return RankedCopy(cancelled);
}

absl::StatusOr<Scheduler::WatchStart> Scheduler::Watch(absl::string_view name,
                                                       SearchObserver* observer) {
  PT_ASSIGN_OR_RETURN(const int64_t id, ParseSearchName("name", name));
  absl::MutexLock lock(&mu_);
  if (shutdown_) return absl::UnavailableError("the server is shutting down");
  auto it = active_.find(id);
  if (it == active_.end()) {
    PT_ASSIGN_OR_RETURN(v1::Search search, store_->GetSearch(id));
    return WatchStart{RankedCopy(search), true};
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
    PT_RETURN_IF_ERROR(FlushLocked());
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
  absl::MutexLock lock(&mu_);
  PT_ASSIGN_OR_RETURN(WorkerRecord * worker, FindLiveWorkerLocked(worker_name));
  const std::string held = worker->worker.current_probe();
  if (!held.empty()) {
    absl::StatusOr<std::pair<internal::LeaseState*, int>> membership =
        FindMembershipLocked(held, *worker);
    if (membership.ok() && !membership->first->members(membership->second).delivered()) {
      internal::LeaseState& lease = *membership->first;
      lease.mutable_members(membership->second)->set_delivered(true);
      StoreLeaseLocked(lease);
      acquisition.assignment = MemberAssignment(active_.at(lease.search_id()).search, lease,
                                                membership->second);
      PT_RETURN_IF_ERROR(FlushLocked());
      return acquisition;
    }
    worker->cancel_probes.push_back(held);
    ReleaseLeaseLocked(
        *worker, absl::StrCat(worker->worker.name(), " asked for a new probe while holding ", held));
  }
  const FreeWorker requester{worker->id, worker->worker.gpus_size()};
  v1::ProbeScope scope = v1::PROBE_SCOPE_UNSPECIFIED;
  int64_t ranks = 0;
  std::vector<RankShare> shares;
  std::optional<ProbeQueue::Item> item = queue_.PopFirstFitting([&](const ProbeQueue::Item& item) {
    auto it = active_.find(item.search_id);
    if (it == active_.end()) return false;
    const SearchRecord& record = it->second;
    const v1::ProbeSettings& probe = record.search.spec().probe();
    const std::string probe_name =
        NextProbeName(item.search_id, item.candidate, record.search.candidates(item.candidate));
    if (!Offers(worker->worker, probe, probe_name, HasReservedWorkersLocked(probe_name))) {
      return false;
    }
    std::tie(scope, ranks) = ProbeShapeLocked(record, item.candidate);
    std::optional<std::vector<RankShare>> placed =
        PlaceGang(ranks, GroupSize(record.search.candidates(item.candidate).config()), requester,
                  LiveWorkersLocked(probe, probe_name, /*free_only=*/true, worker->id));
    if (!placed.has_value()) return false;
    shares = *std::move(placed);
    return true;
  });
  if (item.has_value()) {
    acquisition.assignment =
        LeaseLocked(active_.at(item->search_id), item->candidate, scope, ranks, shares);
    acquisition.others_may_have_work = shares.size() > 1;
  }
  acquisition.others_may_have_work |= TakeQueuedFlagLocked();
  PT_RETURN_IF_ERROR(FlushLocked());
  return acquisition;
}

absl::Status Scheduler::ReportProbe(const v1::ReportProbeRequest& request) {
  bool queued = false;
  {
    absl::MutexLock lock(&mu_);
    PT_ASSIGN_OR_RETURN(WorkerRecord * worker, FindLiveWorkerLocked(request.worker()));
    PT_ASSIGN_OR_RETURN(auto membership, FindMembershipLocked(request.probe(), *worker));
    auto [lease, member] = membership;
    PT_RETURN_IF_ERROR(ValidateProbeResult(request.result(), lease->members_size() > 1));
    if (lease->members(member).has_result()) {
      return absl::FailedPreconditionError(absl::StrCat(
          worker->worker.name(), " reported its ranks of ", request.probe(), " already"));
    }
    const v1::ProbeResult& result = request.result();
    worker->worker.set_probes_completed(worker->worker.probes_completed() + 1);
    {
      v1::SearchCounts& counts = *active_.at(lease->search_id()).search.mutable_counts();
      counts.set_gpu_seconds(counts.gpu_seconds() +
                             result.wall_seconds() * lease->members(member).num_ranks());
    }
    if (result.outcome() == v1::PROBE_OK) {
      *lease->mutable_members(member)->mutable_result() = result;
      if (!AllMembersReported(*lease)) {
        // Its ranks are done: the worker may take other work while the rest finish.
        StoreLeaseLocked(*lease);
        worker->worker.set_state(v1::WORKER_IDLE);
        worker->worker.clear_current_probe();
        StoreWorkerLocked(*worker);
        return FlushLocked();
      }
    }
    const internal::LeaseState ended = EndLeaseLocked(request.probe(), worker->id);
    StoreWorkerLocked(*worker);
    SearchRecord& record = active_.at(ended.search_id());
    const std::string gang_note =
        ended.members_size() > 1
            ? absl::StrCat(" (member ", member + 1, " of ", ended.members_size(), ")")
            : "";
    if (result.outcome() == v1::PROBE_INFRA_ERROR) {
      RetryOrGiveUpLocked(
          record, ended.candidate(),
          absl::StrCat("infrastructure error on ", worker->worker.name(), gang_note, ": ",
                       result.message()));
    } else if (result.outcome() == v1::PROBE_OK) {
      std::vector<v1::ProbeResult> by_member;
      std::vector<std::string> members;
      for (const internal::LeaseMember& m : ended.members()) {
        by_member.push_back(m.result());
        members.push_back(WorkerName(m.worker_id()));
      }
      const v1::ProbeResult combined = CombineGangResults(by_member);
      RecordResultLocked(record, ended.candidate(), combined,
                         absl::StrCat(CandidateLabel(ended.candidate()), " probed on ",
                                      absl::StrJoin(members, " + "), ": ",
                                      DescribeResult(combined)));
    } else {
      v1::ProbeResult failed = result;
      if (ended.members_size() > 1) {
        failed.set_message(absl::StrCat(worker->worker.name(), gang_note, ": ", result.message()));
      }
      RecordResultLocked(record, ended.candidate(), failed,
                         absl::StrCat(CandidateLabel(ended.candidate()), " probed on ",
                                      worker->worker.name(), gang_note, ": ",
                                      DescribeResult(failed)));
    }
    queued = TakeQueuedFlagLocked();
    PT_RETURN_IF_ERROR(FlushLocked());
  }
  if (queued) NotifyProbesQueued();
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
                       WorkerName(lease->members(0).worker_id()), "); ", worker->worker.name(),
                       " is gang[", member, "]"));
    }
    if (token.size() > kMaxRendezvousTokenBytes) {
      return absl::InvalidArgumentError(absl::StrCat("token (", token.size(),
                                                     " bytes) must be at most ",
                                                     kMaxRendezvousTokenBytes, " bytes"));
    }
    if (!lease->rendezvous_token().empty() && lease->rendezvous_token() != token) {
      return absl::FailedPreconditionError(
          absl::StrCat("probe ", request.probe(), " already has a different rendezvous token"));
    }
    if (lease->rendezvous_token().empty()) {
      lease->set_rendezvous_token(token);
      StoreLeaseLocked(*lease);
      PT_RETURN_IF_ERROR(FlushLocked());
    }
  }
  v1::RendezvousResponse response;
  response.set_token(lease->rendezvous_token());
  return response;
}

void Scheduler::CheckLeases() {
  bool queued = false;
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
      LoseWorkerLocked(worker, reason);
    }
    std::vector<std::string> overdue;
    for (const auto& [probe, lease] : leases_) {
      if (now > absl::FromUnixNanos(lease.expires_unix_nanos())) overdue.push_back(probe);
    }
    for (const std::string& probe : overdue) {
      const internal::LeaseState ended = EndLeaseLocked(probe, /*reporter_id=*/0);
      auto record = active_.find(ended.search_id());
      if (record == active_.end()) continue;
      RetryOrGiveUpLocked(
          record->second, ended.candidate(),
          absl::StrCat(probe, " was not reported within its deadline plus ",
                       absl::FormatDuration(options_.lease_grace)));
    }
    std::vector<int64_t> past_deadline;
    for (const auto& [id, record] : active_) {
      if (DeadlinePassed(record.search.spec().budget(), BudgetUseLocked(record))) {
        past_deadline.push_back(id);
      }
    }
    for (int64_t id : past_deadline) AdvanceLocked(active_.at(id), "deadline passed");
    UpdateWaitingReasonsLocked();
    queued = TakeQueuedFlagLocked();
    if (absl::Status status = FlushLocked(); !status.ok()) {
      Log(LogLevel::kError, "storing lease changes failed; retrying at the next change",
          {{"error", status.ToString()}});
    }
  }
  if (queued) NotifyProbesQueued();
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

std::vector<Scheduler::PendingProbe> Scheduler::PendingProbes() {
  absl::MutexLock lock(&mu_);
  std::vector<int64_t> ids;
  for (const auto& [id, record] : active_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  std::vector<PendingProbe> pending;
  for (int64_t id : ids) {
    const SearchRecord& record = active_.at(id);
    const v1::SearchSpec& spec = record.search.spec();
    for (int64_t n = 0; n < record.search.candidates_size(); ++n) {
      const v1::Candidate& candidate = record.search.candidates(n);
      if (!Pending(candidate)) continue;
      PendingProbe& probe = pending.emplace_back();
      probe.backend = spec.probe().backend();
      probe.command_template = spec.probe().command_template();
      probe.group_size = GroupSize(candidate.config());
      probe.gpus_per_node = spec.cluster().gpus_per_node();
      probe.deadline = absl::Seconds(spec.probe().deadline_seconds());
      if (candidate.state() == v1::CANDIDATE_QUEUED) {
        probe.probe = NextProbeName(id, n, candidate);
        probe.ranks = ProbeShapeLocked(record, n).second;
        probe.unplaceable = !candidate.waiting_reason().empty();
        continue;
      }
      probe.probe = ProbeName(id, n, candidate.attempts());
      probe.running = true;
      auto lease = leases_.find(probe.probe);
      if (lease == leases_.end()) continue;
      probe.ranks = lease->second.num_ranks();
      for (const internal::LeaseMember& member : lease->second.members()) {
        probe.on_reserved_workers |=
            ReservedFor(workers_.at(member.worker_id()).worker, probe.probe);
      }
    }
  }
  return pending;
}

absl::Status Scheduler::LaunchEnded(absl::string_view probe, const std::string& reason) {
  PT_ASSIGN_OR_RETURN(const ProbeId id, ParseProbeName("probe", probe));
  bool queued = false;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [worker_id, worker] : workers_) {
      if (worker.worker.state() == v1::WORKER_LOST || !ReservedFor(worker.worker, probe)) continue;
      Log(LogLevel::kInfo, "worker gone with its launch",
          {{"worker", worker.worker.name()}, {"probe", std::string(probe)}, {"reason", reason}});
      LoseWorkerLocked(worker, reason);
    }
    auto record = active_.find(id.search_id);
    if (record != active_.end() && id.candidate < record->second.search.candidates_size()) {
      v1::Candidate& candidate = *record->second.search.mutable_candidates(id.candidate);
      if (candidate.state() == v1::CANDIDATE_QUEUED && candidate.attempts() + 1 == id.attempt) {
        // Re-queued behind the search's other candidates, as a failed lease would be.
        queue_.Remove({id.search_id, id.candidate});
        candidate.set_attempts(id.attempt);
        RetryOrGiveUpLocked(record->second, id.candidate, reason);
      }
    }
    UpdateWaitingReasonsLocked();
    queued = TakeQueuedFlagLocked();
    PT_RETURN_IF_ERROR(FlushLocked());
  }
  if (queued) NotifyProbesQueued();
  return absl::OkStatus();
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

absl::StatusOr<std::pair<internal::LeaseState*, int>> Scheduler::FindMembershipLocked(
    absl::string_view probe, const WorkerRecord& worker) {
  auto it = leases_.find(probe);
  if (it != leases_.end()) {
    const int member = MemberIndex(it->second, worker.id);
    if (member >= 0) return std::make_pair(&it->second, member);
  }
  return absl::FailedPreconditionError(
      absl::StrCat("probe (\"", probe.substr(0, 128), "\") is not leased to ",
                   worker.worker.name(), "; it was cancelled, re-leased or reported already"));
}

void Scheduler::PublishLocked(SearchRecord& record, const std::string& event) {
  const absl::Time now = clock_->Now();
  *record.search.mutable_update_time() = ToTimestamp(now);
  pending_.searches[record.id] = record.search;
  pending_.events.push_back(SearchEvent{record.id, 0, now, event});
  notices_.push_back(Notice{record.observers, RankedCopy(record.search), event});
  if (Ended(record.search.state())) {
    AddSearchTotals(record.search, ended_totals_);
    const int64_t id = record.id;
    active_.erase(id);
  }
}

void Scheduler::StoreWorkerLocked(const WorkerRecord& worker) {
  pending_.workers[worker.id] = worker.worker;
}

void Scheduler::StoreLeaseLocked(const internal::LeaseState& lease) {
  pending_.ended_leases.erase(lease.probe());
  pending_.leases[lease.probe()] = lease;
}

absl::Status Scheduler::FlushLocked() {
  absl::Status status = store_->Apply(pending_);
  if (status.ok()) {
    pending_ = StoreBatch();
  } else {
    Log(LogLevel::kError, "storing scheduler state failed", {{"error", status.ToString()}});
  }
  std::vector<Notice> notices = std::move(notices_);
  notices_.clear();
  for (const Notice& notice : notices) {
    for (SearchObserver* observer : notice.observers) {
      observer->OnSearchChanged(notice.search, notice.event);
    }
  }
  return status;
}

std::vector<FreeWorker> Scheduler::LiveWorkersLocked(const v1::ProbeSettings& probe,
                                                     absl::string_view probe_name, bool free_only,
                                                     int64_t except_id) {
  const bool probe_reserved = HasReservedWorkersLocked(probe_name);
  std::vector<FreeWorker> live;
  for (const auto& [id, record] : workers_) {
    const v1::Worker& worker = record.worker;
    if (id == except_id || worker.state() == v1::WORKER_LOST) continue;
    if (free_only && !worker.current_probe().empty()) continue;
    if (!Offers(worker, probe, probe_name, probe_reserved)) continue;
    live.push_back(FreeWorker{id, worker.gpus_size()});
  }
  return live;
}

bool Scheduler::HasReservedWorkersLocked(absl::string_view probe_name) {
  return std::any_of(workers_.begin(), workers_.end(), [&](const auto& entry) {
    return entry.second.worker.state() != v1::WORKER_LOST &&
           ReservedFor(entry.second.worker, probe_name);
  });
}

std::pair<v1::ProbeScope, int64_t> Scheduler::ProbeShapeLocked(const SearchRecord& record,
                                                               int64_t n) {
  const v1::ProbeSettings& probe = record.search.spec().probe();
  const v1::ParallelConfig& config = record.search.candidates(n).config();
  v1::ProbeScope scope = probe.scope();
  if (scope == v1::PROBE_SCOPE_UNSPECIFIED) {
    // FULL when the fleet could run every rank at once, even if it is busy now: a full
    // probe measures the data-parallel traffic a replica can only model.
    const int64_t capacity = GangCapacity(
        GroupSize(config),
        LiveWorkersLocked(probe, NextProbeName(record.id, n, record.search.candidates(n)),
                          /*free_only=*/false, 0));
    scope = capacity >= record.world_size ? v1::PROBE_SCOPE_FULL : v1::PROBE_SCOPE_REPLICA;
  }
  return {scope, scope == v1::PROBE_SCOPE_FULL ? record.world_size : ReplicaGpus(config)};
}

v1::ProbeAssignment Scheduler::LeaseLocked(SearchRecord& record, int64_t n, v1::ProbeScope scope,
                                           int64_t ranks, const std::vector<RankShare>& shares) {
  const v1::ProbeSettings& probe = record.search.spec().probe();
  v1::Candidate& candidate = *record.search.mutable_candidates(n);
  candidate.set_attempts(candidate.attempts() + 1);
  candidate.set_state(v1::CANDIDATE_RUNNING);
  candidate.clear_waiting_reason();
  candidate.set_worker(WorkerName(shares[0].worker_id));

  std::vector<LeaseWorker> members;
  std::vector<std::string> member_labels;
  const std::string name = ProbeName(record.id, n, candidate.attempts());
  for (const RankShare& share : shares) {
    WorkerRecord& worker = workers_.at(share.worker_id);
    LeaseWorker& member = members.emplace_back();
    member.id = worker.id;
    member.hostname = worker.worker.hostname();
    for (const v1::Gpu& gpu : worker.worker.gpus()) member.gpu_indices.push_back(gpu.index());
    worker.worker.set_state(v1::WORKER_BUSY);
    worker.worker.set_current_probe(name);
    StoreWorkerLocked(worker);
    member_labels.push_back(absl::StrCat(worker.worker.name(), " (ranks ", share.first_rank, "-",
                                         share.first_rank + share.num_ranks - 1, ")"));
  }
  const absl::Time expires =
      clock_->Now() + absl::Seconds(probe.deadline_seconds()) + options_.lease_grace;
  internal::LeaseState lease = MakeLease(name, record.id, n, scope, ranks, shares, members,
                                         absl::ToUnixNanos(expires));
  // A leader being confirmed runs longer than its screening probe did.
  if (candidate.has_screening_result()) {
    lease.set_timed_steps(probe.timed_steps() *
                          record.search.spec().adaptive().confirmation_steps_factor());
  }
  // The asking worker gets its share now; the others at their next AcquireProbe.
  lease.mutable_members(0)->set_delivered(true);
  StoreLeaseLocked(lease);
  v1::ProbeAssignment assignment = MemberAssignment(record.search, lease, 0);
  leases_[name] = std::move(lease);
  PublishLocked(record, absl::StrCat(CandidateLabel(n), " leased to ",
                                     absl::StrJoin(member_labels, ", "), " (attempt ",
                                     candidate.attempts(), " of ", probe.max_attempts(), ", ",
                                     scope == v1::PROBE_SCOPE_FULL ? "full" : "replica",
                                     " scope, ", ranks, " GPUs)"));
  return assignment;
}

internal::LeaseState Scheduler::EndLeaseLocked(const std::string& probe, int64_t reporter_id) {
  auto it = leases_.find(probe);
  internal::LeaseState lease = std::move(it->second);
  leases_.erase(it);
  pending_.leases.erase(probe);
  pending_.ended_leases.insert(probe);
  for (const internal::LeaseMember& member : lease.members()) {
    WorkerRecord& worker = workers_.at(member.worker_id());
    if (worker.worker.current_probe() != probe) continue;
    // A member that never received its share has nothing to stop.
    if (member.worker_id() != reporter_id && member.delivered()) {
      worker.cancel_probes.push_back(probe);
    }
    worker.worker.clear_current_probe();
    worker.worker.set_state(v1::WORKER_IDLE);
    StoreWorkerLocked(worker);
  }
  return lease;
}

void Scheduler::ReleaseLeaseLocked(WorkerRecord& worker, const std::string& reason) {
  const std::string probe = worker.worker.current_probe();
  if (probe.empty()) return;
  if (leases_.find(probe) == leases_.end()) {
    worker.worker.clear_current_probe();
    worker.worker.set_state(v1::WORKER_IDLE);
    StoreWorkerLocked(worker);
    return;
  }
  const internal::LeaseState ended = EndLeaseLocked(probe, worker.id);
  auto record = active_.find(ended.search_id());
  if (record == active_.end()) return;
  RetryOrGiveUpLocked(record->second, ended.candidate(), reason);
}

void Scheduler::LoseWorkerLocked(WorkerRecord& worker, const std::string& reason) {
  ReleaseLeaseLocked(worker, reason);
  worker.worker.set_state(v1::WORKER_LOST);
  worker.cancel_probes.clear();
  StoreWorkerLocked(worker);
}

void Scheduler::RetryOrGiveUpLocked(SearchRecord& record, int64_t n, const std::string& reason) {
  v1::Candidate& candidate = *record.search.mutable_candidates(n);
  const int64_t max_attempts = record.search.spec().probe().max_attempts();
  if (candidate.attempts() < max_attempts) {
    candidate.set_state(v1::CANDIDATE_QUEUED);
    candidate.clear_worker();
    QueueLocked(record, n);
    PublishLocked(record, absl::StrCat(CandidateLabel(n), " re-queued after attempt ",
                                       candidate.attempts(), " of ", max_attempts, ": ", reason));
    return;
  }
  v1::ProbeResult result;
  result.set_outcome(v1::PROBE_INFRA_ERROR);
  result.set_backend(record.search.spec().probe().backend());
  result.set_message(
      absl::StrCat("gave up after ", candidate.attempts(), " attempts; last: ", reason));
  RecordResultLocked(record, n, result,
                     absl::StrCat(CandidateLabel(n), " failed: ", result.message()));
}

void Scheduler::RecordResultLocked(SearchRecord& record, int64_t n, const v1::ProbeResult& result,
                                   const std::string& event) {
  v1::Search& search = record.search;
  v1::Candidate& candidate = *search.mutable_candidates(n);
  const bool confirmation = candidate.has_screening_result();
  std::string text = event;
  candidate.set_state(v1::CANDIDATE_PROBED);
  if (confirmation && result.outcome() != v1::PROBE_OK) {
    // A failed confirmation says nothing about speed: the screening measurement stands.
    *candidate.mutable_probe_result() = candidate.screening_result();
    candidate.clear_screening_result();
    absl::StrAppend(&text, "; its screening result stands");
  } else {
    *candidate.mutable_probe_result() = result;
  }
  v1::SearchCounts& counts = *search.mutable_counts();
  counts.set_probed(counts.probed() + 1);
  if (confirmation) counts.set_confirmations(counts.confirmations() + 1);
  if (result.outcome() == v1::PROBE_OK) {
    counts.set_succeeded(counts.succeeded() + 1);
  } else {
    counts.set_failed(counts.failed() + 1);
    ++(*counts.mutable_failed_by_outcome())[v1::ProbeOutcome_Name(result.outcome())];
  }
  if (record.adaptive != nullptr && n < static_cast<int64_t>(record.policy_index.size())) {
    const absl::Status recorded = record.adaptive->Record(
        record.policy_index[n],
        confirmation ? AdaptivePolicy::ProbeKind::kConfirmation
                     : AdaptivePolicy::ProbeKind::kScreening,
        result);
    if (!recorded.ok()) {
      Log(LogLevel::kError, "the adaptive policy refused a result",
          {{"candidate", candidate.name()}, {"error", recorded.ToString()}});
    }
  }
  AdvanceLocked(record, text);
}

void Scheduler::AdvanceLocked(SearchRecord& record, std::string event) {
  v1::Search& search = record.search;
  std::optional<std::string> stop_reason;
  const BudgetUse use = BudgetUseLocked(record);
  if (std::optional<std::string> spent = BudgetReached(search.spec().budget(), use)) {
    StopProbingLocked(record, DeadlinePassed(search.spec().budget(), use));
    stop_reason = std::move(spent);
  } else if (record.adaptive != nullptr) {
    const AdaptivePolicy::Decision decision = record.adaptive->Next();
    for (const AdaptivePolicy::Pick& pick : decision.picks) {
      absl::StrAppend(&event, event.empty() ? "" : "; ", QueuePickLocked(record, pick));
    }
    stop_reason = decision.stop_reason;
  }
  if (std::any_of(search.candidates().begin(), search.candidates().end(), Pending)) {
    PublishLocked(record, event);
    return;
  }
  search.set_state(search.counts().succeeded() > 0 ? v1::SUCCEEDED : v1::FAILED);
  search.set_stop_reason(stop_reason.value_or(ProbedAllReason(search)));
  Log(search.state() == v1::SUCCEEDED ? LogLevel::kInfo : LogLevel::kWarning, "search ended",
      {{"search", search.name()},
       {"state", v1::SearchState_Name(search.state())},
       {"stop_reason", search.stop_reason()}});
  PublishLocked(record, absl::StrCat(event, "; search ",
                                     search.state() == v1::SUCCEEDED ? "succeeded" : "failed", ": ",
                                     search.stop_reason()));
}

std::string Scheduler::QueuePickLocked(SearchRecord& record, const AdaptivePolicy::Pick& pick) {
  v1::Search& search = record.search;
  int64_t n = 0;
  if (pick.kind == AdaptivePolicy::ProbeKind::kScreening) {
    n = search.candidates_size();
    const PlannedConfig& planned = record.adaptive->candidates()[pick.candidate];
    v1::Candidate& candidate = *search.add_candidates();
    candidate.set_name(CandidateName(record.id, n));
    *candidate.mutable_config() = ParallelConfigToProto(planned.config);
    const double safe_fraction = search.spec().space().safe_memory_fraction();
    *candidate.mutable_memory() = MemoryEstimateToProto(planned.memory, planned.config,
                                                        safe_fraction > 0 ? safe_fraction : 0.80);
    *candidate.mutable_predicted() = PerformanceEstimateToProto(planned.predicted);
    record.policy_index.push_back(pick.candidate);
    v1::SearchCounts& counts = *search.mutable_counts();
    counts.set_selected(counts.selected() + 1);
  } else {
    n = std::find(record.policy_index.begin(), record.policy_index.end(), pick.candidate) -
        record.policy_index.begin();
    v1::Candidate& candidate = *search.mutable_candidates(n);
    *candidate.mutable_screening_result() = candidate.probe_result();
    candidate.clear_probe_result();
  }
  v1::Candidate& candidate = *search.mutable_candidates(n);
  candidate.set_state(v1::CANDIDATE_QUEUED);
  candidate.set_selection_note(pick.note);
  QueueLocked(record, n);
  return absl::StrCat(pick.kind == AdaptivePolicy::ProbeKind::kScreening ? "queued " : "confirming ",
                      CandidateLabel(n), " ", DescribeConfig(candidate.config()), ": ", pick.note);
}

BudgetUse Scheduler::BudgetUseLocked(const SearchRecord& record) {
  BudgetUse use;
  for (const v1::Candidate& candidate : record.search.candidates()) {
    use.probes_started += candidate.attempts();
  }
  use.gpu_seconds = record.search.counts().gpu_seconds();
  use.elapsed = clock_->Now() - absl::FromUnixNanos(google::protobuf::util::TimeUtil::TimestampToNanoseconds(
                                    record.search.create_time()));
  return use;
}

void Scheduler::StopProbingLocked(SearchRecord& record, bool stop_running) {
  queue_.RemoveSearch(record.id);
  if (stop_running) {
    std::vector<std::string> probes;
    for (const auto& [probe, lease] : leases_) {
      if (lease.search_id() == record.id) probes.push_back(probe);
    }
    for (const std::string& probe : probes) EndLeaseLocked(probe, /*reporter_id=*/0);
  }
  for (v1::Candidate& candidate : *record.search.mutable_candidates()) {
    if (candidate.state() == v1::CANDIDATE_QUEUED ||
        (stop_running && candidate.state() == v1::CANDIDATE_RUNNING)) {
      candidate.set_state(v1::CANDIDATE_SKIPPED);
      candidate.clear_waiting_reason();
    }
  }
}

void Scheduler::QueueLocked(const SearchRecord& record, int64_t n) {
  queue_.Push({record.id, n});
  probes_queued_ = true;
}

bool Scheduler::TakeQueuedFlagLocked() { return std::exchange(probes_queued_, false); }

absl::Status Scheduler::RebuildPolicyLocked(SearchRecord& record) {
  const v1::SearchSpec& spec = record.search.spec();
  PT_ASSIGN_OR_RETURN(const ResolvedSpec resolved, ResolveSearchSpec(spec));
  PT_ASSIGN_OR_RETURN(
      const Plan plan,
      PlanConfigurations(resolved.model, resolved.training, resolved.cluster, resolved.plan_options,
                         DefaultPerformanceParameters(resolved.cluster.gpu())));
  AdaptiveOptions options;
  options.tolerance = spec.adaptive().tolerance();
  options.confidence_sigmas = spec.adaptive().confidence_sigmas();
  options.max_in_flight = spec.adaptive().max_in_flight();
  options.max_confirmations = spec.adaptive().max_confirmations();
  record.adaptive = std::make_unique<AdaptivePolicy>(
      resolved.model, resolved.training, resolved.cluster, plan.candidates,
      DefaultPerformanceParameters(resolved.cluster.gpu()), options);
  record.policy_index.clear();
  using Kind = AdaptivePolicy::ProbeKind;
  for (const v1::Candidate& candidate : record.search.candidates()) {
    const std::string config = candidate.config().SerializeAsString();
    const auto planned = std::find_if(
        plan.candidates.begin(), plan.candidates.end(), [&](const PlannedConfig& p) {
          return ParallelConfigToProto(p.config).SerializeAsString() == config;
        });
    if (planned == plan.candidates.end()) {
      // The estimator of this build no longer plans it; its result still counts in the search.
      return absl::FailedPreconditionError(
          absl::StrCat(candidate.name(), " (", DescribeConfig(candidate.config()),
                       ") is not among this server's planned candidates; the search cannot "
                       "resume adaptively"));
    }
    const size_t index = planned - plan.candidates.begin();
    record.policy_index.push_back(index);
    const bool confirmation = candidate.has_screening_result();
    if (confirmation) PT_RETURN_IF_ERROR(record.adaptive->Record(index, Kind::kScreening,
                                                                 candidate.screening_result()));
    const Kind kind = confirmation ? Kind::kConfirmation : Kind::kScreening;
    if (candidate.state() == v1::CANDIDATE_PROBED) {
      PT_RETURN_IF_ERROR(record.adaptive->Record(index, kind, candidate.probe_result()));
    } else if (Pending(candidate)) {
      record.adaptive->MarkInFlight(index, kind);
    }
  }
  return absl::OkStatus();
}

void Scheduler::UpdateWaitingReasonsLocked() {
  std::vector<int64_t> ids;
  for (const auto& [id, record] : active_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (int64_t id : ids) {
    SearchRecord& record = active_.at(id);
    const v1::ProbeSettings& probe = record.search.spec().probe();
    std::vector<std::string> changes;
    for (int64_t n = 0; n < record.search.candidates_size(); ++n) {
      v1::Candidate& candidate = *record.search.mutable_candidates(n);
      if (candidate.state() != v1::CANDIDATE_QUEUED) continue;
      const int64_t ranks = ProbeShapeLocked(record, n).second;
      const int64_t group = GroupSize(candidate.config());
      const int64_t capacity = GangCapacity(
          group, LiveWorkersLocked(probe, NextProbeName(id, n, candidate), /*free_only=*/false, 0));
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
