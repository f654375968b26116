#include "estimator/short_probe.h"

#include <cstddef>

#include "absl/strings/str_cat.h"

namespace paratune {

ShortProbePlan PlanShortProbe(const ParallelConfig& config, const TrainingSpec& training) {
  ShortProbePlan plan;
  plan.full_micro_batches = config.NumMicroBatches(training);
  const int64_t low = 2 * config.pp();
  const int64_t high = 4 * config.pp();
  if (plan.full_micro_batches > high) plan.micro_batch_counts = {low, high};
  return plan;
}

double PredictedStepSeconds(const PerformanceEstimate& full, int64_t full_micro_batches,
                            int64_t micro_batches) {
  const double per_micro_batch = full.compute_seconds + full.tp_communication_seconds +
                                 full.cp_communication_seconds + full.ep_communication_seconds +
                                 full.pp_communication_seconds;
  const double per_step =
      full.pipeline_bubble_seconds + full.dp_communication_seconds + full.optimizer_seconds;
  return per_micro_batch * static_cast<double>(micro_batches) /
             static_cast<double>(full_micro_batches) +
         per_step;
}

double PredictedProbeSeconds(const PerformanceEstimate& full, const ShortProbePlan& plan,
                             const ProbeSteps& steps) {
  const auto warmup = static_cast<double>(steps.warmup_steps);
  const auto timed = static_cast<double>(steps.timed_steps);
  if (!steps.short_steps || plan.micro_batch_counts.empty()) {
    return steps.startup_seconds + (warmup + timed) * full.step_time_seconds;
  }
  const auto step_seconds = [&](int64_t micro_batches) {
    return PredictedStepSeconds(full, plan.full_micro_batches, micro_batches);
  };
  if (steps.launch_per_count) {
    double seconds = 0;
    for (int64_t micro_batches : plan.micro_batch_counts) {
      seconds += steps.startup_seconds + (warmup + timed) * step_seconds(micro_batches);
    }
    return seconds;
  }
  double seconds = steps.startup_seconds + warmup * step_seconds(plan.micro_batch_counts.front());
  for (int64_t micro_batches : plan.micro_batch_counts) {
    seconds += timed * step_seconds(micro_batches);
  }
  return seconds;
}

ShortProbePlan PlanProbeSteps(const ShortProbePlan& plan, const PerformanceEstimate& full,
                              const ProbeSteps& steps) {
  const ShortProbePlan full_steps{plan.full_micro_batches, {}};
  if (!steps.short_steps || plan.micro_batch_counts.empty()) return full_steps;
  return PredictedProbeSeconds(full, plan, steps) < PredictedProbeSeconds(full, full_steps, steps)
             ? plan
             : full_steps;
}

namespace {

struct Line {
  double slope = 0;
  double intercept = 0;
};

// Ordinary least squares through (x_i, y_i); requires two distinct x.
Line FitLine(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double sum_x = 0, sum_y = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sum_x += x[i];
    sum_y += y[i];
  }
  const double mean_x = sum_x / n;
  const double mean_y = sum_y / n;
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mean_x) * (x[i] - mean_x);
    sxy += (x[i] - mean_x) * (y[i] - mean_y);
  }
  Line line;
  line.slope = sxy / sxx;
  line.intercept = mean_y - line.slope * mean_x;
  return line;
}

}  // namespace

absl::StatusOr<StepExtrapolation> ExtrapolateFullStep(const std::vector<ShortStepSeries>& series,
                                                      int64_t full_micro_batches,
                                                      int64_t pipeline_parallel,
                                                      int64_t virtual_pipeline) {
  if (series.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "short_steps (", series.size(), " series) must hold at least two micro-batch counts"));
  }
  const size_t steps = series[0].step_times_seconds.size();
  for (size_t k = 0; k < series.size(); ++k) {
    const ShortStepSeries& s = series[k];
    if (s.step_times_seconds.empty() || s.step_times_seconds.size() != steps) {
      return absl::InvalidArgumentError(
          absl::StrCat("short_steps[", k, "] (", s.step_times_seconds.size(),
                       " steps) must have as many steps as short_steps[0] (", steps, "), >= 1"));
    }
    if (k > 0 && s.micro_batches == series[0].micro_batches) {
      return absl::InvalidArgumentError(absl::StrCat(
          "short_steps[", k, "].micro_batches (", s.micro_batches, ") repeats short_steps[0]'s"));
    }
    for (size_t i = 0; i < steps; ++i) {
      if (!(s.step_times_seconds[i] > 0)) {
        return absl::InvalidArgumentError(absl::StrCat("short_steps[", k, "].step_times_seconds[",
                                                       i, "] (", s.step_times_seconds[i],
                                                       ") must be > 0"));
      }
    }
  }
  std::vector<double> all_x, all_y;
  for (const ShortStepSeries& s : series) {
    for (double t : s.step_times_seconds) {
      all_x.push_back(static_cast<double>(s.micro_batches));
      all_y.push_back(t);
    }
  }
  const Line fit = FitLine(all_x, all_y);
  if (!(fit.slope > 0)) {
    return absl::OutOfRangeError(
        absl::StrCat("short steps did not grow with their micro-batches (fitted ", fit.slope,
                     " s per micro-batch): the full step cannot be extrapolated from them"));
  }
  StepExtrapolation result;
  result.slot_seconds = fit.slope;
  result.intercept_seconds = fit.intercept;
  result.fill_drain_seconds = static_cast<double>(pipeline_parallel - 1) /
                              static_cast<double>(virtual_pipeline) * fit.slope;
  result.fixed_seconds = fit.intercept - result.fill_drain_seconds;
  const double full = static_cast<double>(full_micro_batches);
  double sum = 0;
  for (size_t i = 0; i < steps; ++i) {
    std::vector<double> x, y;
    for (const ShortStepSeries& s : series) {
      x.push_back(static_cast<double>(s.micro_batches));
      y.push_back(s.step_times_seconds[i]);
    }
    const Line step = FitLine(x, y);
    result.full_step_seconds.push_back(step.intercept + step.slope * full);
    sum += result.full_step_seconds.back();
  }
  result.mean_full_step_seconds = sum / static_cast<double>(steps);
  return result;
}

}  // namespace paratune
