// The short-probe protocol (estimator/short_probe.h) against the sim's ground truth: for every
// candidate of three searches (issue 11's, over a wide space), the full step extrapolated from the
// sim's short steps, as a probe runs them (5 timed steps at 2 pp and 4 pp micro-batches, the sim's
// default 1% per-step noise), compared with the sim's noise-free full step. Prints the table that
// docs/short_probes.md quotes and holds the goal: at most 2% median and 5% worst error.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "estimator/cluster_spec.h"
#include "estimator/model_spec.h"
#include "estimator/performance_model.h"
#include "estimator/performance_parameters.h"
#include "estimator/planner.h"
#include "estimator/short_probe.h"
#include "estimator/training_spec.h"
#include "gtest/gtest.h"
#include "worker/sim_steps.h"

namespace paratune {
namespace {

constexpr int64_t kTimedSteps = 5;
constexpr double kConfigNoiseSigma = 0.05;
constexpr double kStepNoiseSigma = 0.01;

struct Scenario {
  std::string model;
  std::string gpu;
  int64_t nodes = 0;
  int64_t gpus_per_node = 0;
};

struct Errors {
  int64_t candidates = 0;
  int64_t extrapolated = 0;  // the rest ran full steps (few micro-batches)
  double median = 0;
  double worst = 0;
};

Errors Study(const Scenario& scenario) {
  const ModelSpec model = *FindModelPreset(scenario.model);
  const TrainingSpec training = *TrainingSpec::Create({1024, 8192});
  const ClusterSpec cluster =
      *ClusterSpec::Create(*FindGpuPreset(scenario.gpu), scenario.nodes, scenario.gpus_per_node);
  const PerformanceParameters params = DefaultPerformanceParameters(cluster.gpu());
  // A wide space, so that every kind of schedule is in the study: interleaving, recompute,
  // uneven pipeline splits (Llama-3.1-405B's 126 layers need them on pp 8 or 16), and the
  // RISKY candidates (a probe runs them too).
  PlanOptions options;
  options.rules.allow_uneven_pipeline = true;
  options.virtual_pipeline_sizes = {1, 2, 4};
  options.recompute_modes = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  options.include_risky = true;
  absl::StatusOr<Plan> plan = PlanConfigurations(model, training, cluster, options, params);
  EXPECT_TRUE(plan.ok()) << plan.status();
  std::vector<double> errors;
  Errors result;
  for (const PlannedConfig& planned : plan->candidates) {
    ++result.candidates;
    const ShortProbePlan probe = PlanShortProbe(planned.config, training);
    if (probe.micro_batch_counts.empty()) continue;
    SimulatedSteps steps(planned.predicted, probe.full_micro_batches, NoiseSeed(1, planned.config),
                         kConfigNoiseSigma, kStepNoiseSigma);
    std::vector<ShortStepSeries> series;
    for (int64_t m : probe.micro_batch_counts) series.push_back({m, steps.Run(m, kTimedSteps)});
    absl::StatusOr<StepExtrapolation> extrapolated = ExtrapolateFullStep(
        series, probe.full_micro_batches, planned.config.pp(), planned.config.virtual_pipeline());
    EXPECT_TRUE(extrapolated.ok()) << planned.config.ToString() << ": " << extrapolated.status();
    if (!extrapolated.ok()) continue;
    const double truth = steps.TrueSeconds(probe.full_micro_batches);
    errors.push_back(std::abs(extrapolated->mean_full_step_seconds / truth - 1));
    ++result.extrapolated;
  }
  std::sort(errors.begin(), errors.end());
  if (!errors.empty()) {
    result.median = errors[errors.size() / 2];
    result.worst = errors.back();
  }
  return result;
}

TEST(SimExtrapolationTest, FullStepsExtrapolatedFromShortStepsMatchTheSimsTruth) {
  std::printf("| search | candidates | extrapolated | median error | worst error |\n");
  std::printf("|---|---:|---:|---:|---:|\n");
  for (const Scenario& scenario :
       {Scenario{"llama3.1-8b", "h100-94gb", 4, 4}, Scenario{"llama3.1-70b", "h100-80gb", 8, 8},
        Scenario{"llama3.1-405b", "h100-80gb", 128, 8}}) {
    const Errors errors = Study(scenario);
    std::printf(
        "| %s on %lld x %lld %s | %lld | %lld | %.2f%% | %.2f%% |\n", scenario.model.c_str(),
        static_cast<long long>(scenario.nodes), static_cast<long long>(scenario.gpus_per_node),
        scenario.gpu.c_str(), static_cast<long long>(errors.candidates),
        static_cast<long long>(errors.extrapolated), 100 * errors.median, 100 * errors.worst);
    EXPECT_GT(errors.extrapolated, 0) << scenario.model;
    EXPECT_LE(errors.median, 0.02) << scenario.model;
    EXPECT_LE(errors.worst, 0.05) << scenario.model;
  }
}

}  // namespace
}  // namespace paratune
