// paratune-worker: the worker daemon. Flags are parsed here only; everything else is in
// worker/worker_daemon.h.
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/command_line.h"
#include "common/health_server.h"
#include "common/hostname.h"
#include "common/log.h"
#include "common/shutdown_signals.h"
#include "common/status_macros.h"
#include "estimator/cluster_spec.h"
#include "metrics/http_exporter.h"
#include "metrics/metrics_endpoint.h"
#include "metrics/registry.h"
#include "proto/worker.pb.h"
#include "proto/worker_config.pb.h"
#include "worker/command_backend.h"
#include "worker/cuda_backend.h"
#include "worker/replay_backend.h"
#include "worker/sim_backend.h"
#include "worker/worker_config.h"
#include "worker/worker_daemon.h"
#include "worker/worker_metrics.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "host:port of paratune-server.");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM file of the CA that signed paratune-server's certificate; dials the server with "
          "TLS when set (required by --tls_cert and --token_file). The certificate must name "
          "the host of --server.");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM file of this worker's certificate chain, for a server that requires client "
          "certificates (its --tls_client_ca). With --tls_key.");
ABSL_FLAG(std::string, tls_key, "",
          "PEM file of the private key of --tls_cert, unencrypted; keep it readable by the "
          "worker's user only.");
ABSL_FLAG(std::string, token_file, "",
          "File holding this worker's bearer token (a worker or admin token of the server's "
          "--token_file) alone on one line; sent with every call. A file rather than a flag, "
          "so that the token never shows in `ps`. Needs --tls_ca. Not needed when the "
          "server's --token_file binds this worker's certificate (cert:COMMON_NAME).");
ABSL_FLAG(std::string, backend, "sim",
          "Comma-separated probe backends this worker offers: sim (the performance model "
          "with seeded noise; results are labelled simulated), replay (answers from the "
          "measured runs of --config's replay tables; a configuration nobody measured is "
          "NOT_MEASURED, never invented), command (runs --config's launch templates, e.g. "
          "Megatron-LM's pretrain_gpt.py under torchrun, and reads step times from its log), "
          "cuda (native training probes: paratune-probe, see --probe_binary, on this "
          "machine's GPUs).");
ABSL_FLAG(std::string, config, "",
          "Worker config file in protobuf text format (paratune.v1.WorkerConfig, "
          "proto/worker_config.proto; docs/backends.md): the command backend's launch "
          "templates and the replay backend's tables. Required by replay and command; each "
          "section it has must belong to a backend in --backend.");
ABSL_FLAG(int64_t, sim_gpus, 8,
          "Number of GPUs the worker reports (1 to 64), with indices 0 .. N-1, when it does "
          "not offer cuda (with cuda it reports the real GPUs paratune-probe --list_gpus "
          "finds). For command probes they are declared GPUs of this machine that the launches "
          "run on; sim and replay need none. The scheduler only leases the worker probes whose "
          "ranks fit.");
ABSL_FLAG(std::string, probe_binary, "",
          "Path of the paratune-probe executable (bazel-bin/worker/cuda/paratune-probe), "
          "required with --backend=cuda. It needs libcublasLt.so.13 and libnccl.so.2: under "
          "/usr/local/cuda/lib64 or on LD_LIBRARY_PATH, which it inherits (docs/probe.md).");
ABSL_FLAG(std::string, probe_scratch_dir, "/tmp",
          "Where the cuda backend gives each probe a directory for its assignment, report and "
          "NCCL id files (removed when the probe ends).");
ABSL_FLAG(std::string, sim_gpu_type, "h100-80gb",
          "Catalog GPU type of the reported GPUs (a100-40gb, a100-80gb, h100-80gb, "
          "h100-94gb, h200-141gb), with the catalog memory. They are named \"simulated "
          "<TYPE>\", or \"<TYPE> (declared)\" when the worker offers the command backend.");
ABSL_FLAG(std::string, hostname, "",
          "Hostname to register with; empty means this machine's hostname. Other workers "
          "of a gang reach rank 0's torchrun rendezvous at it.");
