// What a search probes next (DESIGN.md §6), behind one interface so that the scheduler never
// asks which policy a search runs: TOP_K and EXHAUSTIVE pick their candidates at once
// (static_policy.h), ADAPTIVE a few at a time from a model it refits after every result
// (adaptive_policy.h). search_planning.h builds the policy of a spec.
#ifndef PARATUNE_SERVER_CORE_SEARCH_POLICY_H_
#define PARATUNE_SERVER_CORE_SEARCH_POLICY_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "estimator/planner.h"
#include "proto/probe.pb.h"

namespace paratune {

// Thread-compatible: the scheduler guards each search's policy with its own mutex.
class SearchPolicy {
 public:
  enum class ProbeKind {
    kScreening,     // the first probe of a candidate
    kConfirmation,  // a longer probe of a leader
  };
  struct Pick {
    size_t candidate = 0;  // index into candidates()
    ProbeKind kind = ProbeKind::kScreening;
    // Why it was picked, for people.
    std::string note;
    // The optimistic prediction (TFLOP/s per GPU) the pick was made on, the figure in `note`;
    // 0 for a policy that holds none and for a confirmation.
    double optimistic_tflops_per_gpu = 0;
  };
  struct Decision {
    std::vector<Pick> picks;
    // Set when the policy has decided the search is over (nothing in flight and nothing
    // worth probing), with the reason; a policy that leaves it unset ends the search when
    // everything it picked is probed.
    std::optional<std::string> stop_reason;
  };

  virtual ~SearchPolicy() = default;

  // The configurations the policy chooses among, in the planner's predicted order.
  virtual const std::vector<PlannedConfig>& candidates() const = 0;

  // The candidates to probe now; each is then in flight until Record. Deterministic.
  virtual Decision Next() = 0;

  // Marks candidate `index` in flight without Next choosing it: a probe the scheduler
  // resumed after a restart.
  virtual void MarkInFlight(size_t index, ProbeKind kind) = 0;

  // A probe of candidate `index` finished with `result` (its final outcome, retries done).
  // INVALID_ARGUMENT for an index out of range or a result the policy cannot use.
  virtual absl::Status Record(size_t index, ProbeKind kind, const v1::ProbeResult& result) = 0;

  // The candidates not picked yet that the policy may still pick: what is left to probe if
  // the search runs on (confirmations aside), for progress and the remaining cost.
  virtual std::vector<size_t> Contending() const = 0;

  // The candidates ruled out without a probe as not fitting in memory, in the order they were
  // (ADAPTIVE, after what its probes measured of memory; none for a static policy).
  virtual const std::vector<size_t>& SkippedForMemory() const = 0;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_SEARCH_POLICY_H_
