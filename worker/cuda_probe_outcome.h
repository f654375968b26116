// How a finished paratune-probe process becomes a ProbeRun (docs/probe.md): the probe names its
// own outcomes (OK, OUT_OF_MEMORY, INFRA_ERROR, CRASH) in the report it writes
// (proto/probe_report.proto); a probe that died of a signal, exited with an error or left no
// readable report is a CRASH whose detail carries the end of its stderr.
#ifndef PARATUNE_WORKER_CUDA_PROBE_OUTCOME_H_
#define PARATUNE_WORKER_CUDA_PROBE_OUTCOME_H_

#include <optional>
#include <string>

#include "common/subprocess.h"
#include "worker/probe/probe_spec.h"
#include "worker/probe_run.h"

namespace paratune {

// The run of `spec`'s probe whose process ended as `process` says (one stopped before it ended
// is an INFRA_ERROR: the cuda backend sets no timeout and itself returns CANCELLED for a probe
// it stopped); `report_file` holds the bytes of the report file the probe was told to write,
// nullopt when there is none.
ProbeRun RunFromProbeProcess(const ProbeSpec& spec, const SubprocessResult& process,
                             const std::optional<std::string>& report_file);

// What a probe process that was stopped had done, for the message: "paratune-probe was
// stopped after 12.5s" and the end of its stderr.
std::string DescribeStoppedProbe(const SubprocessResult& process);

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_PROBE_OUTCOME_H_
