// The ADAPTIVE search policy (DESIGN.md §6): probe candidates in order of the search's own
// refitted performance model, refit after every result, confirm the leaders whose short
// probes cannot be told apart with longer probes, and stop when no unprobed candidate's
// optimistic prediction can beat the best measured one by more than the tolerance. Pure (no
// clock, no I/O): the scheduler feeds it results and queues what it picks, and a restarted
// scheduler rebuilds it by replaying the stored results.
#ifndef PARATUNE_SERVER_CORE_ADAPTIVE_POLICY_H_
#define PARATUNE_SERVER_CORE_ADAPTIVE_POLICY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "estimator/cluster_spec.h"
#include "estimator/memory_calibration.h"
#include "estimator/model_spec.h"
#include "estimator/performance_fit.h"
#include "estimator/performance_parameters.h"
#include "estimator/planner.h"
#include "estimator/training_spec.h"
#include "proto/probe.pb.h"
#include "server/core/search_policy.h"

namespace paratune {

struct AdaptiveOptions {
  // Stop when no unprobed candidate's optimistic prediction beats the best measured TFLOP/s
  // per GPU by more than this fraction.
  double tolerance = 0.02;
  // Optimistic prediction = predicted x exp(confidence_sigmas x relative error), the relative
  // error being the search's own (relative_error()).
  double confidence_sigmas = 2;
  int64_t max_in_flight = 2;
  // Leaders re-probed with more steps when their short probes cannot be told apart.
  int64_t max_confirmations = 2;
};

class AdaptivePolicy : public SearchPolicy {
 public:
  // `candidates` are the memory-safe configurations in the planner's predicted order;
  // `calibrated` the GPU type's fitted parameters, the refit's starting point and prior.
  AdaptivePolicy(ModelSpec model, TrainingSpec training, ClusterSpec cluster,
                 std::vector<PlannedConfig> candidates, PerformanceParameters calibrated,
                 AdaptiveOptions options);

  const std::vector<PlannedConfig>& candidates() const override { return candidates_; }

  // The candidates to probe now, at most max_in_flight minus those in flight; each is then
  // in flight until Record. Deterministic.
  Decision Next() override;

  // Marks candidate `index` in flight without Next choosing it: a probe the scheduler
  // resumed after a restart.
  void MarkInFlight(size_t index, ProbeKind kind) override;

  // Unprobed candidates whose optimistic prediction beats the best measured by more than the
  // tolerance (every unprobed one before any measurement), highest prediction first.
  std::vector<size_t> Contending() const override;

  // A probe of candidate `index` finished with `result` (its final outcome, retries done).
  // OK results refit the model. What a screening probe says of memory (its measured peak, or
  // that it ran out) calibrates the memory estimate (server/core/search_memory.h), and every
  // unprobed candidate that the calibrated estimate puts out of memory is skipped: after an
  // out-of-memory probe, at least those estimated to need as much. INVALID_ARGUMENT for an
  // index out of range or an OK result without a positive mean step time.
  absl::Status Record(size_t index, ProbeKind kind, const v1::ProbeResult& result) override;

  // The current refitted parameters (the calibrated ones before any OK result).
  const PerformanceParameters& parameters() const { return params_; }
  // The model's relative error for this search: the calibrated parameters' cross-validated
  // error (docs/estimator.md), widened when the search's own probes show the model doing
  // worse here. The evidence is their leave-one-out errors (each probe predicted by a refit
  // without it), pooled with the prior as kPriorObservations measurements. It can widen the
  // bar but never narrow it below the prior: the probed configurations are the best
  // predicted ones and say nothing of an unprobed outlier.
  double relative_error() const { return relative_error_; }
  static constexpr double kPriorObservations = 3;
  // Candidates skipped as out of memory by the calibrated estimate.
  const std::vector<size_t>& SkippedForMemory() const override { return skipped_for_memory_; }
  const MemoryCalibration& memory_calibration() const { return memory_; }

 private:
  enum class State { kUnprobed, kInFlight, kMeasured, kFailed, kSkipped };
  struct Entry {
    State state = State::kUnprobed;
    bool confirmed = false;      // a confirmation finished or is in flight
    double measured_tflops = 0;  // the latest OK measurement
    double step_time_seconds = 0;
    double relative_standard_error = 0;  // of the mean step time
    double predicted_tflops = 0;         // under params_
    double optimistic_tflops = 0;
  };

  void Refit();
  // The measured candidate with the highest TFLOP/s, or -1.
  int64_t BestMeasured() const;
  // Unprobed candidates, highest prediction first (ties in the planner's order).
  std::vector<size_t> UnprobedByPrediction() const;
  std::vector<Pick> ConfirmationsDue(int64_t best, int64_t slots) const;
  // Skips the unprobed candidates that memory_ puts out of memory.
  void SkipWhatDoesNotFit();
  // Why they were skipped, for the stop reason.
  std::string MemorySkipReason() const;

  const ModelSpec model_;
  const TrainingSpec training_;
  const ClusterSpec cluster_;
  const std::vector<PlannedConfig> candidates_;
  const PerformanceParameters calibrated_;
  // The calibrated fit's own spread for this model and framework (PredictionRelativeError):
  // the floor of relative_error_, and its whole value before two measurements.
  const double prior_relative_error_;
  const AdaptiveOptions options_;
  PerformanceParameters params_;
  double relative_error_ = 0;
  std::vector<Entry> entries_;
  int64_t in_flight_ = 0;
  int64_t confirmations_ = 0;
  std::vector<size_t> skipped_for_memory_;
  MemoryCalibration memory_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_ADAPTIVE_POLICY_H_
