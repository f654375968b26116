// Fits the performance model's global parameters of one GPU architecture to measured runs.
#ifndef PARATUNE_TOOLS_PERFORMANCE_FIT_H_
#define PARATUNE_TOOLS_PERFORMANCE_FIT_H_

#include <string>
#include <vector>

#include "estimator/performance_parameters.h"
#include "tools/measured_runs.h"

namespace paratune {

// One fitted field of PerformanceParameters with its bounds.
struct FittedField {
  const char* name;
  double PerformanceParameters::*field;
  double lower;
  double upper;
  bool log_scale;  // searched in log space (scale parameters) rather than linearly
};

// The fields the fit changes, in the order it visits them; the others keep their defaults.
std::vector<FittedField> FittedFields();

// Weighted mean of log(predicted / measured step time)^2 over the completed runs. Each
// (dataset, group) has total weight 1, so a weak-scaling series counts as one configuration.
double FitObjective(const std::vector<MeasuredRun>& runs, const PerformanceParameters& params);

struct FitResult {
  PerformanceParameters params;
  double objective_start = 0;
  double objective_end = 0;
  int sweeps = 0;
};

// Deterministic coordinate descent from `start`: each field in turn moves by +-step (log or
// linear units, clipped to its bounds) when that lowers FitObjective; the step halves after a
// sweep without improvement, until it is below 1e-4 of the unit or 500 sweeps have run.
FitResult FitPerformanceParameters(const std::vector<MeasuredRun>& runs,
                                   const PerformanceParameters& start);

}  // namespace paratune

#endif  // PARATUNE_TOOLS_PERFORMANCE_FIT_H_
