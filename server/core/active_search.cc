#include "server/core/active_search.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "convert/search_progress.h"
#include "convert/spec_convert.h"
#include "google/protobuf/util/time_util.h"
#include "server/core/resource_names.h"
#include "server/core/search_memory.h"
#include "server/core/stop_reasons.h"

namespace paratune {

bool Pending(const v1::Candidate& candidate) {
  return candidate.state() == v1::CANDIDATE_QUEUED || candidate.state() == v1::CANDIDATE_RUNNING;
}

ActiveSearch::ActiveSearch(int64_t id, const v1::CreateSearchRequest& request,
                           const ValidatedSearchRequest& validated, PlannedSearch planned,
                           absl::Time now, const std::string& creator, bool exempt_from_limits)
    : id_(id),
      resolved_(std::move(planned.resolved)),
      policy_(std::move(planned.policy)),
      exempt_from_limits_(exempt_from_limits) {
  search_.set_name(SearchName(id));
  search_.set_display_name(request.display_name());
  search_.set_creator(creator);
  *search_.mutable_spec() = validated.spec;
  if (planned.recompute_added) {
    // Stored with the modes it searched, so that it shows them and resumes planning the same.
    for (Recompute mode : resolved_->plan_options.recompute_modes) {
      search_.mutable_spec()->mutable_space()->add_recompute_modes(RecomputeToProto(mode));
    }
  }
  *search_.mutable_create_time() =
      google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(now));
  const bool include_risky = ProbesRiskyConfigurations(validated.spec.space());
  v1::SearchCounts& counts = *search_.mutable_counts();
  counts.set_enumerated(planned.counts.enumerated);
  counts.set_valid(planned.counts.valid);
  counts.set_memory_safe(planned.counts.safe + (include_risky ? planned.counts.risky : 0));
  counts.set_memory_risky(planned.counts.risky);
  counts.set_memory_out_of_memory(planned.counts.out_of_memory);
  if (!policy_->candidates().empty()) {
    search_.set_state(v1::PROBING);
  } else {
    search_.set_state(v1::FAILED);
    search_.set_stop_reason(NothingToProbeReason(counts, include_risky, planned.advice));
  }
}

ActiveSearch::ActiveSearch(int64_t id, v1::Search search, bool exempt_from_limits)
    : id_(id), search_(std::move(search)), exempt_from_limits_(exempt_from_limits) {
  for (int64_t n = 0; n < search_.candidates_size(); ++n) {
    Tally(n, 1);
    probes_started_ += search_.candidates(n).attempts();
  }
}

ActiveSearch ActiveSearch::Resume(int64_t id, v1::Search search, bool exempt_from_limits,
                                  const std::function<bool(int64_t n)>& leased) {
  ActiveSearch resumed(id, std::move(search), exempt_from_limits);
  for (int64_t n = 0; n < resumed.search_.candidates_size(); ++n) {
    if (resumed.search_.candidates(n).state() == v1::CANDIDATE_RUNNING && !leased(n)) {
      resumed.SetState(n, v1::CANDIDATE_QUEUED);
    }
  }
  absl::StatusOr<RestoredPolicy> restored = RestorePolicy(resumed.search_);
  if (!restored.ok()) {
    resumed.End(v1::FAILED,
                absl::StrCat("could not resume after a restart: ", restored.status().message()));
    return resumed;
  }
  resumed.resolved_ = std::move(restored->resolved);
  resumed.policy_ = std::move(restored->policy);
  resumed.policy_index_ = std::move(restored->policy_index);
  const v1::Search& stored = resumed.search_;
  if (!stored.candidates().empty()) {
    resumed.memory_calibration_.emplace(FirstProbesCalibration(stored));
  }
  for (int64_t n = 0; n < stored.candidates_size(); ++n) {
    if (stored.candidates(n).state() == v1::CANDIDATE_QUEUED) {
      resumed.queued_nanos_ += resumed.PredictedNanos(n);
    }
  }
  return resumed;
}

