// paratune-worker: the worker daemon. Flags are parsed here only; everything else is in
// worker/worker_daemon.h.
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "estimator/cluster_spec.h"
#include "worker/cuda_backend.h"
#include "worker/log.h"
#include "worker/sim_backend.h"
#include "worker/worker_daemon.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "host:port of paratune-server.");
ABSL_FLAG(std::string, backend, "sim",
          "Comma-separated probe backends this worker offers. Available in this build: sim "
          "(the performance model with seeded noise; results are labelled simulated) and "
          "cuda (real training probes: paratune-probe, see --probe_binary, on this machine's "
          "GPUs). replay and command arrive with later issues.");
ABSL_FLAG(int64_t, sim_gpus, 8,
          "Number of GPUs the worker reports (1 to 64) when it does not offer cuda. The sim "
          "backend needs no real GPUs; the scheduler still only leases it probes whose tensor "
          "x pipeline x context parallel GPUs fit in this count. With cuda the worker reports "
          "the real GPUs that paratune-probe --list_gpus finds.");
ABSL_FLAG(std::string, probe_binary, "",
          "Path of the paratune-probe executable (bazel-bin/worker/cuda/paratune-probe), "
          "required with --backend=cuda. It needs libcublasLt.so.13 and libnccl.so.2: under "
          "/usr/local/cuda/lib64 or on LD_LIBRARY_PATH, which it inherits (docs/probe.md).");
ABSL_FLAG(std::string, probe_scratch_dir, "/tmp",
          "Where the cuda backend gives each probe a directory for its assignment, result and "
          "NCCL id files (removed when the probe ends).");
ABSL_FLAG(std::string, sim_gpu_type, "h100-80gb",
          "Catalog GPU type of the reported GPUs (a100-40gb, a100-80gb, h100-80gb, "
          "h100-94gb, h200-141gb). They are named \"simulated <TYPE>\" with the catalog "
          "memory.");
ABSL_FLAG(std::string, hostname, "",
          "Hostname to register with; empty means this machine's hostname.");
ABSL_FLAG(std::string, labels, "",
          "Comma-separated key=value labels to register with, e.g. rack=a1,pool=dev "
          "(at most 32).");
ABSL_FLAG(double, sim_probe_seconds, 0.2,
          "Wall time each sim probe takes (it is cancellable), so progress is visible; 0 "
          "answers at once.");

