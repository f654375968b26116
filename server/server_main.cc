// paratune-server: the scheduler. Flags are parsed here only; everything else is in
// server/server.h.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/command_line.h"
#include "common/health_server.h"
#include "common/log.h"
#include "common/port_file.h"
#include "common/shutdown_signals.h"
#include "common/status_macros.h"
#include "metrics/http_exporter.h"
#include "metrics/metrics_endpoint.h"
#include "metrics/registry.h"
#include "proto/autotuner_service.grpc.pb.h"
#include "proto/worker_service.grpc.pb.h"
#include "server/core/scheduler_metrics.h"
#include "server/rpc_metrics.h"
#include "server/security/credential_metrics.h"
#include "server/security/grpc_methods.h"
#include "server/server.h"
#include "server/slurm/slurm_client.h"
#include "server/slurm/slurm_launcher.h"
#include "server/slurm/slurm_launcher_metrics.h"

ABSL_FLAG(std::string, address, "127.0.0.1:50051",
          "host:port to listen on. Port 0 picks a free port (see --port_file). A non-loopback "
          "host needs TLS and tokens (--tls_cert, --tls_key, --token_file) or "
          "--insecure_allow_remote.");
ABSL_FLAG(std::string, port_file, "",
          "If set, the bound port is written to this file (decimal, newline-terminated) once "
          "the server listens. The file is written under a temporary name and renamed, so a "
          "reader never sees a partial port.");
ABSL_FLAG(double, heartbeat_interval_seconds, 2,
          "How often workers must heartbeat, in seconds. A worker silent for 3 intervals is "
          "declared lost and its probe is re-queued.");
ABSL_FLAG(int64_t, max_searches_per_principal, 16,
          "Unfinished searches one principal (a token's name; without tokens, all callers "
          "together) may have; CreateSearch beyond it is RESOURCE_EXHAUSTED. Admins are "
          "exempt. 0: no limit.");
ABSL_FLAG(int64_t, max_probes_in_flight_per_principal, 64,
          "Running probes of one principal's searches; more wait queued, their "
          "waiting_reason naming this limit. Admins are exempt. 0: no limit.");
ABSL_FLAG(int64_t, max_enumerated_candidates, 1000000,
          "Configurations a CreateSearch or Plan may enumerate, counted before planning; "
          "more is INVALID_ARGUMENT. 0: no limit.");
ABSL_FLAG(int64_t, max_request_bytes, 4 << 20,
          "Largest CreateSearch, Estimate or Plan request in bytes, 1024 to 256 MiB; larger is "
          "INVALID_ARGUMENT. The server receives any message up to this or 4 MiB, whichever is "
          "more, so workers' reports are never capped by it.");
ABSL_FLAG(std::string, db, "paratune.db",
          "SQLite database of searches, candidates, probe results, workers, leases and "
          "events; created if absent. A server started on an existing database resumes its "
          "unfinished searches, and probes leased before it stopped are still accepted from "
          "their workers. One server per database. \":memory:\" keeps nothing after exit.");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM file of this server's certificate chain (leaf first); with --tls_key the gRPC "
          "port speaks TLS only. The certificate must name every host clients and workers "
          "dial (DNS names or IP addresses in its subjectAltName). SIGHUP reads it, --tls_key "
          "and --tls_client_ca again: once they are checked (the key is the certificate's, "
          "the certificate valid now), new connections get them within a second while open "
          "ones go on; files that do not check leave the old ones in force (the log says "
          "why).");
ABSL_FLAG(std::string, tls_key, "",
          "PEM file of the private key of --tls_cert, unencrypted; keep it readable by this "
          "server's user only.");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM file of the CA whose client certificates this server requires and verifies "
          "(mutual TLS): every client, CLI and workers alike, must present one it signed "
          "(their --tls_cert and --tls_key). Needs --tls_cert. A certificate whose subject "
          "common name --token_file binds (cert:CN) names its principal without a token.");