ActiveSearch::Advanced ActiveSearch::Advance(absl::Time now) {
  Advanced advanced;
  const v1::SearchBudget& budget = search_.spec().budget();
  std::optional<std::string> stop_reason;
  const BudgetUse use = Use(now);
  if (std::optional<std::string> spent = BudgetReached(budget, use)) {
    advanced.stopped = true;
    advanced.stop_running = DeadlinePassed(budget, use.elapsed);
    SkipPending(advanced.stop_running);
    stop_reason = std::move(spent);
  } else {
    SearchPolicy::Decision decision = policy_->Next();
    for (const SearchPolicy::Pick& pick : decision.picks) {
      advanced.queued.push_back(
          {AddPick(pick), pick.kind == SearchPolicy::ProbeKind::kConfirmation});
    }
    stop_reason = std::move(decision.stop_reason);
  }
  if (pending_ > 0) {
    UpdateOutlook();
    return advanced;
  }
  End(search_.counts().succeeded() > 0 ? v1::SUCCEEDED : v1::FAILED,
      stop_reason.value_or(ProbedAllReason(search_)));
  advanced.ended = true;
  return advanced;
}

int64_t ActiveSearch::AddPick(const SearchPolicy::Pick& pick) {
  const bool screening = pick.kind == SearchPolicy::ProbeKind::kScreening;
  int64_t n = 0;
  if (screening) {
    n = search_.candidates_size();
    const double safe_fraction = search_.spec().space().safe_memory_fraction();
    // Queued as planned; SetState below notes it as changed.
    *search_.add_candidates() =
        CandidateFromPlan(policy_->candidates()[pick.candidate], CandidateName(id_, n),
                          safe_fraction > 0 ? safe_fraction : 0.80);
    policy_index_.push_back(pick.candidate);
    Tally(n, 1);
    v1::SearchCounts& counts = *search_.mutable_counts();
    counts.set_selected(counts.selected() + 1);
    SetState(n, v1::CANDIDATE_QUEUED);
  } else {
    n = std::find(policy_index_.begin(), policy_index_.end(), pick.candidate) -
        policy_index_.begin();
    Update(n, [](v1::Candidate& candidate) {
      *candidate.mutable_screening_result() = candidate.probe_result();
      candidate.clear_probe_result();
      candidate.set_screening_attempts(candidate.attempts());
      candidate.set_state(v1::CANDIDATE_QUEUED);
    });
  }
  v1::Candidate& candidate = Change(n);
  candidate.set_selection_note(pick.note);
  // A confirmation is chosen on its measurement: the bound it was first chosen on stays.
  if (screening) candidate.set_optimistic_tflops_per_gpu(pick.optimistic_tflops_per_gpu);
  return n;
}

ActiveSearch::Recorded ActiveSearch::RecordResult(int64_t n, const v1::ProbeResult& result) {
  Recorded recorded;
  const bool confirmation = search_.candidates(n).has_screening_result();
  Update(n, [&](v1::Candidate& candidate) {
    candidate.set_state(v1::CANDIDATE_PROBED);
    if (confirmation && result.outcome() != v1::PROBE_OK) {
      // A failed confirmation says nothing about speed: the screening measurement stands.
      *candidate.mutable_probe_result() = candidate.screening_result();
      candidate.clear_screening_result();
      recorded.screening_result_stands = true;
    } else {
      *candidate.mutable_probe_result() = result;
    }
  });
  const v1::Candidate& candidate = search_.candidates(n);
  v1::SearchCounts& counts = *search_.mutable_counts();
  counts.set_probed(counts.probed() + 1);
  if (confirmation) counts.set_confirmations(counts.confirmations() + 1);
  if (!confirmation && candidate.memory().verdict() == v1::RISKY) {
    counts.set_risky_probed(counts.risky_probed() + 1);
    if (result.outcome() == v1::PROBE_OUT_OF_MEMORY) {
      counts.set_risky_out_of_memory(counts.risky_out_of_memory() + 1);
    }
  }
  if (result.outcome() == v1::PROBE_OK) {
    counts.set_succeeded(counts.succeeded() + 1);
  } else {
    counts.set_failed(counts.failed() + 1);
    ++(*counts.mutable_failed_by_outcome())[v1::ProbeOutcome_Name(result.outcome())];
  }
  if (!confirmation) {
    // Its first probe: it calibrates the search's memory estimate (search_memory.h).
    if (!memory_calibration_.has_value()) {
      memory_calibration_.emplace(static_cast<double>(candidate.memory().capacity_bytes()));
    }
    AddProbeMemory(result, static_cast<double>(candidate.memory().peak_bytes()),
                   *memory_calibration_);
    SetMemoryCalibration(*memory_calibration_, search_);
  }
  const size_t skipped_before = policy_->SkippedForMemory().size();
  const absl::Status told = policy_->Record(
      policy_index_[n],
      confirmation ? SearchPolicy::ProbeKind::kConfirmation : SearchPolicy::ProbeKind::kScreening,
      result);
  if (!told.ok()) {
    Log(LogLevel::kError, "the search's policy refused a result",
        {{"candidate", candidate.name()}, {"error", told.ToString()}});
  }
  const std::vector<size_t>& skipped = policy_->SkippedForMemory();
  for (size_t k = skipped_before; k < skipped.size(); ++k) {
    recorded.ruled_out.push_back(ParallelConfigToProto(policy_->candidates()[skipped[k]].config));
  }
  return recorded;
}

