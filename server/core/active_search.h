// One search that has not ended (DESIGN.md §6): its stored form, the policy that chooses its
// probes, its budget, and the bookkeeping of its candidates and counts. It changes the search
// only: queueing, leases, storing and telling observers are the scheduler's, which it tells
// what to do through what its calls return. Every change to a candidate goes through it and
// is noted, so that storing the search writes the candidates that changed and not the others
// (TakeUpdate, docs/storage.md).
#ifndef PARATUNE_SERVER_CORE_ACTIVE_SEARCH_H_
#define PARATUNE_SERVER_CORE_ACTIVE_SEARCH_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "convert/search_request.h"
#include "convert/spec_convert.h"
#include "estimator/memory_calibration.h"
#include "proto/autotuner_service.pb.h"
#include "proto/probe.pb.h"
#include "proto/search.pb.h"
#include "server/core/probe_timing.h"
#include "server/core/search_budget.h"
#include "server/core/search_observer.h"
#include "server/core/search_planning.h"
#include "server/core/search_policy.h"
#include "server/core/search_store.h"

namespace paratune {

// Thread-compatible: the scheduler guards it with its own mutex.
class ActiveSearch {
 public:
  // Search `id` of a validated request, created at `now` by `creator` with its plan: PROBING,
  // or FAILED with the reason when the plan left nothing to probe. `exempt_from_limits`: its
  // creator is exempt from the per-principal limits (server/core/limits.h), an admin.
  ActiveSearch(int64_t id, const v1::CreateSearchRequest& request,
               const ValidatedSearchRequest& validated, PlannedSearch planned, absl::Time now,
               const std::string& creator, bool exempt_from_limits);

  // Stored unfinished search `id` as a restarted scheduler finds it, planned again with its
  // candidates replayed into a new policy (search_planning.h); its running candidates without
  // a lease (`leased(n)` false) are queued again. When the policy cannot be rebuilt
  // (RestorePolicy's errors) it ends FAILED, saying why. `exempt_from_limits` as the token file
  // now in force says (Scheduler::Options::is_admin): creators' roles are not stored.
  static ActiveSearch Resume(int64_t id, v1::Search search, bool exempt_from_limits,
                             const std::function<bool(int64_t n)>& leased);

  int64_t id() const { return id_; }
  const v1::Search& search() const { return search_; }
  std::vector<SearchObserver*>& observers() { return observers_; }
  // Not stored: for a resumed search, the token file then in force decides.
  bool exempt_from_limits() const { return exempt_from_limits_; }

  // What Advance did, for the caller's queue, leases and events.
  struct Advanced {
    // Its budget was reached: it stopped probing, its queued candidates skipped, and its
    // running ones too when `stop_running` (the deadline passed). Their queue entries and
    // leases are the caller's to drop.
    bool stopped = false;
    bool stop_running = false;
    // A candidate its policy picked, queued: a new one, or a leader to confirm.
    struct Queued {
      int64_t n = 0;
      bool confirmation = false;
    };
    std::vector<Queued> queued;
    // Nothing is queued or running any more: the search ended, SUCCEEDED when a probe
    // succeeded, else FAILED, with the reason its budget or policy gave, or that everything
    // picked was probed.
    bool ended = false;
  };
  // Goes on at `now`, after a change: stops probing when its budget is reached
  // (search_budget.h), else queues what its policy picks now; then ends when nothing is
  // queued or running, else updates its outlook (counts.still_contending and the projected
  // remaining cost, proto/search.proto).
  Advanced Advance(absl::Time now);
  // Ends the search: `state` with stop reason `reason`, its queued and running candidates
  // skipped.
  void End(v1::SearchState state, const std::string& reason);

  // What recording a result did beyond the candidate itself, for the search's events.
  struct Recorded {
    // A failed confirmation: the screening result stands.
    bool screening_result_stands = false;
    // Configurations the calibrated memory estimate now rules out; the policy never picks
    // them, so the event is the one place that names them.
    std::vector<v1::ParallelConfig> ruled_out;
  };
  // Records the final result of candidate n and tells the policy.
  Recorded RecordResult(int64_t n, const v1::ProbeResult& result);

  // How a probe of a candidate ended without a result (Retry).
  enum class Unfinished {
    // Its lease ended: its worker was lost or left, it was not reported in time, or it hit an
    // infrastructure error. The attempt was counted when it was leased.
    kLeaseEnded,
    // What was launched to run it ended before it started: the attempt is counted now.
    kLaunchEnded,
    // Its launch was refused: counted now, and as a refusal in a row until a probe is leased.
    kLaunchRefused,
  };
  struct Retried {
    // Its attempts (ProbeSettings.max_attempts; a confirmation's own,
    // convert/search_progress.h's ProbeAttempts) were spent: the probe was given
    // up, recorded as PROBE_INFRA_ERROR ("gave up after 2 attempts; last: <reason>"), as
    // RecordResult says.
    std::optional<Recorded> gave_up;
    // The last ProbeSettings.max_launch_failures refusals said the same: why the search must
    // stop.
    std::optional<std::string> stop_reason;
  };
  // Candidate n's probe ended without a result, for `reason`: queued again while attempts
  // remain, else given up.
  Retried Retry(int64_t n, const std::string& reason, Unfinished how);

