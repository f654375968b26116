#include "tools/performance_fit.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "estimator/performance_model.h"

namespace paratune {
namespace {

constexpr double kInitialStep = 0.25;
constexpr double kFinalStep = 1e-4;
constexpr int kMaxSweeps = 500;

// Position of a value in the field's search unit, and back.
double ToUnit(const FittedField& field, double value) {
  return field.log_scale ? std::log(value) : value;
}

double FromUnit(const FittedField& field, double unit) {
  const double value = field.log_scale ? std::exp(unit) : unit;
  return std::clamp(value, field.lower, field.upper);
}

// A linear field moves by step x its range; a log field by step in log units (x1.28 at 0.25).
double StepSize(const FittedField& field, double step) {
  return field.log_scale ? step : step * (field.upper - field.lower);
}

}  // namespace

std::vector<FittedField> FittedFields() {
  return {
      {"gemm_efficiency_max", &PerformanceParameters::gemm_efficiency_max, 0.2, 1.0, false},
      {"gemm_half_efficiency_flops", &PerformanceParameters::gemm_half_efficiency_flops, 1e7,
       1e12, true},
      {"attention_efficiency", &PerformanceParameters::attention_efficiency, 0.1, 1.0, false},
      {"layer_overhead_seconds", &PerformanceParameters::layer_overhead_seconds, 0, 2e-3, false},
      {"network_efficiency", &PerformanceParameters::network_efficiency, 0.2, 1.0, false},
      {"tp_overlap", &PerformanceParameters::tp_overlap, 0, 0.95, false},
      {"cp_overlap", &PerformanceParameters::cp_overlap, 0, 0.95, false},
      {"dp_overlap", &PerformanceParameters::dp_overlap, 0, 0.95, false},
      {"pp_overlap", &PerformanceParameters::pp_overlap, 0, 0.95, false},
  };
}

double FitObjective(const std::vector<MeasuredRun>& runs, const PerformanceParameters& params) {
  std::map<std::pair<std::string, std::string>, int> group_sizes;
  for (const MeasuredRun& run : runs) {
    if (run.completed) ++group_sizes[{run.dataset, run.group}];
  }
  double total = 0;
  double weights = 0;
  for (const MeasuredRun& run : runs) {
    if (!run.completed) continue;
    const double predicted =
        PredictPerformance(run.model, run.training, run.cluster, run.config, params)
            .step_time_seconds;
    const double error = std::log(predicted / run.step_seconds);
    const double weight = 1.0 / group_sizes[{run.dataset, run.group}];
    total += weight * error * error;
    weights += weight;
  }
  return weights > 0 ? total / weights : 0;
}

FitResult FitPerformanceParameters(const std::vector<MeasuredRun>& runs,
                                   const PerformanceParameters& start) {
  const std::vector<FittedField> fields = FittedFields();
  FitResult result;
  result.params = start;
  result.objective_start = FitObjective(runs, start);
  double best = result.objective_start;
  double step = kInitialStep;
  while (step >= kFinalStep && result.sweeps < kMaxSweeps) {
    ++result.sweeps;
    bool improved = false;
    for (const FittedField& field : fields) {
      const double unit = ToUnit(field, result.params.*field.field);
      for (const double direction : {1.0, -1.0}) {
        PerformanceParameters trial = result.params;
        trial.*field.field = FromUnit(field, unit + direction * StepSize(field, step));
        if (trial.*field.field == result.params.*field.field) continue;
        const double objective = FitObjective(runs, trial);
        if (objective < best) {
          best = objective;
          result.params = trial;
          improved = true;
          break;
        }
      }
    }
    if (!improved) step /= 2;
  }
  result.objective_end = best;
  return result;
}

}  // namespace paratune