ActiveSearch::Retried ActiveSearch::Retry(int64_t n, const std::string& reason, Unfinished how) {
  Retried retried;
  const v1::ProbeSettings& probe = search_.spec().probe();
  if (how != Unfinished::kLeaseEnded) CountAttempt(n);
  if (how == Unfinished::kLaunchRefused) {
    refusals_in_a_row_ = reason == refusal_ ? refusals_in_a_row_ + 1 : 1;
    refusal_ = reason;
    if (refusals_in_a_row_ >= probe.max_launch_failures()) {
      retried.stop_reason =
          absl::StrCat("stopped after ", refusals_in_a_row_,
                       " launches in a row were refused the same way (probe.max_launch_failures ",
                       probe.max_launch_failures(), "): ", reason);
    }
  }
  // A confirmation has attempts of its own: it is not a retry of the screening probe.
  const int64_t attempts = ProbeAttempts(search_.candidates(n));
  if (attempts < probe.max_attempts()) {
    Requeue(n);
    return retried;
  }
  v1::ProbeResult result;
  result.set_outcome(v1::PROBE_INFRA_ERROR);
  result.set_backend(probe.backend());
  result.set_message(absl::StrCat("gave up after ", attempts, " attempts; last: ", reason));
  retried.gave_up = RecordResult(n, result);
  return retried;
}

void ActiveSearch::Leased(int64_t n, const std::string& worker) {
  CountAttempt(n);
  Update(n, [&](v1::Candidate& candidate) {
    candidate.set_state(v1::CANDIDATE_RUNNING);
    candidate.clear_waiting_reason();
    candidate.set_worker(worker);
  });
  refusals_in_a_row_ = 0;
}

void ActiveSearch::CountAttempt(int64_t n) {
  v1::Candidate& candidate = Change(n);
  candidate.set_attempts(candidate.attempts() + 1);
  ++probes_started_;
}

void ActiveSearch::Requeue(int64_t n) {
  SetState(n, v1::CANDIDATE_QUEUED);
  Change(n).clear_worker();
}

void ActiveSearch::SetWaitingReason(int64_t n, const std::string& reason) {
  Update(n, [&](v1::Candidate& candidate) { candidate.set_waiting_reason(reason); });
}

void ActiveSearch::AddGpuSeconds(double gpu_seconds, bool failed) {
  v1::SearchCounts& counts = *search_.mutable_counts();
  counts.set_gpu_seconds(counts.gpu_seconds() + gpu_seconds);
  if (failed) counts.set_failed_gpu_seconds(counts.failed_gpu_seconds() + gpu_seconds);
}

void ActiveSearch::SkipPending(bool include_running) {
  for (int64_t n = 0; n < search_.candidates_size(); ++n) {
    const v1::CandidateState state = search_.candidates(n).state();
    if (state == v1::CANDIDATE_QUEUED || (include_running && state == v1::CANDIDATE_RUNNING)) {
      Update(n, [](v1::Candidate& candidate) {
        candidate.set_state(v1::CANDIDATE_SKIPPED);
        candidate.clear_waiting_reason();
      });
    }
  }
}