ABSL_FLAG(std::string, labels, "",
          "Comma-separated key=value labels to register with, e.g. rack=a1,pool=dev "
          "(at most 32).");
ABSL_FLAG(double, sim_probe_seconds, 0.2,
          "Wall time each sim probe takes (it is cancellable), so progress is visible; 0 "
          "answers at once. Ignored when --sim_time_scale is set.");
ABSL_FLAG(double, sim_time_scale, 0,
          "When > 0, each sim probe sleeps this fraction of the duration it models on real "
          "GPUs (30 s start-up, warm-up and timed steps), so deadlines, leases and budgets run "
          "with real ratios: 0.01 runs a 90 s probe in 0.9 s. Its wall_seconds, and so the "
          "search's GPU-hours, are always the modelled real duration, labelled simulated.");
ABSL_FLAG(double, replay_probe_seconds, 0,
          "Wall time each replay probe takes (it is cancellable), to watch a replayed "
          "search progress as a live one would; 0 answers at once.");
ABSL_FLAG(std::string, grpc_address, "127.0.0.1:0",
          "host:port of the worker's own gRPC server, which serves health checking "
          "(grpc.health.v1) and reflection only, in plaintext and without tokens: they reveal "
          "nothing secret, and health probes (the kubelet's) can do neither TLS nor tokens. "
          "Port 0 picks a free port (logged). Set a fixed port where a health probe needs one "
          "(Kubernetes, load balancers).");
ABSL_FLAG(std::string, metrics_address, "",
          "host:port (IPv4) to serve Prometheus metrics on, at /metrics; empty serves none. "
          "Port 0 picks a free port (see --metrics_port_file).");
ABSL_FLAG(std::string, metrics_port_file, "",
          "If set, the bound metrics port is written to this file (decimal, "
          "newline-terminated, atomically).");
ABSL_FLAG(int64_t, exit_after_probes, 0,
          "Exit (status 0) once this many probes have ended: reported, or stopped because "
          "the server cancelled them. After the last report the worker deregisters from the "
          "server, so that the server leases it nothing more and does not count it lost. 0 "
          "runs until a signal. paratune-server's Slurm launcher starts workers with 1, so "
          "that a probe's job ends with its probe.");
ABSL_FLAG(std::string, log_level, "info",
          "Least severe log lines written: debug, info, warning or error.");

namespace paratune {
namespace {

// paratune-probe --list_gpus starts the CUDA runtime once; a minute covers a slow driver.
constexpr absl::Duration kListGpusTimeout = absl::Seconds(60);

constexpr char kUsage[] =
    "the paratune worker daemon.\n"
    "\n"
    "Registers with paratune-server, heartbeats, long-polls for probes, runs each with the "
    "requested backend under the probe's deadline and reports the result. A failing probe "
    "never takes the daemon down. It serves gRPC health checking and reflection on "
    "--grpc_address and, with --metrics_address, Prometheus metrics at /metrics "
    "(docs/operations.md lists them). Logs are one line per event on stderr (logfmt). "
    "SIGINT or SIGTERM stop it gracefully: it deregisters from the server first (within 5 s; "
    "if the server cannot be reached it exits anyway and the server declares it lost once "
    "its heartbeats stop), so that it is leased no further probe and a running probe is "
    "handed back and re-queued at once; then it stops that probe. With --exit_after_probes "
    "it deregisters and exits after that many probes.\n"
    "\n"
    "Against a server with TLS, --tls_ca verifies its certificate; --tls_cert and --tls_key "
    "present this worker's certificate where the server requires one (mutual TLS); "
    "--token_file holds the worker token the server's calls need, unless the server binds "
    "this worker's certificate to a worker principal. The worker's own "
    "--grpc_address serves health and reflection only, in plaintext.\n"
    "\n"
    "With --backend=cuda the worker registers the GPUs that paratune-probe --list_gpus "
    "finds and runs each probe as a paratune-probe process on the GPUs the scheduler "
    "assigned, stopped 5 s before the probe's deadline (SIGTERM, then SIGKILL) so that it is "
    "gone by then; for probes spanning several workers it relays the NCCL unique id through "
    "the scheduler.\n"
    "\n"
    "Usage: paratune-worker [--server=127.0.0.1:50051] [--backend=sim,replay,command,cuda]\n"
    "                       [--tls_ca=PEM [--tls_cert=PEM --tls_key=PEM]]\n"
    "                       [--token_file=PATH]\n"
    "                       [--config=worker.textproto] [--sim_gpus=8]\n"
    "                       [--sim_gpu_type=h100-80gb] [--hostname=NAME] [--labels=k=v,...]\n"
    "                       [--sim_probe_seconds=0.2 | --sim_time_scale=0.01]\n"
    "                       [--replay_probe_seconds=0]\n"
    "                       [--probe_binary=PATH] [--probe_scratch_dir=/tmp]\n"
    "                       [--grpc_address=127.0.0.1:0] [--metrics_address=HOST:PORT]\n"
    "                       [--metrics_port_file=PATH] [--exit_after_probes=0]\n"
    "                       [--log_level=info]\n"
    "\n"
    "Examples: deploy/templates/ has worker configs for Megatron-LM and NeMo launches;\n"
    "docs/backends.md describes the backends, the config file and every placeholder.\n";

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

absl::Status CheckSeconds(const char* flag, double seconds) {
  if (std::isfinite(seconds) && seconds >= 0 && seconds <= 3600) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, " (", seconds, ") must be in [0, 3600]"));
}

