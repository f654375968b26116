// paratune-server: the scheduler. Flags are parsed here only; everything else is in
// server/server.h.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "common/port_file.h"
#include "metrics/http_exporter.h"
#include "metrics/metrics_endpoint.h"
#include "metrics/registry.h"
#include "proto/autotuner_service.grpc.pb.h"
#include "proto/worker_service.grpc.pb.h"
#include "server/rpc_metrics.h"
#include "server/scheduler_metrics.h"
#include "server/server.h"

ABSL_FLAG(std::string, address, "127.0.0.1:50051",
          "host:port to listen on. Port 0 picks a free port (see --port_file). Only loopback "
          "hosts are accepted unless --insecure_allow_remote is given.");
ABSL_FLAG(std::string, port_file, "",
          "If set, the bound port is written to this file (decimal, newline-terminated) once "
          "the server listens. The file is written under a temporary name and renamed, so a "
          "reader never sees a partial port.");
ABSL_FLAG(double, heartbeat_interval_seconds, 2,
          "How often workers must heartbeat, in seconds. A worker silent for 3 intervals is "
          "declared lost and its probe is re-queued.");
ABSL_FLAG(std::string, db, "paratune.db",
          "SQLite database of searches, candidates, probe results, workers, leases and "
          "events; created if absent. A server started on an existing database resumes its "
          "unfinished searches, and probes leased before it stopped are still accepted from "
          "their workers. One server per database. \":memory:\" keeps nothing after exit.");
ABSL_FLAG(bool, insecure_allow_remote, false,
          "Allow a non-loopback --address although the connection has no TLS and no "
          "authentication yet. Anyone who can reach the port can create searches and "
          "register workers.");
ABSL_FLAG(std::string, metrics_address, "",
          "host:port (IPv4) to serve Prometheus metrics on, at /metrics; empty serves none. "
          "Port 0 picks a free port (see --metrics_port_file). The endpoint is plain HTTP and "
          "read-only; scrape it from inside the cluster.");
ABSL_FLAG(std::string, metrics_port_file, "",
          "If set, the bound metrics port is written to this file like --port_file.");
ABSL_FLAG(std::string, log_level, "info",
          "Least severe log lines written: debug, info, warning or error.");

namespace paratune {
namespace {

constexpr char kUsage[] =
    "the paratune scheduler.\n"
    "\n"
    "Serves the paratune.v1.Autotuner API (clients: create, watch and cancel searches; "
    "estimate and plan) and the paratune.v1.WorkerService API (paratune-worker daemons), "
    "with gRPC health checking and server reflection. Its state is kept in a SQLite "
    "database (--db), so it survives restarts and crashes. With --metrics_address it serves "
    "Prometheus metrics at /metrics (docs/operations.md lists them). Logs are one line per "
    "event on stderr (logfmt). SIGINT or SIGTERM shut it down gracefully.\n"
    "\n"
    "Usage: paratune-server [--address=127.0.0.1:50051] [--db=paratune.db] [--port_file=PATH]\n"
    "                       [--heartbeat_interval_seconds=2] [--insecure_allow_remote]\n"
    "                       [--metrics_address=HOST:PORT] [--metrics_port_file=PATH]\n"
    "                       [--log_level=info]\n";

// The server's metrics: RPC counts and latency (an interceptor, installed before the server
// starts) and the scheduler's counts (read from the server at every scrape).
struct ServerMetrics {
  metrics::Registry registry;
  std::unique_ptr<RpcMetrics> rpc;
  std::unique_ptr<metrics::HttpExporter> exporter;
};

std::vector<std::string> ServedMethods() {
  std::vector<std::string> methods = StandardGrpcMethods();
  for (const std::string& service :
       {v1::Autotuner::service_full_name(), v1::WorkerService::service_full_name()}) {
    for (std::string& method : MethodsOfService(service)) methods.push_back(std::move(method));
  }
  return methods;
}

int Main() {
  SetLogComponent("paratune-server");
  absl::StatusOr<LogLevel> log_level = ParseLogLevel("--log_level", absl::GetFlag(FLAGS_log_level));
  if (!log_level.ok()) {
    Log(LogLevel::kError, "bad flags", {{"error", log_level.status().ToString()}});
    return 2;
  }
  SetMinLogLevel(*log_level);
  // Block the shutdown signals in every thread (gRPC's threads inherit this mask) and take
  // them synchronously with sigwait below: no work in a signal handler.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

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
  options.allow_remote = absl::GetFlag(FLAGS_insecure_allow_remote);
  options.db_path = absl::GetFlag(FLAGS_db);
  options.heartbeat_interval = absl::Seconds(absl::GetFlag(FLAGS_heartbeat_interval_seconds));
  options.interceptors.push_back(metrics.rpc->NewInterceptorFactory());
  absl::StatusOr<std::unique_ptr<ParatuneServer>> server =
      ParatuneServer::Start(std::move(options));
  if (!server.ok()) {
    Log(LogLevel::kError, "cannot start", {{"error", server.status().ToString()}});
    return 1;
  }
  const int port = (*server)->port();
  Log(LogLevel::kInfo, "listening",
      {{"address", absl::GetFlag(FLAGS_address)}, {"port", absl::StrCat(port)}});
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
  absl::StatusOr<std::unique_ptr<metrics::HttpExporter>> exporter =
      metrics::StartMetricsEndpoint(absl::GetFlag(FLAGS_metrics_address),
                                    absl::GetFlag(FLAGS_metrics_port_file), metrics.registry);
  if (!exporter.ok()) {
    Log(LogLevel::kError, "cannot serve metrics", {{"error", exporter.status().ToString()}});
    return 1;
  }
  metrics.exporter = *std::move(exporter);

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  Log(LogLevel::kInfo, "shutting down", {{"signal", strsignal(signal_number)}});
  // Scrapes read the server: stop them first.
  metrics.exporter.reset();
  (*server)->Shutdown();
  Log(LogLevel::kInfo, "stopped");
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
    return absl::EndsWith(path, "server/server_main.cc");
  };
  usage_config.contains_helpshort_flags = usage_config.contains_help_flags;
  absl::SetFlagsUsageConfig(usage_config);
  const std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() > 1) {
    std::fprintf(stderr, "paratune-server takes no positional arguments (got \"%s\"); see --help\n",
                 positional[1]);
    return 2;
  }
  return paratune::Main();
}
