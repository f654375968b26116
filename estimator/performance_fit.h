// Fits the global parameters of the performance model to measured step times (DESIGN.md
// §5.3): the dataset fit of tools/fit_performance_model, and the per-search refit the
// scheduler runs after each probe result. Pure: the caller turns its measurements (CSV rows,
// ProbeResults) into PerformanceObservations.
#ifndef PARATUNE_ESTIMATOR_PERFORMANCE_FIT_H_
#define PARATUNE_ESTIMATOR_PERFORMANCE_FIT_H_

#include <vector>

#include "absl/status/statusor.h"
#include "estimator/cluster_spec.h"
#include "estimator/model_spec.h"
#include "estimator/parallel_config.h"
#include "estimator/performance_parameters.h"
#include "estimator/training_spec.h"

namespace paratune {

// One measured step time of one configuration.
struct PerformanceObservation {
  ModelSpec model;
  TrainingSpec training;
  ClusterSpec cluster;
  ParallelConfig config;
  double step_time_seconds = 0;  // measured wall time of one optimizer step, > 0
  // Relative weight in the fit, > 0. The dataset fit gives each run 1 / (runs in its series)
  // so that a weak-scaling series of one configuration counts as one observation.
  double weight = 1;
};

// One field of PerformanceParameters that the fit changes, with its bounds.
struct FittedField {
  const char* name;
  double PerformanceParameters::*field;
  double lower;
  double upper;
  // Searched in log units (scale parameters) rather than as a fraction of [lower, upper].
  bool log_scale;
};

// The fitted fields in the order the fit visits them. The others (NVLink efficiency,
// latencies, optimizer HBM efficiency) are fixed: the tables cannot tell them apart from the
// fitted ones. Only bf16 runs' fields: fp8 runs have their own (Fp8FittedFields).
const std::vector<FittedField>& FittedFields();

// The fields only fp8 runs depend on (PerformanceParameters::fp8_*): the fp8 GEMM efficiency
// and the HBM efficiency of the fp8 casts. tools/fit_performance_model fits them to fp8 runs
// with the bf16 fields fixed, so that bf16 predictions do not depend on fp8 data.
const std::vector<FittedField>& Fp8FittedFields();

// The fields only mixture-of-experts runs depend on: the grouped GEMM's efficiency curve over
// tokens per expert, the all-to-all's network efficiency and the share of it that
// --overlap-moe-expert-parallel-comm hides. tools/fit_performance_model fits them to MoE runs
// with every other field fixed, so that no dense prediction depends on MoE data. The others
// (moe_hbm_efficiency, expert_load_imbalance) keep their priors: the runs cannot tell them
// apart from the fitted ones.
const std::vector<FittedField>& MoeFittedFields();

// The field only runs of the flex dispatcher depend on (PerformanceParameters::
// flex_link_efficiency). tools/fit_performance_model fits it to the flex runs with every other
// field fixed, so that no all-to-all or dense prediction depends on them.
const std::vector<FittedField>& FlexFittedFields();

// The fields only TorchTitan runs depend on (PerformanceParameters::
// torchtitan_eager_compute_efficiency and torchtitan_compiled_compute_efficiency).
// tools/fit_performance_model fits them to TorchTitan's benchmark with every other field
// fixed, so that no Megatron-LM prediction depends on them. A search's refit leaves them
// (FitOptions::fields).
const std::vector<FittedField>& TorchTitanFittedFields();

struct FitOptions {
  // Weight of the pull toward the start parameters: the fit minimises
  //   [sum_i w_i log(predicted_i / measured_i)^2 + prior_weight sum_f d_f^2] / sum_i w_i,
  // d_f being field f's distance from its start value in search units (log units, or the
  // fraction of its range). This is the MAP estimate under log-normal measurement noise of
  // sigma and a normal prior of width tau per field when prior_weight = (sigma / tau)^2.
  // 0 (the dataset fit) lets the data alone decide.
  double prior_weight = 0;
  // Coordinate-descent step in search units: it starts at initial_step, halves after a sweep
  // over the fields that improves nothing, and the fit stops below final_step or after
  // max_sweeps sweeps.
  double initial_step = 0.25;
  double final_step = 1e-4;
  int max_sweeps = 500;
  // The fields the fit changes, in the order it visits them. Empty: FittedFields(), followed
  // by Fp8FittedFields() when an observation trains in fp8, MoeFittedFields() when one
  // trains a mixture-of-experts model and FlexFittedFields() when one dispatches with flex (a
  // search's own probes refit the fields they depend
  // on; the others stay where they are). Never TorchTitanFittedFields(): the dense fields
  // a TorchTitan search's probes refit already scale its compute, and the two together
  // would be one direction the probes cannot tell apart.
  std::vector<FittedField> fields;
};

// Options for refitting calibrated parameters to one search's own probes: a prior of
// (sigma 0.05 / tau 0.1)^2 = 0.25, so one or two observations move the parameters only as far
// as they are evidence for, and small steps (the start is already close).
FitOptions SearchRefitOptions();

struct FitResult {
  PerformanceParameters params;  // the start with the fitted fields replaced
  double objective_start = 0;    // the minimised objective at the start parameters
  double objective_end = 0;      // and at params
  double rms_log_error = 0;      // weighted RMS of log(predicted / measured) at params
  int sweeps = 0;
  int evaluations = 0;  // objective evaluations, each one prediction per observation
};

// Weighted mean of log(predicted / measured step time)^2 over `observations` with `params`;
// 0 when there are none. The observations must be valid (see FitPerformanceParameters).
double MeanSquaredLogError(const std::vector<PerformanceObservation>& observations,
                           const PerformanceParameters& params);

// Deterministic coordinate descent from `start` (clipped into the fitted fields' bounds):
// each fitted field (FitOptions::fields) in turn moves by +-step when that lowers the
// objective of FitOptions. With no observations
// the result is `start`. INVALID_ARGUMENT naming the entry ("observations[3].step_time_seconds
// (0) must be a finite number > 0") for a step time or weight that is not finite and > 0, or
// options out of range. Allocates nothing per evaluation: about 100 ns per observation and
// evaluation on one core (figures in docs/estimator.md).
absl::StatusOr<FitResult> FitPerformanceParameters(
    const std::vector<PerformanceObservation>& observations, const PerformanceParameters& start,
    const FitOptions& options = FitOptions());

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_PERFORMANCE_FIT_H_
