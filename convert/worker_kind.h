// What every worker of a search's probes must be, whatever share of a probe it hosts: of the
// search's GPU type (or, for a custom GPU, of its memory within kGpuMemoryTolerance), offering
// its backend and its launch template. Pure; the server places probes by it
// (server/core/probe_needs.h) and the CLI checks the fleet by it before it submits a search
// (cli/fleet_check.h), so the two cannot disagree on which workers fit.
#ifndef PARATUNE_CONVERT_WORKER_KIND_H_
#define PARATUNE_CONVERT_WORKER_KIND_H_

#include <cstdint>
#include <string>

#include "proto/search.pb.h"
#include "proto/worker.pb.h"

namespace paratune {

struct WorkerKind {
  std::string backend;
  // With backend "command": the launch template the worker must offer; else empty.
  std::string command_template;
  // A catalog name (Worker.gpu_type must equal it), or empty for a custom GPU, whose workers'
  // GPUs must have gpu_memory_bytes.
  std::string gpu_type;
  int64_t gpu_memory_bytes = 0;
};

// The kind a search's spec asks for; a spec not yet normalized gets the backend normalization
// would give it (kDefaultBackend).
WorkerKind WorkerKindOf(const v1::SearchSpec& spec);

// Why `worker` is not of `kind`, for people ("its GPUs are a100-80gb, not h100-80gb"); empty
// when it is. Only what the worker is counts, not whether it is busy, reserved or alive.
std::string WorkerKindMismatch(const v1::Worker& worker, const WorkerKind& kind);

}  // namespace paratune

#endif  // PARATUNE_CONVERT_WORKER_KIND_H_