ABSL_FLAG(std::string, token_file, "",
          "File of principals and their credentials, one \"ROLE NAME TOKEN\" or "
          "\"ROLE NAME cert:COMMON_NAME\" line each ('#' starts a comment line); NAME (letters, "
          "digits, . _ -) is recorded as the creator of the searches and the registrant of the "
          "workers of its credentials, and a client sees and cancels only its own searches: client "
          "principals may call the Autotuner API, worker principals the WorkerService API, admins "
          "both. Every call but health checking and reflection must carry \"authorization: Bearer "
          "TOKEN\" or come over a connection whose client certificate has a bound common name, of "
          "a role that may make it (UNAUTHENTICATED otherwise, or when a token and a bound "
          "certificate name different principals; PERMISSION_DENIED for the wrong role). Tokens "
          "have 16 to 1024 of the characters A-Z a-z 0-9 - . _ ~ + / (then any '='), e.g. `openssl "
          "rand -hex 32`. Needs --tls_cert; cert: lines need --tls_client_ca. SIGHUP reads it "
          "again: new credentials are accepted and removed ones refused from then on, without "
          "dropping connections; a file that does not parse leaves the old ones in force (the log "
          "says which line).");
ABSL_FLAG(bool, insecure_allow_remote, false,
          "Allow a non-loopback --address without TLS and tokens. Anyone who can reach the "
          "port can then create and cancel searches, register workers and report results; "
          "use it on a trusted, isolated network only.");
ABSL_FLAG(std::string, health_address, "",
          "host:port of a second, plaintext gRPC server that answers health checks "
          "(grpc.health.v1) and reflection only, for probes that cannot present a client "
          "certificate or speak TLS (the kubelet's gRPC probe). Port 0 picks a free port (see "
          "--health_port_file). Empty serves none; health checks are also answered on "
          "--address, without a token.");
ABSL_FLAG(std::string, health_port_file, "",
          "If set, the bound --health_address port is written to this file like --port_file.");
ABSL_FLAG(std::string, metrics_address, "",
          "host:port (IPv4) to serve Prometheus metrics on, at /metrics; empty serves none. "
          "Port 0 picks a free port (see --metrics_port_file). The endpoint is plain HTTP and "
          "read-only; scrape it from inside the cluster.");
ABSL_FLAG(std::string, metrics_port_file, "",
          "If set, the bound metrics port is written to this file like --port_file.");
ABSL_FLAG(std::string, console_address, "",
          "host:port (IPv4) to serve the read-only web console on (docs/console.md), e.g. "
          "127.0.0.1:8080; empty serves none. Port 0 picks a free port (see "
          "--console_port_file). Plain HTTP: with --token_file it must be a loopback address "
          "(reach it through an SSH tunnel) and asks for a client or admin token; without one, "
          "a non-loopback address needs --insecure_allow_remote.");
ABSL_FLAG(std::string, console_port_file, "",
          "If set, the bound --console_address port is written to this file like --port_file.");
ABSL_FLAG(std::string, log_level, "info",
          "Least severe log lines written: debug, info, warning or error.");
ABSL_FLAG(std::string, launcher, "none",
          "How probes get workers. none: long-lived paratune-workers register by themselves "
          "(systemd, Kubernetes, deploy/slurm/paratune-workers.sbatch). slurm: each queued probe "
          "that no live worker can host is submitted as its own Slurm job (sbatch), which "
          "starts one paratune-worker per node reserved for that probe; the job ends with "
          "the probe, is followed with squeue and sacct or scontrol, and is cancelled "
          "(scancel) when the probe is no longer wanted. The --slurm_* flags configure it; "
          "docs/operations.md explains it.");
ABSL_FLAG(std::string, slurm_bin_dir, "",
          "Folder of Slurm's sbatch, squeue, sacct, scontrol and scancel; empty finds them in "
          "PATH. They use Slurm's usual configuration (SLURM_CONF or /etc/slurm).");
ABSL_FLAG(std::string, slurm_partition, "",
          "sbatch --partition of probe jobs; empty: the default.");
