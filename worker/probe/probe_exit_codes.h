// How paratune-probe's exit status is read (docs/probe.md): the probe writes a ProbeResult
// for every outcome it can name itself, out-of-memory and missing GPUs included, and says
// with its exit status whether it did.
#ifndef PARATUNE_WORKER_PROBE_PROBE_EXIT_CODES_H_
#define PARATUNE_WORKER_PROBE_PROBE_EXIT_CODES_H_

namespace paratune {

// The result file holds a ProbeResult (any outcome), or --list_gpus printed the GPUs.
inline constexpr int kProbeExitResultWritten = 0;
// The probe failed and could not write its result; stderr says why.
inline constexpr int kProbeExitNoResult = 1;
// Bad flags or an assignment the probe rejects; stderr names the flag or field.
inline constexpr int kProbeExitUsage = 2;
// --list_gpus found no usable GPU (no device, no driver); stderr has the CUDA error.
inline constexpr int kProbeExitNoGpu = 3;

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_PROBE_EXIT_CODES_H_
