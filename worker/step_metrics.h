// A probe's throughput figures from its step times, computed one way for every backend.
#ifndef PARATUNE_WORKER_STEP_METRICS_H_
#define PARATUNE_WORKER_STEP_METRICS_H_

#include <vector>

#include "proto/probe.pb.h"
#include "worker/probe_specs.h"

namespace paratune {

// Sets result.step_times_seconds to `step_times_seconds` (non-empty, each > 0) and derives
// from their mean: mean_step_time_seconds; tokens_per_second = global batch x sequence length
// / mean; model_tflops_per_gpu = ModelFlopsPerStep (DESIGN.md §5.3) / mean / the
// configuration's GPUs / 1e12. The figures are the whole configuration's even for a
// replica-scope probe, whose steps stand for the full configuration's.
void SetStepTimes(const ProbeSpecs& specs, const std::vector<double>& step_times_seconds,
                  v1::ProbeResult& result);

// The parts of a training step that a whole training run exercises, for ProbeResult.measured
// (a real run) or ProbeResult.modelled (a simulation): "compute", "tp_collectives",
// "cp_collectives", "dp_collectives", "pp_collectives", "pipeline_bubble", "optimizer".
const std::vector<const char*>& TrainingStepParts();

}  // namespace paratune

#endif  // PARATUNE_WORKER_STEP_METRICS_H_