ABSL_FLAG(std::string, slurm_account, "", "sbatch --account of probe jobs; empty: the default.");
ABSL_FLAG(std::string, slurm_sbatch_args, "",
          "More sbatch arguments for probe jobs, separated by spaces (no quoting), e.g. "
          "\"--qos=short --constraint=h100\".");
ABSL_FLAG(bool, slurm_request_gpus, true,
          "Ask Slurm for the search's GPUs per node (--gpus-per-node). Turn off on clusters "
          "without GPU GRES, e.g. sim probes on CPU nodes.");
ABSL_FLAG(bool, slurm_exclusive, true,
          "Submit probe jobs --exclusive, so that no other job shares the nodes a probe "
          "measures.");
ABSL_FLAG(std::string, slurm_job_output, "",
          "sbatch --output of probe jobs, where the workers' logs go (%j is the job id), e.g. "
          "/shared/paratune/jobs/%j.out; empty: Slurm's default, slurm-%j.out in this "
          "server's working directory.");
ABSL_FLAG(std::string, slurm_job_name_prefix, "paratune",
          "Probe jobs are named PREFIX-s<search>-c<candidate>-a<attempt>. The server follows "
          "the jobs of this prefix that its user has, also after a restart, and cancels those "
          "it does not need: give every server sharing a Slurm cluster and user its own.");
ABSL_FLAG(std::string, slurm_server_address, "",
          "host:port at which the probe jobs' workers reach this server; empty: the --address "
          "host (this machine's hostname when it is 0.0.0.0 or [::]) and the bound port.");
ABSL_FLAG(std::string, slurm_worker_binary, "paratune-worker",
          "The paratune-worker executable on the compute nodes: a path, or a name in their "
          "PATH.");
ABSL_FLAG(std::string, slurm_worker_args, "",
          "More paratune-worker flags for the workers of probe jobs, separated by spaces (no "
          "quoting), e.g. \"--sim_gpus=8 --log_level=debug\". The launcher sets --server, "
          "--backend (the probe's), --labels and --exit_after_probes itself.");
ABSL_FLAG(int64_t, slurm_max_jobs, 16,
          "Most probe jobs in Slurm at once, pending or running (1 to 10000); queued probes "
          "take turns between searches for them.");
ABSL_FLAG(double, slurm_poll_interval_seconds, 5,
          "How often the launcher compares Slurm's jobs (squeue) with the queued probes; it "
          "also looks at once when probes are queued.");
ABSL_FLAG(double, slurm_startup_allowance_seconds, 300,
          "Added to a probe's deadline for its job's --time: how long the job's workers may "
          "take to start and register. A running job whose workers have not taken the probe "
          "within it is cancelled, and the attempt counts.");
ABSL_FLAG(double, slurm_command_timeout_seconds, 60,
          "Longest run of one Slurm command (sbatch, squeue, ...).");

