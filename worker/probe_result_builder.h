// The one way a ProbeResult is made of what a backend's run gave (probe_run.h), for every
// backend: the worker's for sim, replay, command and cuda runs (probe_pipeline.h), and
// paratune-probe's when it prints its result for people.
#ifndef PARATUNE_WORKER_PROBE_RESULT_BUILDER_H_
#define PARATUNE_WORKER_PROBE_RESULT_BUILDER_H_

#include <string>

#include "proto/probe.pb.h"
#include "worker/probe/probe_spec.h"
#include "worker/probe_run.h"

namespace paratune {

// The ProbeResult of `run`, a run of `spec`'s probe by the backend named `backend`:
//   - step times: an OK run's full steps, or the full steps extrapolated from its short steps
//     (short_steps.h; the short steps kept, PROBE_INFRA_ERROR when they do not extrapolate),
//     each with the performance model's exposed data-parallel seconds added when the run's
//     data-parallel phase is modelled and the run is not simulated (a REPLICA probe that ran
//     one replica);
//   - throughput from their mean, for the whole configuration even when the probe ran one
//     replica: tokens_per_second = global batch x sequence length / mean step time;
//     model_tflops_per_gpu = ModelFlopsPerStep (DESIGN.md §5.3) / mean step time / the
//     configuration's dp x tp x pp x cp GPUs / 10^12;
//   - labels: `simulated` for a simulated run; `measured` and `modelled` the phases its step
//     times hold (ProbePhaseName; only an OK run with step times timed any), "peak_memory" as
//     it is known and "wall_time" when modelled; `extrapolated` "full_step" for extrapolated
//     steps;
//   - with the cuda probe's measurements: their step statistics, the performance model's
//     predicted step time, the modelled data-parallel seconds and the micro-batches per step;
//   - the message: where the figures come from (measured, simulated, or a replay), the run's
//     detail, the steps (mean, how many, how extrapolated, TFLOP/s per GPU, their spread when
//     measured), the run's notes, peak memory, a modelled wall time and how, and what a
//     replica-scope probe left out; a failed run's detail and the same figures.
// wall_seconds is the run's modelled wall time, else `measured_wall_seconds`; startup_seconds
// the run's. Pure.
v1::ProbeResult BuildProbeResult(const ProbeSpec& spec, const std::string& backend,
                                 const ProbeRun& run, double measured_wall_seconds);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_RESULT_BUILDER_H_
