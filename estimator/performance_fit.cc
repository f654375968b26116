#include "estimator/performance_fit.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "estimator/performance_model.h"

namespace paratune {
namespace {

// Position of a value in the field's search unit, and back.
double ToUnit(const FittedField& field, double value) {
  return field.log_scale ? std::log(value) : value / (field.upper - field.lower);
}

double FromUnit(const FittedField& field, double unit) {
  const double value = field.log_scale ? std::exp(unit) : unit * (field.upper - field.lower);
  return std::clamp(value, field.lower, field.upper);
}

bool FiniteAndPositive(double value) { return std::isfinite(value) && value > 0; }

absl::Status ValidateFitInput(const std::vector<PerformanceObservation>& observations,
                              const FitOptions& options) {
  for (size_t i = 0; i < observations.size(); ++i) {
    if (!FiniteAndPositive(observations[i].step_time_seconds)) {
      return absl::InvalidArgumentError(absl::StrCat("observations[", i, "].step_time_seconds (",
                                                     observations[i].step_time_seconds,
                                                     ") must be a finite number > 0"));
    }
    if (!FiniteAndPositive(observations[i].weight)) {
      return absl::InvalidArgumentError(absl::StrCat("observations[", i, "].weight (",
                                                     observations[i].weight,
                                                     ") must be a finite number > 0"));
    }
  }
  if (!(std::isfinite(options.prior_weight) && options.prior_weight >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat("options.prior_weight (", options.prior_weight,
                                                   ") must be a finite number >= 0"));
  }
  if (!FiniteAndPositive(options.final_step) || !(options.initial_step >= options.final_step) ||
      !std::isfinite(options.initial_step)) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.initial_step (", options.initial_step, ") and options.final_step (",
                     options.final_step, ") must be finite with initial_step >= final_step > 0"));
  }
  if (options.max_sweeps < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.max_sweeps (", options.max_sweeps, ") must be >= 1"));
  }
  return absl::OkStatus();
}

// The objective of FitOptions, and the sums it is made of.
class Objective {
 public:
  Objective(const std::vector<PerformanceObservation>& observations,
            const std::vector<FittedField>& fields, const PerformanceParameters& start,
            double prior_weight)
      : observations_(observations), fields_(fields), start_(start), prior_weight_(prior_weight) {
    for (const PerformanceObservation& observation : observations)
      total_weight_ += observation.weight;
  }

  double WeightedSquaredLogError(const PerformanceParameters& params) const {
    double sum = 0;
    for (const PerformanceObservation& o : observations_) {
      const double predicted =
          PredictPerformance(o.model, o.training, o.cluster, o.config, params).step_time_seconds;
      const double error = std::log(predicted / o.step_time_seconds);
      sum += o.weight * error * error;
    }
    return sum;
  }

  double operator()(const PerformanceParameters& params) {
    ++evaluations_;
    double prior = 0;
    if (prior_weight_ > 0) {
      for (const FittedField& field : fields_) {
        const double distance =
            ToUnit(field, params.*field.field) - ToUnit(field, start_.*field.field);
        prior += distance * distance;
      }
    }
    return (WeightedSquaredLogError(params) + prior_weight_ * prior) / total_weight_;
  }

  double total_weight() const { return total_weight_; }
  int evaluations() const { return evaluations_; }

 private:
  const std::vector<PerformanceObservation>& observations_;
  const std::vector<FittedField>& fields_;
  const PerformanceParameters& start_;
  const double prior_weight_;
  double total_weight_ = 0;
  int evaluations_ = 0;
};

// FitOptions::fields, or its default for `observations`.
std::vector<FittedField> FieldsToFit(const std::vector<PerformanceObservation>& observations,
                                     const FitOptions& options) {
  if (!options.fields.empty()) return options.fields;
  std::vector<FittedField> fields = FittedFields();
  bool fp8 = false;
  bool moe = false;
  bool flex = false;
  for (const PerformanceObservation& observation : observations) {
    fp8 = fp8 || observation.training.fp8();
    moe = moe || observation.model.is_moe();
    flex = flex || (observation.model.is_moe() &&
                    IsFlexDispatcher(observation.training.moe_token_dispatcher()));
  }
  if (fp8) fields.insert(fields.end(), Fp8FittedFields().begin(), Fp8FittedFields().end());
  if (moe) fields.insert(fields.end(), MoeFittedFields().begin(), MoeFittedFields().end());
  if (flex) fields.insert(fields.end(), FlexFittedFields().begin(), FlexFittedFields().end());
  return fields;
}

}  // namespace

const std::vector<FittedField>& Fp8FittedFields() {
  static const std::vector<FittedField>* const fields = new std::vector<FittedField>{
      {"fp8_gemm_efficiency_max", &PerformanceParameters::fp8_gemm_efficiency_max, 0.2, 1.0, false},
      {"fp8_gemm_half_efficiency_flops", &PerformanceParameters::fp8_gemm_half_efficiency_flops,
       1e7, 1e13, true},
      {"fp8_cast_hbm_efficiency", &PerformanceParameters::fp8_cast_hbm_efficiency, 0.2, 1.0, false},
  };
  return *fields;
}