// The backends --backend names, built from --config where they need it.
absl::Status AddBackends(WorkerDaemon::Options& options) {
  const std::string config_path = absl::GetFlag(FLAGS_config);
  std::optional<v1::WorkerConfig> config;
  if (!config_path.empty()) {
    absl::StatusOr<v1::WorkerConfig> loaded = LoadWorkerConfig(config_path);
    if (!loaded.ok()) return loaded.status();
    config = *std::move(loaded);
  }
  auto with_config = [&config_path](const absl::Status& status) {
    return absl::Status(status.code(),
                        absl::StrCat("--config ", config_path, ": ", status.message()));
  };
  bool offers_replay = false;
  bool offers_command = false;
  for (absl::string_view name :
       absl::StrSplit(absl::GetFlag(FLAGS_backend), ',', absl::SkipEmpty())) {
    if (name == "sim") {
      const double seconds = absl::GetFlag(FLAGS_sim_probe_seconds);
      PT_RETURN_IF_ERROR(CheckSeconds("sim_probe_seconds", seconds));
      SimBackend::Options sim;
      sim.probe_time = absl::Seconds(seconds);
      sim.time_scale = absl::GetFlag(FLAGS_sim_time_scale);
      if (!std::isfinite(sim.time_scale) || sim.time_scale < 0 || sim.time_scale > 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("--sim_time_scale (", sim.time_scale, ") must be in [0, 1]"));
      }
      options.backends.push_back(std::make_unique<SimBackend>(sim));
    } else if (name == "replay" || name == "command") {
      if (!config.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--backend ", name, " needs --config=FILE with its ",
            name == "replay" ? "replay tables" : "command_templates", " (docs/backends.md)"));
      }
      if (name == "replay") {
        const double seconds = absl::GetFlag(FLAGS_replay_probe_seconds);
        PT_RETURN_IF_ERROR(CheckSeconds("replay_probe_seconds", seconds));
        ReplayBackend::Options replay;
        replay.probe_time = absl::Seconds(seconds);
        absl::StatusOr<std::unique_ptr<ReplayBackend>> backend =
            ReplayBackend::Create(config->replay(), replay);
        if (!backend.ok()) return with_config(backend.status());
        options.backends.push_back(*std::move(backend));
        offers_replay = true;
      } else {
        absl::StatusOr<std::unique_ptr<CommandBackend>> backend = CommandBackend::Create(*config);
        if (!backend.ok()) return with_config(backend.status());
        options.command_templates = (*backend)->TemplateNames();
        options.backends.push_back(*std::move(backend));
        offers_command = true;
      }
    } else if (name == "cuda") {
      CudaBackend::Options probe;
      probe.probe_binary = absl::GetFlag(FLAGS_probe_binary);
      probe.scratch_directory = absl::GetFlag(FLAGS_probe_scratch_dir);
      if (probe.probe_binary.empty()) {
        return absl::InvalidArgumentError(
            "--probe_binary (\"\") must name paratune-probe when --backend offers cuda");
      }
      options.backends.push_back(std::make_unique<CudaBackend>(probe));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--backend (\"", name, "\") is not one of sim, replay, command, cuda"));
    }
  }
  // A section nobody reads is a mistake the operator should hear about, not a silent no-op.
  if (config.has_value() && config->command_templates_size() > 0 && !offers_command) {
    return with_config(absl::InvalidArgumentError(
        "command_templates are defined but --backend does not offer command"));
  }
  if (config.has_value() && config->has_replay() && !offers_replay) {
    return with_config(
        absl::InvalidArgumentError("replay is defined but --backend does not offer replay"));
  }
  return absl::OkStatus();
}

