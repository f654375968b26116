#include "worker/step_metrics.h"

#include <numeric>

#include "estimator/performance_model.h"

namespace paratune {

void SetStepTimes(const ProbeSpecs& specs, const std::vector<double>& step_times_seconds,
                  v1::ProbeResult& result) {
  result.clear_step_times_seconds();
  for (double t : step_times_seconds) result.add_step_times_seconds(t);
  const double mean = std::accumulate(step_times_seconds.begin(), step_times_seconds.end(), 0.0) /
                      static_cast<double>(step_times_seconds.size());
  result.set_mean_step_time_seconds(mean);
  result.set_tokens_per_second(static_cast<double>(specs.training.global_batch_size()) *
                               static_cast<double>(specs.training.seq_len()) / mean);
  result.set_model_tflops_per_gpu(ModelFlopsPerStep(specs.model, specs.training) /
                                  (mean * static_cast<double>(ConfigurationGpus(specs.config))) /
                                  1e12);
}

const std::vector<const char*>& TrainingStepParts() {
  static const std::vector<const char*>* const parts = new std::vector<const char*>{
      "compute",        "tp_collectives",  "cp_collectives", "dp_collectives",
      "pp_collectives", "pipeline_bubble", "optimizer"};
  return *parts;
}

}  // namespace paratune