void ActiveSearch::End(v1::SearchState state, const std::string& reason) {
  SkipPending(/*include_running=*/true);
  search_.set_state(state);
  search_.set_stop_reason(absl::StrCat(reason, RiskAndFailureNote(search_.counts())));
  UpdateOutlook();
}

void ActiveSearch::UpdateOutlook() {
  v1::SearchCounts& counts = *search_.mutable_counts();
  counts.clear_still_contending();
  counts.clear_projected_remaining_gpu_seconds();
  counts.clear_projected_remaining_wall_seconds();
  if (search_.state() != v1::PROBING || policy_ == nullptr) return;
  const v1::ProbeSettings& probe = search_.spec().probe();
  const std::vector<size_t> contending = policy_->Contending();
  counts.set_still_contending(static_cast<int64_t>(contending.size()));
  double seconds = 0;
  for (size_t i : contending) {
    seconds += TimeProbe(policy_->candidates()[i], resolved_->training, probe, probe.timed_steps())
                   .predicted_seconds;
  }
  seconds += static_cast<double>(queued_nanos_) * 1e-9;
  counts.set_projected_remaining_wall_seconds(seconds);
  counts.set_projected_remaining_gpu_seconds(seconds *
                                             static_cast<double>(resolved_->cluster.world_size()));
}

ProbeTiming ActiveSearch::Timing(int64_t n) const {
  return TimeProbe(policy_->candidates()[policy_index_[n]], resolved_->training,
                   search_.spec().probe(), TimedSteps(n));
}

int64_t ActiveSearch::TimedSteps(int64_t n) const {
  const v1::SearchSpec& spec = search_.spec();
  return search_.candidates(n).has_screening_result()
             ? spec.probe().timed_steps() * spec.adaptive().confirmation_steps_factor()
             : spec.probe().timed_steps();
}

BudgetUse ActiveSearch::Use(absl::Time now) const {
  BudgetUse use;
  use.probes_started = probes_started_;
  use.gpu_seconds = search_.counts().gpu_seconds();
  use.elapsed = SearchAge(search_, now);
  return use;
}

SearchUpdate ActiveSearch::TakeUpdate(absl::Time now) {
  *search_.mutable_update_time() =
      google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(now));
  *search_.mutable_progress() = CompleteProgress(
      search_, candidates_share_,
      cannot_start_.empty() ? "" : search_.candidates(*cannot_start_.begin()).waiting_reason());
  SearchUpdate update;
  // The fields are copied with the candidates moved out, which swaps two pointers each way.
  google::protobuf::RepeatedPtrField<v1::Candidate> candidates;
  candidates.Swap(search_.mutable_candidates());
  update.fields = search_;
  candidates.Swap(search_.mutable_candidates());
  for (int64_t n : changed_) update.candidates[n] = search_.candidates(n);
  changed_.clear();
  return update;
}

v1::Candidate& ActiveSearch::Change(int64_t n) {
  changed_.insert(n);
  return *search_.mutable_candidates(n);
}

void ActiveSearch::SetState(int64_t n, v1::CandidateState state) {
  Update(n, [state](v1::Candidate& candidate) { candidate.set_state(state); });
}

void ActiveSearch::Update(int64_t n, const std::function<void(v1::Candidate&)>& change) {
  Tally(n, -1);
  change(Change(n));
  Tally(n, 1);
}

void ActiveSearch::Tally(int64_t n, int64_t sign) {
  const v1::Candidate& candidate = search_.candidates(n);
  if (Pending(candidate)) pending_ += sign;
  CountCandidate(candidate, sign, candidates_share_);
  if (CannotStart(candidate)) {
    if (sign > 0) {
      cannot_start_.insert(n);
    } else {
      cannot_start_.erase(n);
    }
  }
  // A queued candidate's timing depends on whether it confirms a leader (TimedSteps), which
  // changes only while it is not queued: what is added is what is later taken out.
  if (candidate.state() == v1::CANDIDATE_QUEUED && policy_ != nullptr) {
    queued_nanos_ += sign * PredictedNanos(n);
  }
}

int64_t ActiveSearch::PredictedNanos(int64_t n) const {
  return std::llround(Timing(n).predicted_seconds * 1e9);
}

}  // namespace paratune