namespace paratune {
namespace {

constexpr char kUsage[] =
    "the paratune scheduler.\n"
    "\n"
    "Serves the paratune.v1.Autotuner API (clients: create, watch and cancel searches; "
    "estimate and plan) and the paratune.v1.WorkerService API (paratune-worker daemons), "
    "with gRPC health checking and server reflection. With --tls_cert and --tls_key it "
    "speaks TLS, with --tls_client_ca it requires client certificates (mutual TLS), and with "
    "--token_file every call needs a principal, named by a bearer token or a bound client "
    "certificate, whose role (client, worker, admin) may make it; a non-loopback --address "
    "needs TLS and tokens. Its state is kept in a SQLite "
    "database (--db), so it survives restarts and crashes. With --metrics_address it serves "
    "Prometheus metrics at /metrics (docs/operations.md lists them), and with "
    "--console_address a read-only web console (docs/console.md). Logs are one line per "
    "event on stderr (logfmt). SIGINT or SIGTERM shut it down gracefully; SIGHUP reloads "
    "--token_file and the TLS files without dropping connections.\n"
    "\n"
    "\n"
    "With --launcher=slurm it needs no long-lived workers: it submits each probe that no "
    "live worker can host as a Slurm job that starts workers for that probe only.\n"
    "\n"
    "Usage: paratune-server [--address=127.0.0.1:50051] [--db=paratune.db] [--port_file=PATH]\n"
    "                       [--heartbeat_interval_seconds=2]\n"
    "                       [--tls_cert=PEM --tls_key=PEM [--tls_client_ca=PEM]]\n"
    "                       [--token_file=PATH] [--insecure_allow_remote]\n"
    "                       [--health_address=HOST:PORT] [--health_port_file=PATH]\n"
    "                       [--metrics_address=HOST:PORT] [--metrics_port_file=PATH]\n"
    "                       [--console_address=HOST:PORT] [--console_port_file=PATH]\n"
    "                       [--log_level=info] [--launcher=none|slurm] [--slurm_...]\n";

// The server's metrics: RPC counts and latency (an interceptor, installed before the server
// starts) and the scheduler's and credentials' counts (read from the server at every scrape).
struct ServerMetrics {
  metrics::Registry registry;
  std::unique_ptr<RpcMetrics> rpc;
  std::unique_ptr<metrics::HttpExporter> exporter;
};

// A duration flag's value: finite and > 0 seconds. INVALID_ARGUMENT naming the flag.
absl::StatusOr<absl::Duration> PositiveSeconds(absl::string_view flag, double seconds) {
  if (!std::isfinite(seconds) || seconds <= 0 || seconds > 86400) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, " (", seconds, ") must be in (0, 86400]"));
  }
  return absl::Seconds(seconds);
}

// The Slurm launcher's options from the --slurm_* flags; nullopt for --launcher=none.
// INVALID_ARGUMENT naming the flag and its value.
absl::StatusOr<std::optional<SlurmLauncher::Options>> LauncherFromFlags() {
  const std::string launcher = absl::GetFlag(FLAGS_launcher);
  if (launcher == "none") return std::nullopt;
  if (launcher != "slurm") {
    return absl::InvalidArgumentError(
        absl::StrCat("--launcher (\"", launcher, "\") must be none or slurm"));
  }
  SlurmLauncher::Options options;
  ProbeJobOptions& job = options.job;
  job.job_name_prefix = absl::GetFlag(FLAGS_slurm_job_name_prefix);
  job.partition = absl::GetFlag(FLAGS_slurm_partition);
  job.account = absl::GetFlag(FLAGS_slurm_account);
  job.extra_sbatch_args =
      absl::StrSplit(absl::GetFlag(FLAGS_slurm_sbatch_args), ' ', absl::SkipEmpty());
  job.request_gpus = absl::GetFlag(FLAGS_slurm_request_gpus);
  job.exclusive = absl::GetFlag(FLAGS_slurm_exclusive);
  job.output = absl::GetFlag(FLAGS_slurm_job_output);
  job.server_address = absl::GetFlag(FLAGS_slurm_server_address);
  job.worker_binary = absl::GetFlag(FLAGS_slurm_worker_binary);
  job.worker_args = absl::StrSplit(absl::GetFlag(FLAGS_slurm_worker_args), ' ', absl::SkipEmpty());
  PT_ASSIGN_OR_RETURN(job.startup_allowance,
                      PositiveSeconds("slurm_startup_allowance_seconds",
                                      absl::GetFlag(FLAGS_slurm_startup_allowance_seconds)));
  PT_ASSIGN_OR_RETURN(options.poll_interval,
                      PositiveSeconds("slurm_poll_interval_seconds",
                                      absl::GetFlag(FLAGS_slurm_poll_interval_seconds)));
  PT_ASSIGN_OR_RETURN(options.command_timeout,
                      PositiveSeconds("slurm_command_timeout_seconds",
                                      absl::GetFlag(FLAGS_slurm_command_timeout_seconds)));
  options.max_jobs = absl::GetFlag(FLAGS_slurm_max_jobs);
  const std::string bin_dir = absl::GetFlag(FLAGS_slurm_bin_dir);
  if (!bin_dir.empty()) {
    SlurmClient::Commands& commands = options.commands;
    for (std::string* command : {&commands.sbatch, &commands.squeue, &commands.sacct,
                                 &commands.scontrol, &commands.scancel}) {
      *command = absl::StrCat(bin_dir, "/", *command);
    }
  }
  // The flags are named after the options they set: --slurm_<option>.
  if (absl::Status status = SlurmLauncher::CheckOptions(options); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--slurm_", status.message()));
  }
  return options;
}

