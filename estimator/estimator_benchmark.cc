// The estimator's inner loop (DESIGN.md §5.4): millions of configurations per second on one
// core, and a whole 405B plan on 16,384 GPUs well under a second.
#include "benchmark/benchmark.h"
#include "estimator/memory_model.h"
#include "estimator/performance_model.h"
#include "estimator/planner.h"

namespace paratune {
namespace {

struct Setup {
  ModelSpec model = *FindModelPreset("llama3.1-70b");
  TrainingSpec training = *TrainingSpec::Create({1024, 8192});
  ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 8, 8);
  ParallelConfig config = *ParallelConfig::Create(model, training, cluster, {}, [] {
    ParallelDims dims;
    dims.dp = 2;
    dims.tp = 8;
    dims.pp = 4;
    return dims;
  }());
};

void BM_EstimateMemory(benchmark::State& state) {
  const Setup setup;
  const MemoryOptions options;
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        EstimateMemory(setup.model, setup.training, setup.cluster, setup.config, options));
  }
}
BENCHMARK(BM_EstimateMemory);

void BM_PredictPerformance(benchmark::State& state) {
  const Setup setup;
  const PerformanceParameters params = DefaultPerformanceParameters(setup.cluster.gpu());
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        PredictPerformance(setup.model, setup.training, setup.cluster, setup.config, params));
  }
}
BENCHMARK(BM_PredictPerformance);

void BM_CheckRules(benchmark::State& state) {
  const Setup setup;
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        CheckRules(setup.model, setup.training, setup.cluster, {}, setup.config.dims()));
  }
}
BENCHMARK(BM_CheckRules);

// Every valid configuration: micro-batch 1-16, v in {1, 2, 3, 4, 6, 7, 8}, all three
// recompute modes, uneven pipeline stages (126 layers on pp 4, 8, 16, ...).
void BM_Plan405bOn16384Gpus(benchmark::State& state) {
  const ModelSpec model = *FindModelPreset("llama3.1-405b");
  const TrainingSpec training = *TrainingSpec::Create({2048, 8192});
  const ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 2048, 8);
  const PerformanceParameters params = DefaultPerformanceParameters(cluster.gpu());
  PlanOptions options;
  options.virtual_pipeline_sizes = {1, 2, 3, 4, 6, 7, 8};
  options.recompute_modes = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  options.rules.allow_uneven_pipeline = true;
  options.include_risky = true;
  int64_t valid = 0;
  for (auto _ : state) {
    const absl::StatusOr<Plan> plan = PlanConfigurations(model, training, cluster, options, params);
    valid = plan->counts.valid;
    benchmark::DoNotOptimize(plan);
  }
  state.counters["valid_configs"] = static_cast<double>(valid);
}
BENCHMARK(BM_Plan405bOn16384Gpus)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace paratune