// The GPUs the worker registers: the real ones paratune-probe finds when it offers cuda (the
// daemon links no CUDA), else --sim_gpus of --sim_gpu_type, declared.
absl::StatusOr<std::vector<v1::Gpu>> GpusFromFlags(const WorkerDaemon::Options& options) {
  const bool offers_cuda = std::any_of(
      options.backends.begin(), options.backends.end(),
      [](const std::unique_ptr<ProbeBackend>& backend) { return backend->Name() == "cuda"; });
  if (offers_cuda) {
    absl::StatusOr<std::vector<v1::Gpu>> gpus =
        ListProbeGpus(absl::GetFlag(FLAGS_probe_binary), kListGpusTimeout);
    if (!gpus.ok()) {
      return absl::Status(gpus.status().code(),
                          absl::StrCat("--backend=cuda: ", gpus.status().message()));
    }
    return gpus;
  }
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
  const std::string type = absl::AsciiStrToUpper(gpu_type->name);
  std::vector<v1::Gpu> gpus;
  for (int64_t i = 0; i < gpu_count; ++i) {
    v1::Gpu& gpu = gpus.emplace_back();
    gpu.set_index(i);
    gpu.set_name(options.command_templates.empty() ? absl::StrCat("simulated ", type)
                                                   : absl::StrCat(type, " (declared)"));
    gpu.set_memory_bytes(gpu_type->memory_bytes);
  }
  return gpus;
}

absl::StatusOr<WorkerDaemon::Options> OptionsFromFlags() {
  WorkerDaemon::Options options;
  options.server_address = absl::GetFlag(FLAGS_server);
  options.credentials.tls_ca = absl::GetFlag(FLAGS_tls_ca);
  options.credentials.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  options.credentials.tls_key = absl::GetFlag(FLAGS_tls_key);
  options.credentials.token_file = absl::GetFlag(FLAGS_token_file);
  PT_RETURN_IF_ERROR(AddBackends(options));
  PT_ASSIGN_OR_RETURN(options.gpus, GpusFromFlags(options));
  options.hostname = absl::GetFlag(FLAGS_hostname);
  if (options.hostname.empty()) {
    absl::StatusOr<std::string> hostname = LocalHostname();
    if (!hostname.ok()) {
      return absl::UnavailableError(absl::StrCat("cannot read this machine's hostname (",
                                                 hostname.status().message(),
                                                 "); pass --hostname"));
    }
    options.hostname = *std::move(hostname);
  }
  absl::StatusOr<std::map<std::string, std::string>> labels =
      ParseLabels(absl::GetFlag(FLAGS_labels));
  if (!labels.ok()) return labels.status();
  options.labels = *std::move(labels);
  options.max_probes = absl::GetFlag(FLAGS_exit_after_probes);
  if (options.max_probes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--exit_after_probes (", options.max_probes, ") must be >= 0"));
  }
  return options;
}