std::vector<std::string> ServedMethods() {
  std::vector<std::string> methods = StandardGrpcMethods();
  for (const char* service :
       {v1::Autotuner::service_full_name(), v1::WorkerService::service_full_name()}) {
    for (std::string& method : MethodsOfService(service)) methods.push_back(std::move(method));
  }
  return methods;
}

int Main() {
  if (absl::Status status = ConfigureLog("paratune-server", absl::GetFlag(FLAGS_log_level));
      !status.ok()) {
    Log(LogLevel::kError, "bad flags", {{"error", status.ToString()}});
    return 2;
  }
  sigset_t signals = BlockShutdownSignals();
  // SIGHUP reloads the token file and the TLS files; like the shutdown signals it is taken by
  // sigwait below, so blocked here, before any thread starts.
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<std::optional<SlurmLauncher::Options>> launcher = LauncherFromFlags();
  if (!launcher.ok()) {
    Log(LogLevel::kError, "bad flags", {{"error", launcher.status().ToString()}});
    return 2;
  }

  ServerMetrics metrics;
  absl::StatusOr<std::unique_ptr<RpcMetrics>> rpc =
      RpcMetrics::Create(metrics.registry, ServedMethods());
  if (!rpc.ok()) {
    Log(LogLevel::kError, "cannot define metrics", {{"error", rpc.status().ToString()}});
    return 1;
  }
  metrics.rpc = *std::move(rpc);

  ParatuneServer::Options options;
  options.address = absl::GetFlag(FLAGS_address);
  options.security.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  options.security.tls_key = absl::GetFlag(FLAGS_tls_key);
  options.security.tls_client_ca = absl::GetFlag(FLAGS_tls_client_ca);
  options.security.token_file = absl::GetFlag(FLAGS_token_file);
  options.security.on_refused_call = [rpc = metrics.rpc.get()](absl::string_view method,
                                                               absl::StatusCode code) {
    rpc->RecordRefused(method, code);
  };
  options.allow_remote = absl::GetFlag(FLAGS_insecure_allow_remote);
  options.db_path = absl::GetFlag(FLAGS_db);
  options.heartbeat_interval = absl::Seconds(absl::GetFlag(FLAGS_heartbeat_interval_seconds));
  options.limits.max_searches_per_principal = absl::GetFlag(FLAGS_max_searches_per_principal);
  options.limits.max_probes_in_flight_per_principal =
      absl::GetFlag(FLAGS_max_probes_in_flight_per_principal);
  options.limits.max_enumerated_candidates = absl::GetFlag(FLAGS_max_enumerated_candidates);
  options.limits.max_request_bytes = absl::GetFlag(FLAGS_max_request_bytes);
  options.interceptors.push_back(metrics.rpc->NewInterceptorFactory());
  options.slurm_launcher = *std::move(launcher);
  options.console_address = absl::GetFlag(FLAGS_console_address);
  const bool slurm_launcher = options.slurm_launcher.has_value();
  absl::StatusOr<std::unique_ptr<ParatuneServer>> server =
      ParatuneServer::Start(std::move(options));
  if (!server.ok()) {
    Log(LogLevel::kError, "cannot start", {{"error", server.status().ToString()}});
    return 1;
  }
  const int port = (*server)->port();
  Log(LogLevel::kInfo, "listening",
      {{"address", absl::GetFlag(FLAGS_address)}, {"port", absl::StrCat(port)}});
  // Before the port file, which tells scripts and tests that the server is ready.
  std::unique_ptr<HealthServer> health;
  if (const std::string health_address = absl::GetFlag(FLAGS_health_address);
      !health_address.empty()) {
    absl::StatusOr<std::unique_ptr<HealthServer>> started = HealthServer::Start({health_address});
    if (!started.ok()) {
      Log(LogLevel::kError, "cannot serve gRPC health",
          {{"error", absl::StrCat("--health_address: ", started.status().ToString())}});
      return 1;
    }
    health = *std::move(started);
    Log(LogLevel::kInfo, "serving gRPC health and reflection in plaintext",
        {{"address", health_address}, {"port", absl::StrCat(health->port())}});
    if (absl::Status status = WritePortFile("--health_port_file",
                                            absl::GetFlag(FLAGS_health_port_file), health->port());
        !status.ok()) {
      Log(LogLevel::kError, "cannot write the port file", {{"error", status.ToString()}});
      return 1;
    }
  }
  if (const int console_port = (*server)->console_port(); console_port != 0) {
    Log(LogLevel::kInfo, "serving the web console",
        {{"address", absl::GetFlag(FLAGS_console_address)}, {"port", absl::StrCat(console_port)}});
    if (absl::Status status = WritePortFile("--console_port_file",
                                            absl::GetFlag(FLAGS_console_port_file), console_port);
        !status.ok()) {
      Log(LogLevel::kError, "cannot write the port file", {{"error", status.ToString()}});
      return 1;
    }
  }
  if (absl::Status status = WritePortFile("--port_file", absl::GetFlag(FLAGS_port_file), port);
      !status.ok()) {
    Log(LogLevel::kError, "cannot write the port file", {{"error", status.ToString()}});
    return 1;
  }

  const ParatuneServer* serving = server->get();
  if (absl::Status status =
          metrics.registry
              .Register(std::make_unique<SchedulerMetrics>([serving] { return serving->stats(); }))
              .status();
      !status.ok()) {
    Log(LogLevel::kError, "cannot define metrics", {{"error", status.ToString()}});
    return 1;
  }
  if (absl::Status status = metrics.registry
                                .Register(std::make_unique<CredentialMetrics>(
                                    [serving] { return serving->credential_stats(); }))
                                .status();
      !status.ok()) {
    Log(LogLevel::kError, "cannot define metrics", {{"error", status.ToString()}});
    return 1;
  }
  if (slurm_launcher) {
    if (absl::Status status =
            metrics.registry
                .Register(std::make_unique<SlurmLauncherMetrics>([serving] {
                  return serving->slurm_launcher_stats().value_or(SlurmLauncher::Stats());
                }))
                .status();
        !status.ok()) {
      Log(LogLevel::kError, "cannot define metrics", {{"error", status.ToString()}});
      return 1;
    }
  }
  absl::StatusOr<std::unique_ptr<metrics::HttpExporter>> exporter =
      metrics::StartMetricsEndpoint(absl::GetFlag(FLAGS_metrics_address),
                                    absl::GetFlag(FLAGS_metrics_port_file), metrics.registry);
  if (!exporter.ok()) {
    Log(LogLevel::kError, "cannot serve metrics", {{"error", exporter.status().ToString()}});
    return 1;
  }
  metrics.exporter = *std::move(exporter);

  int signal_number = 0;
  while (sigwait(&signals, &signal_number) == 0 && signal_number == SIGHUP) {
    (*server)->ReloadCredentials();
  }
  Log(LogLevel::kInfo, "shutting down", {{"signal", strsignal(signal_number)}});
  if (health != nullptr) health->SetNotServing();
  // Scrapes read the server: stop them first.
  metrics.exporter.reset();
  (*server)->Shutdown();
  Log(LogLevel::kInfo, "stopped");
  return 0;
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  const std::vector<char*> positional =
      paratune::ParseFlags(argc, argv, paratune::kUsage, "server/server_main.cc");
  if (!paratune::NoPositionalArguments(positional, "paratune-server")) return 2;
  return paratune::Main();
}