  // Candidate n's next probe was leased, `worker` hosting its first rank: one more attempt,
  // RUNNING there; refusals of launches are no longer in a row.
  void Leased(int64_t n, const std::string& worker);
  // Sets why queued candidate n cannot be placed now ("" when it can).
  void SetWaitingReason(int64_t n, const std::string& reason);
  // A probe's member ran for `gpu_seconds` (wall seconds x its GPUs); counted as failed too
  // when its outcome was not OK.
  void AddGpuSeconds(double gpu_seconds, bool failed);
  // How candidate n's next probe runs and its deadline (probe_timing.h): the search's timed
  // steps, or confirmation_steps_factor times as many when it confirms a leader.
  ProbeTiming Timing(int64_t n) const;

  // What changed since the last call (or since the search was stored, for one resumed after
  // a restart), with update_time set to `now` and progress brought up to date: the search's
  // own fields and the candidates added or changed.
  SearchUpdate TakeUpdate(absl::Time now);

 private:
  ActiveSearch(int64_t id, v1::Search search, bool exempt_from_limits);

  // Adds `pick` to the search, queued: a new candidate, or a leader to confirm. Returns the
  // candidate's n.
  int64_t AddPick(const SearchPolicy::Pick& pick);
  void CountAttempt(int64_t n);
  // Candidate n goes back to the queue: QUEUED, on no worker.
  void Requeue(int64_t n);
  // Marks queued candidates, and running ones when `include_running`, SKIPPED.
  void SkipPending(bool include_running);
  // Sets counts.still_contending and the projected remaining cost from the policy and the
  // queued candidates; zeroes them once it ended.
  void UpdateOutlook();
  // What it has spent of its budget at `now`.
  BudgetUse Use(absl::Time now) const;
  int64_t TimedSteps(int64_t n) const;
  // Candidate n, noted as changed: the one way to change a candidate. A change of what the
  // tallies count (its state, results or waiting reason) goes through Update.
  v1::Candidate& Change(int64_t n);
  // Changes candidate n with `change`, keeping the tallies: its share is taken out before and
  // added back after.
  void Update(int64_t n, const std::function<void(v1::Candidate&)>& change);
  // Sets candidate n's state, keeping the tallies.
  void SetState(int64_t n, v1::CandidateState state);
  // Adds candidate n's share of the tallies to them (`sign` 1), or takes it out (-1).
  void Tally(int64_t n, int64_t sign);
  // The predicted seconds of candidate n's next probe (Timing), in integer nanoseconds so that
  // what Tally adds and takes out of queued_nanos_ cancels exactly.
  int64_t PredictedNanos(int64_t n) const;

  int64_t id_ = 0;
  v1::Search search_;
  // The candidates changed since the last TakeUpdate, by n.
  std::set<int64_t> changed_;
  // Tallies of the candidates, kept as they change so that a probe result costs the same
  // whatever the search's size: how many are queued or running; their attempts summed (probes
  // started); the predicted time of the queued ones' next probes (counted once the search
  // has its policy: a resumed search counts it in Resume).
  int64_t pending_ = 0;
  int64_t probes_started_ = 0;
  int64_t queued_nanos_ = 0;
  // The candidates' shares of the search's progress summed (convert/search_progress.h,
  // CountCandidate), and the queued candidates that CannotStart, by n: TakeUpdate completes
  // Search.progress from them.
  v1::SearchProgress candidates_share_;
  std::set<int64_t> cannot_start_;
  // From the first probe of each probed candidate (search_memory.h); set by the first result
  // and by Resume.
  std::optional<MemoryCalibration> memory_calibration_;
  std::vector<SearchObserver*> observers_;
  // Set by the first constructor and by Resume.
  std::optional<ResolvedSpec> resolved_;
  std::unique_ptr<SearchPolicy> policy_;
  // For candidate n of the search, its index among policy_->candidates().
  std::vector<size_t> policy_index_;
  // The last refused launch's message and how many refusals in a row said it.
  std::string refusal_;
  int64_t refusals_in_a_row_ = 0;
  bool exempt_from_limits_ = false;
};

// Whether the candidate is queued or running.
bool Pending(const v1::Candidate& candidate);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_ACTIVE_SEARCH_H_
