// The `cuda` backend (DESIGN.md §8, docs/probe.md): runs each probe as a paratune-probe
// process on the assignment's GPUs until it ends or the worker tells it to stop, and relays
// the NCCL unique id between the members of a gang. The process
// boundary keeps a crash, hang or out-of-memory of a probe away from the daemon, and gives
// every probe clean GPUs. The worker itself links no CUDA.
#ifndef PARATUNE_WORKER_CUDA_BACKEND_H_
#define PARATUNE_WORKER_CUDA_BACKEND_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/worker.pb.h"
#include "worker/probe_backend.h"

namespace paratune {

// Thread-safe (no mutable state); probes of one daemon run one at a time anyway.
class CudaBackend : public ProbeBackend {
 public:
  struct Options {
    // Path of the paratune-probe executable.
    std::string probe_binary;
    // Where each probe gets a fresh directory for its assignment, report and NCCL id files;
    // removed when the probe ends.
    std::string scratch_directory = "/tmp";
    // Set in the probe's environment (it inherits the worker's), e.g. LD_LIBRARY_PATH to
    // NCCL, NCCL_SOCKET_IFNAME.
    std::map<std::string, std::string> environment;
    // Time a stopped probe gets between SIGTERM and SIGKILL; the worker tells a probe to stop
    // this long before its deadline (StopGrace).
    absl::Duration kill_grace = absl::Seconds(5);
  };

  explicit CudaBackend(Options options) : options_(std::move(options)) {}

  std::string Name() const override { return "cuda"; }
  bool Deterministic() const override { return false; }
  // Options.kill_grace.
  absl::Duration StopGrace(const ProbeSpec& spec) const override { return options_.kill_grace; }

  // INVALID_ARGUMENT naming the field for a probe paratune-probe cannot run
  // (CheckCudaProbeRuns), before any process starts. CANCELLED when told to stop first or
  // while the probe runs (it is stopped; the message ends with its stderr). UNAVAILABLE when
  // paratune-probe cannot be started or the scratch directory not written; the rendezvous'
  // error when the gang's token cannot be exchanged. Otherwise the run of the probe's own
  // report, or a CRASH (cuda_probe_outcome.h). Gang members other than gang[0] wait for
  // gang[0]'s NCCL id (ProbeContext::Rendezvous) before starting the probe; gang[0] publishes
  // the id as soon as its probe has written it.
  absl::StatusOr<ProbeRun> Run(const ProbeSpec& spec, ProbeContext& context) override;

 private:
  const Options options_;
};

// The GPUs of this machine as `probe_binary --list_gpus` lists them. NOT_FOUND when the
// binary cannot be started; UNAVAILABLE with the probe's stderr when it finds no usable GPU;
// INTERNAL when its output is not a GPU list; DEADLINE_EXCEEDED after `timeout`.
absl::StatusOr<std::vector<v1::Gpu>> ListProbeGpus(const std::string& probe_binary,
                                                   absl::Duration timeout);

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_BACKEND_H_