int Main() {
  if (absl::Status status = ConfigureLog("paratune-worker", absl::GetFlag(FLAGS_log_level));
      !status.ok()) {
    Log(LogLevel::kError, "bad flags", {{"error", status.ToString()}});
    return 2;
  }
  const sigset_t signals = BlockShutdownSignals();

  absl::StatusOr<WorkerDaemon::Options> options = OptionsFromFlags();
  if (!options.ok()) {
    Log(LogLevel::kError, "bad flags or config file", {{"error", options.status().ToString()}});
    return 2;
  }

  // Metrics are defined before the daemon starts so that probes are counted from the first.
  metrics::Registry registry;
  std::vector<std::string> backends;
  for (const auto& backend : options->backends) backends.push_back(backend->Name());
  absl::StatusOr<std::unique_ptr<WorkerMetrics>> worker_metrics =
      WorkerMetrics::Create(registry, backends, static_cast<int64_t>(options->gpus.size()));
  if (!worker_metrics.ok()) {
    Log(LogLevel::kError, "cannot define metrics", {{"error", worker_metrics.status().ToString()}});
    return 1;
  }
  WorkerMetrics* recorder = worker_metrics->get();
  options->on_probe_finished = [recorder](const v1::ProbeAssignment& assignment,
                                          const v1::ProbeResult& result) {
    recorder->RecordProbe(assignment, result);
  };
  absl::StatusOr<std::unique_ptr<metrics::HttpExporter>> exporter = metrics::StartMetricsEndpoint(
      absl::GetFlag(FLAGS_metrics_address), absl::GetFlag(FLAGS_metrics_port_file), registry);
  if (!exporter.ok()) {
    Log(LogLevel::kError, "cannot serve metrics", {{"error", exporter.status().ToString()}});
    return 1;
  }
  absl::StatusOr<std::unique_ptr<HealthServer>> health =
      HealthServer::Start({absl::GetFlag(FLAGS_grpc_address)});
  if (!health.ok()) {
    Log(LogLevel::kError, "cannot serve gRPC health",
        {{"error", absl::StrCat("--grpc_address: ", health.status().ToString())}});
    return 1;
  }
  Log(LogLevel::kInfo, "serving gRPC health and reflection",
      {{"address", absl::GetFlag(FLAGS_grpc_address)}, {"port", absl::StrCat((*health)->port())}});

  absl::StatusOr<std::unique_ptr<WorkerDaemon>> daemon = WorkerDaemon::Start(*std::move(options));
  if (!daemon.ok()) {
    Log(LogLevel::kError, "cannot start", {{"error", daemon.status().ToString()}});
    return 1;
  }
  // The daemon finishing its --exit_after_probes is polled between waits for a signal.
  const timespec signal_wait = {0, 100'000'000};
  int signal_number = -1;
  while (signal_number <= 0 && !(*daemon)->WaitUntilFinished(absl::ZeroDuration())) {
    signal_number = sigtimedwait(&signals, nullptr, &signal_wait);
  }
  std::string reason;
  if (signal_number > 0) {
    reason =
        absl::StrCat("paratune-worker received ", signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
    Log(LogLevel::kInfo, "shutting down", {{"signal", strsignal(signal_number)}});
  } else {
    // The daemon deregistered after its last probe already.
    reason = absl::StrCat("paratune-worker ran its --exit_after_probes=",
                          absl::GetFlag(FLAGS_exit_after_probes), " probes");
    Log(LogLevel::kInfo, "shutting down", {{"reason", "--exit_after_probes reached"}});
  }
  (*health)->SetNotServing();
  (*daemon)->Stop(reason);
  return 0;
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  const std::vector<char*> positional =
      paratune::ParseFlags(argc, argv, paratune::kUsage, "worker/worker_main.cc");
  if (!paratune::NoPositionalArguments(positional, "paratune-worker")) return 2;
  return paratune::Main();
}