const std::vector<FittedField>& MoeFittedFields() {
  static const std::vector<FittedField>* const fields = new std::vector<FittedField>{
      {"grouped_gemm_half_efficiency_tokens",
       &PerformanceParameters::grouped_gemm_half_efficiency_tokens, 8, 65536, true},
      {"all_to_all_network_efficiency", &PerformanceParameters::all_to_all_network_efficiency, 0.05,
       1.0, false},
      {"ep_comm_overlap", &PerformanceParameters::ep_comm_overlap, 0, 0.95, false},
  };
  return *fields;
}

const std::vector<FittedField>& FlexFittedFields() {
  static const std::vector<FittedField>* const fields = new std::vector<FittedField>{
      {"flex_link_efficiency", &PerformanceParameters::flex_link_efficiency, 0.05, 1.0, false},
  };
  return *fields;
}

const std::vector<FittedField>& TorchTitanFittedFields() {
  static const std::vector<FittedField>* const fields = new std::vector<FittedField>{
      {"torchtitan_eager_compute_efficiency",
       &PerformanceParameters::torchtitan_eager_compute_efficiency, 0.2, 1.0, false},
      {"torchtitan_compiled_compute_efficiency",
       &PerformanceParameters::torchtitan_compiled_compute_efficiency, 0.2, 1.0, false},
      {"torchtitan_attention_efficiency", &PerformanceParameters::torchtitan_attention_efficiency,
       0.2, 2.0, false},
  };
  return *fields;
}

const std::vector<FittedField>& FittedFields() {
  static const std::vector<FittedField>* const fields = new std::vector<FittedField>{
      {"gemm_efficiency_max", &PerformanceParameters::gemm_efficiency_max, 0.2, 1.0, false},
      {"gemm_half_efficiency_flops", &PerformanceParameters::gemm_half_efficiency_flops, 1e7, 1e12,
       true},
      {"attention_efficiency", &PerformanceParameters::attention_efficiency, 0.1, 1.0, false},
      {"unfused_attention_efficiency", &PerformanceParameters::unfused_attention_efficiency, 0.02,
       1.0, false},
      {"layer_overhead_seconds", &PerformanceParameters::layer_overhead_seconds, 0, 2e-3, false},
      {"network_efficiency", &PerformanceParameters::network_efficiency, 0.2, 1.0, false},
      {"tp_overlap", &PerformanceParameters::tp_overlap, 0, 0.95, false},
      {"cp_overlap", &PerformanceParameters::cp_overlap, 0, 0.95, false},
      {"dp_overlap", &PerformanceParameters::dp_overlap, 0, 0.95, false},
      {"pp_overlap", &PerformanceParameters::pp_overlap, 0, 0.95, false},
  };
  return *fields;
}

FitOptions SearchRefitOptions() {
  FitOptions options;
  options.prior_weight = 0.25;
  options.initial_step = 0.05;
  options.final_step = 1e-3;
  options.max_sweeps = 100;
  return options;
}

double MeanSquaredLogError(const std::vector<PerformanceObservation>& observations,
                           const PerformanceParameters& params) {
  Objective objective(observations, {}, params, 0);
  return observations.empty() ? 0 : objective(params);
}

absl::StatusOr<FitResult> FitPerformanceParameters(
    const std::vector<PerformanceObservation>& observations, const PerformanceParameters& start,
    const FitOptions& options) {
  absl::Status status = ValidateFitInput(observations, options);
  if (!status.ok()) return status;
  const std::vector<FittedField> fields = FieldsToFit(observations, options);
  FitResult result;
  result.params = start;
  for (const FittedField& field : fields) {
    result.params.*field.field = std::clamp(start.*field.field, field.lower, field.upper);
  }
  if (observations.empty()) return result;

  const PerformanceParameters clipped_start = result.params;
  Objective objective(observations, fields, clipped_start, options.prior_weight);
  result.objective_start = objective(result.params);
  double best = result.objective_start;
  double step = options.initial_step;
  while (step >= options.final_step && result.sweeps < options.max_sweeps) {
    ++result.sweeps;
    bool improved = false;
    for (const FittedField& field : fields) {
      const double unit = ToUnit(field, result.params.*field.field);
      for (const double direction : {1.0, -1.0}) {
        PerformanceParameters trial = result.params;
        trial.*field.field = FromUnit(field, unit + direction * step);
        if (trial.*field.field == result.params.*field.field) continue;
        const double value = objective(trial);
        if (value < best) {
          best = value;
          result.params = trial;
          improved = true;
          break;
        }
      }
    }
    if (!improved) step /= 2;
  }
  result.objective_end = best;
  result.evaluations = objective.evaluations();
  result.rms_log_error =
      std::sqrt(objective.WeightedSquaredLogError(result.params) / objective.total_weight());
  return result;
}

}  // namespace paratune
