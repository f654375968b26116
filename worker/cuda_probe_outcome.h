// How a finished paratune-probe process becomes a ProbeResult (docs/probe.md): the probe
// names its own outcomes (OK, OUT_OF_MEMORY, INFRA_ERROR, CRASH) in its result file; a probe
// that timed out, died of a signal, exited with an error or left no readable result is a
// TIMEOUT or a CRASH whose message carries the end of its stderr.
#ifndef PARATUNE_WORKER_CUDA_PROBE_OUTCOME_H_
#define PARATUNE_WORKER_CUDA_PROBE_OUTCOME_H_

#include <optional>
#include <string>

#include "absl/time/time.h"
#include "common/subprocess.h"
#include "proto/probe.pb.h"

namespace paratune {

// `run` ended other than by cancellation; `result_file` holds the bytes of the result file
// the probe was told to write, nullopt when there is none; `timeout` is the run's limit, for
// the message. The result's wall_seconds is the run's wall time.
v1::ProbeResult ResultFromProbeRun(const SubprocessResult& run, absl::Duration timeout,
                                   const std::optional<std::string>& result_file);

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_PROBE_OUTCOME_H_
