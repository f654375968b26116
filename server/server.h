// The paratune scheduler as a running gRPC server: the Autotuner and WorkerService services,
// health checking and reflection, the background lease check (DESIGN.md §7) and, when asked
// for, the Slurm launcher that submits probes as jobs (§10).
#ifndef PARATUNE_SERVER_SERVER_H_
#define PARATUNE_SERVER_SERVER_H_

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "grpcpp/server.h"
#include "grpcpp/support/server_interceptor.h"
#include "server/autotuner_service.h"
#include "server/console/console_server.h"
#include "server/core/limits.h"
#include "server/core/probe_wait_list.h"
#include "server/core/scheduler.h"
#include "server/core/search_store.h"
#include "server/security/server_security.h"
#include "server/slurm/slurm_launcher.h"
#include "server/worker_service.h"

namespace paratune {

// Thread-safe. Start() it, read port(), Shutdown() (or destroy) it.
class ParatuneServer {
 public:
  struct Options {
    // host:port to listen on; port 0 picks a free port (see port()).
    std::string address = "127.0.0.1:50051";
    // TLS, mutual TLS and bearer tokens (server/security/server_security.h); all empty serves
    // plaintext without tokens, which only a loopback address allows by default.
    ServerSecurityOptions security;
    // Listen on a non-loopback address without TLS and tokens.
    bool allow_remote = false;
    // How often workers heartbeat; one missed for 3 intervals is lost.
    absl::Duration heartbeat_interval = absl::Seconds(2);
    // Per-principal limits and caps on candidates and request sizes (server/core/limits.h).
    Limits limits;
    // Source of time for leases; RealClock() when null. Not owned.
    Clock* clock = nullptr;
    // The SQLite database holding searches, workers, leases and events (created if absent,
    // resumed if not); ":memory:" keeps them only as long as the server runs.
    std::string db_path = ":memory:";
    // Installed on every call, e.g. RpcMetrics' (server/rpc_metrics.h).
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
        interceptors;
    // When set, probes no worker can host are submitted as Slurm jobs. An empty
    // job.server_address becomes DialAddress(address, the bound port, this host's name);
    // the clock is the server's; job.required_worker_flags become the worker flags the
    // security needs (WorkerCredentialFlags).
    std::optional<SlurmLauncher::Options> slurm_launcher;
    // host:port (IPv4) of the web console (server/console/console_server.h); empty serves
    // none. Port 0 picks a free port (see console_port()). Loopback only with a token file;
    // elsewhere without one only with allow_remote.
    std::string console_address;
  };

  // Reads the security files, opens the database, resumes what it holds, listens and serves.
  // INVALID_ARGUMENT for a malformed address, heartbeat interval or limits (ValidateLimits);
  // LoadServerSecurity's errors; FAILED_PRECONDITION for a non-loopback address without TLS
  // and tokens or allow_remote, or a database written by a newer server; UNAVAILABLE when
  // the address
  // cannot be bound or the database cannot be opened (or another server holds it);
  // SlurmLauncher::Start's errors (a launcher whose worker_args lack the credentials the
  // security needs among them); ConsoleServer::Start's errors.
  static absl::StatusOr<std::unique_ptr<ParatuneServer>> Start(Options options);

  ParatuneServer(const ParatuneServer&) = delete;
  ParatuneServer& operator=(const ParatuneServer&) = delete;
  // Shutdown()s.
  ~ParatuneServer();

  // The bound port.
  int port() const { return port_; }
  // The web console's bound port; 0 without a console.
  int console_port() const { return console_ == nullptr ? 0 : console_->port(); }

  // The scheduler's counts, for the binary's metrics (server/core/scheduler_metrics.h).
  SchedulerStats stats() const { return scheduler_->Stats(); }

  // The Slurm launcher's counts (server/slurm/slurm_launcher_metrics.h); nullopt without one.
  std::optional<SlurmLauncher::Stats> slurm_launcher_stats() const;

  // Reads the token file and the TLS files again, whichever the server has (SIGHUP in
  // paratune-server): calls are checked against the new token file from then on, and new
  // handshakes present the new certificate within ServerCertificates::kRefreshSeconds; open
  // connections and admitted calls go on. Each part that fails to load leaves its old
  // credentials in force. Logs each result and counts it (credential_stats()).
  void ReloadCredentials() ABSL_LOCKS_EXCLUDED(reload_mu_);

  // The reloads so far and the principals in force, for the binary's metrics
  // (server/security/credential_metrics.h).
  CredentialStats credential_stats() const ABSL_LOCKS_EXCLUDED(reload_mu_);

  // Ends parked long polls and watch streams, then stops serving once in-flight calls have
  // finished and clients have closed their connections (at most `grace`; then calls are
  // cancelled and connections dropped). Idempotent.
  void Shutdown(absl::Duration grace = absl::Seconds(5));

 private:
  explicit ParatuneServer(const Options& options);
  void CheckLeasesUntilShutdown();

  const absl::Duration heartbeat_interval_;
  const std::string token_file_;
  std::shared_ptr<TokenAuthMetadataProcessor> token_processor_;
  // Declared before server_, which uses them, so that they outlive it.
  std::shared_ptr<ServerCertificates> certificates_;
  mutable absl::Mutex reload_mu_;
  CredentialStats reload_stats_ ABSL_GUARDED_BY(reload_mu_);
  std::unique_ptr<ProbeWaitList> wait_list_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<AutotunerService> autotuner_service_;
  std::unique_ptr<WorkerService> worker_service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  // Reads through scheduler_: declared after it, so destroyed before it.
  std::unique_ptr<ConsoleServer> console_;
  absl::Notification shutting_down_;
  std::thread lease_checker_;
  // A listener of the scheduler's queued probes once it has started; taken (and removed as a
  // listener) by Shutdown.
  mutable absl::Mutex launcher_mu_;
  std::unique_ptr<SlurmLauncher> launcher_ ABSL_GUARDED_BY(launcher_mu_);
  absl::Mutex shutdown_mu_;
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_SERVER_H_