namespace paratune {
namespace {

// paratune-probe --list_gpus starts the CUDA runtime once; a minute covers a slow driver.
constexpr absl::Duration kListGpusTimeout = absl::Seconds(60);

constexpr char kUsage[] =
    "the paratune worker daemon.\n"
    "\n"
    "Registers with paratune-server, heartbeats, long-polls for probes, runs each with the "
    "requested backend under the probe's deadline and reports the result. A failing probe "
    "never takes the daemon down. Logs are one line per event on stderr (logfmt). SIGINT "
    "or SIGTERM stop it gracefully (a running probe is handed back to the server).\n"
    "\n"
    "With --backend=cuda the worker registers the GPUs that paratune-probe --list_gpus "
    "finds and runs each probe as a paratune-probe process on the GPUs the scheduler "
    "assigned, killed at the probe's deadline; for probes spanning several workers it "
    "relays the NCCL unique id through the scheduler.\n"
    "\n"
    "Usage: paratune-worker [--server=127.0.0.1:50051] [--backend=sim|cuda|sim,cuda]\n"
    "                       [--sim_gpus=8] [--sim_gpu_type=h100-80gb] [--sim_probe_seconds=0.2]\n"
    "                       [--probe_binary=PATH] [--probe_scratch_dir=/tmp]\n"
    "                       [--hostname=NAME] [--labels=k=v,...]\n";

absl::StatusOr<std::map<std::string, std::string>> ParseLabels(absl::string_view text) {
  std::map<std::string, std::string> labels;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (kv.first.empty() || !absl::StrContains(item, '=')) {
      return absl::InvalidArgumentError(
          absl::StrCat("--labels item (\"", item, "\") must be key=value"));
    }
    labels[kv.first] = kv.second;
  }
  return labels;
}

absl::StatusOr<WorkerDaemon::Options> OptionsFromFlags() {
  WorkerDaemon::Options options;
  options.server_address = absl::GetFlag(FLAGS_server);
  const double probe_seconds = absl::GetFlag(FLAGS_sim_probe_seconds);
  if (!std::isfinite(probe_seconds) || probe_seconds < 0 || probe_seconds > 3600) {
    return absl::InvalidArgumentError(
        absl::StrCat("--sim_probe_seconds (", probe_seconds, ") must be in [0, 3600]"));
  }
  bool cuda = false;
  for (absl::string_view name :
       absl::StrSplit(absl::GetFlag(FLAGS_backend), ',', absl::SkipEmpty())) {
    if (name == "sim") {
      SimBackend::Options sim;
      sim.probe_time = absl::Seconds(probe_seconds);
      options.backends.push_back(std::make_unique<SimBackend>(sim));
    } else if (name == "cuda") {
      CudaBackend::Options probe;
      probe.probe_binary = absl::GetFlag(FLAGS_probe_binary);
      probe.scratch_directory = absl::GetFlag(FLAGS_probe_scratch_dir);
      if (probe.probe_binary.empty()) {
        return absl::InvalidArgumentError(
            "--probe_binary (\"\") must name paratune-probe when --backend offers cuda");
      }
      options.backends.push_back(std::make_unique<CudaBackend>(probe));
      cuda = true;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--backend (\"", name,
                       "\") is not available in this build; sim and cuda are (replay and "
                       "command arrive with later issues)"));
    }
  }
  if (cuda) {
    // The daemon links no CUDA: the probe lists the GPUs it will run on.
    absl::StatusOr<std::vector<v1::Gpu>> gpus =
        ListProbeGpus(absl::GetFlag(FLAGS_probe_binary), kListGpusTimeout);
    if (!gpus.ok()) {
      return absl::Status(gpus.status().code(),
                          absl::StrCat("--backend=cuda: ", gpus.status().message()));
    }
    options.gpus = *std::move(gpus);
  } else {
    const int64_t gpu_count = absl::GetFlag(FLAGS_sim_gpus);
    if (gpu_count < 1 || gpu_count > 64) {
      return absl::InvalidArgumentError(
          absl::StrCat("--sim_gpus (", gpu_count, ") must be in [1, 64]"));
    }
    absl::StatusOr<GpuSpec> gpu_type = FindGpuPreset(absl::GetFlag(FLAGS_sim_gpu_type));
    if (!gpu_type.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--sim_gpu_type: ", gpu_type.status().message()));
    }
    for (int64_t i = 0; i < gpu_count; ++i) {
      v1::Gpu& gpu = options.gpus.emplace_back();
      gpu.set_index(i);
      gpu.set_name(absl::StrCat("simulated ", absl::AsciiStrToUpper(gpu_type->name)));
      gpu.set_memory_bytes(gpu_type->memory_bytes);
    }
  }
  options.hostname = absl::GetFlag(FLAGS_hostname);
  if (options.hostname.empty()) {
    char hostname[256] = {};
    if (gethostname(hostname, sizeof(hostname) - 1) != 0) {
      return absl::UnavailableError("cannot read this machine's hostname; pass --hostname");
    }
    options.hostname = hostname;
  }
  absl::StatusOr<std::map<std::string, std::string>> labels =
      ParseLabels(absl::GetFlag(FLAGS_labels));
  if (!labels.ok()) return labels.status();
  options.labels = *std::move(labels);
  return options;
}

int Main() {
  SetLogComponent("paratune-worker");
  // Shutdown signals are blocked in every thread (gRPC's threads inherit the mask) and taken
  // synchronously with sigwait below: no work in a signal handler.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<WorkerDaemon::Options> options = OptionsFromFlags();
  if (!options.ok()) {
    Log(LogLevel::kError, "bad flags", {{"error", options.status().ToString()}});
    return 2;
  }
  absl::StatusOr<std::unique_ptr<WorkerDaemon>> daemon = WorkerDaemon::Start(*std::move(options));
  if (!daemon.ok()) {
    Log(LogLevel::kError, "cannot start", {{"error", daemon.status().ToString()}});
    return 1;
  }
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  Log(LogLevel::kInfo, "shutting down", {{"signal", strsignal(signal_number)}});
  (*daemon)->Stop();
  return 0;
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(paratune::kUsage);
  // --help lists the flags of this file (absl's default matches files named after the
  // binary, which Bazel's paths are not).
  absl::FlagsUsageConfig usage_config;
  usage_config.contains_help_flags = [](absl::string_view path) {
    return absl::EndsWith(path, "worker/worker_main.cc");
  };
  usage_config.contains_helpshort_flags = usage_config.contains_help_flags;
  absl::SetFlagsUsageConfig(usage_config);
  const std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() > 1) {
    std::fprintf(stderr, "paratune-worker takes no positional arguments (got \"%s\"); see --help\n",
                 positional[1]);
    return 2;
  }
  return paratune::Main();
}
