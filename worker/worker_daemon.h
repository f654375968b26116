// The worker daemon (DESIGN.md §8): registers with the scheduler, heartbeats, long-polls for
// probes, runs each with its backend under the probe's deadline (probe_pipeline.h), and
// reports the result;
// when it stops, or has run max_probes probes, it deregisters, so that the server leases it
// nothing more and does not count it lost. A backend that fails, throws or hangs past the
// deadline becomes a ProbeResult; it never takes the daemon down. A result the server
// refuses as out of range (INVALID_ARGUMENT) is reported again as a crash quoting the
// refusal (probe_failure.h), so that the probe's lease ends at once.
#ifndef PARATUNE_WORKER_WORKER_DAEMON_H_
#define PARATUNE_WORKER_WORKER_DAEMON_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/client_credentials.h"
#include "common/clock.h"
#include "grpcpp/client_context.h"
#include "grpcpp/security/credentials.h"
#include "proto/worker.pb.h"
#include "proto/worker_service.grpc.pb.h"
#include "worker/probe_backend.h"

namespace paratune {

// Thread-safe. Runs one probe at a time.
class WorkerDaemon {
 public:
  struct Options {
    // host:port of paratune-server.
    std::string server_address = "127.0.0.1:50051";
    // TLS, client certificate and bearer token for the server (a worker or admin token);
    // all empty dials in plaintext without a token.
    ClientCredentialsOptions credentials;
    // At least one, with distinct names.
    std::vector<std::unique_ptr<ProbeBackend>> backends;
    // The GPUs this worker offers, 1 .. 64.
    std::vector<v1::Gpu> gpus;
    std::string hostname;
    std::map<std::string, std::string> labels;
    // Names of the command backend's launch templates (CommandBackend::TemplateNames), sent
    // as RegisterWorkerRequest.command_templates; the server checks them.
    std::vector<std::string> command_templates;
    // Deadline of every unary call to the server.
    absl::Duration rpc_timeout = absl::Seconds(10);
    // How long leaving keeps trying DeregisterWorker (unreachable server: retried) before it
    // gives up with a warning; the server then declares the worker lost once its heartbeats
    // stop. Short, since it delays the worker's exit.
    absl::Duration deregister_timeout = absl::Seconds(5);
    // Longest AcquireProbe long poll (the call's deadline adds rpc_timeout).
    absl::Duration acquire_wait = absl::Seconds(10);
    // How long Start keeps trying to reach the server.
    absl::Duration register_timeout = absl::Seconds(30);
    // How long a result whose report the server could not take (unreachable, restarting) is
    // retried before it is dropped. A restarted server accepts reports for probes leased
    // before it stopped, so this should outlast a restart.
    absl::Duration report_retry_window = absl::Minutes(10);
    // Called on the probe thread with each probe's result once it is reported or given up
    // (the crash reported instead of a result the server refused; not for probes the server
    // cancelled); e.g. the binary's metrics. May be empty.
    std::function<void(const v1::ProbeAssignment&, const v1::ProbeResult&)> on_probe_finished;
    // After this many probes have ended (reported, or stopped because the server cancelled
    // them) the daemon asks for no more, deregisters and WaitUntilFinished returns true; 0:
    // no limit. A worker started for one probe in its own Slurm job exits after it
    // (server/slurm/slurm_launcher.h).
    int64_t max_probes = 0;
    // Source of time for every wait of the daemon (the registration, acquire, report and
    // deregistration backoffs, the heartbeat interval, probe deadlines, WaitUntilFinished),
    // for the retry windows and for ProbeResult.wall_seconds; RealClock() when null. Not
    // owned; outlives the daemon. The deadlines of the calls to the server (rpc_timeout,
    // acquire_wait) are gRPC's, on the wall clock.
    Clock* clock = nullptr;
  };

  // Reads the credentials, registers with the server, retrying while it is unreachable, then
  // starts the heartbeat and probe threads. INVALID_ARGUMENT naming the option for bad
  // options; LoadClientCredentials' errors; the server's error when it refuses the
  // registration (UNAUTHENTICATED or PERMISSION_DENIED for a missing or wrong token);
  // UNAVAILABLE or DEADLINE_EXCEEDED when it stayed unreachable for register_timeout (a TLS
  // handshake that fails, e.g. for a server certificate tls_ca did not sign, looks so too).
  static absl::StatusOr<std::unique_ptr<WorkerDaemon>> Start(Options options);

  WorkerDaemon(const WorkerDaemon&) = delete;
  WorkerDaemon& operator=(const WorkerDaemon&) = delete;
  // Stop()s.
  ~WorkerDaemon();

  // workers/{id}; changes when the daemon registers again after the server forgot it.
  std::string name() const;

  // Leaves the server and ends the daemon: from the call on it takes no new probe and never
  // registers again; it deregisters with `reason` (for the server's events and logs; cut to
  // 1,024 bytes), which hands a running probe back to the server (re-queued at once, the
  // attempt counted), then stops that probe without reporting it, ends the long poll and
  // joins the threads. When the deregistration fails within deregister_timeout (logged), a
  // running probe is reported as an infrastructure error instead, so the server still
  // re-queues it at once. Blocks for up to deregister_timeout plus the time the backend
  // takes to stop. Idempotent; later calls return at once.
  void Stop(absl::string_view reason = "the worker daemon stopped");

  // Waits up to `timeout` on the daemon's clock for it to end options.max_probes probes and
  // deregister; whether it has. Always false without a limit.
  bool WaitUntilFinished(absl::Duration timeout) const;

 private:
  // The probe being run.
  struct RunningProbe {
    std::string name;
    // Its context, owned by the probe thread while the probe runs: Stop() tells it to stop.
    ProbeContext* context = nullptr;
    // Set when the server told the worker to drop it: no report is sent.
    bool cancelled_by_server = false;
  };

  class DaemonProbeContext;

  WorkerDaemon(Options options, std::shared_ptr<grpc::ChannelCredentials> channel_credentials);

  absl::StatusOr<v1::RegisterWorkerResponse> CallRegister();
  // Registers again unless another thread already replaced `stale_name` or the daemon is
  // leaving (then OK without registering).
  absl::Status Reregister(const std::string& stale_name);
  // Once: marks the daemon leaving and deregisters it (see Stop). Later calls wait for the
  // first to finish.
  void Leave(absl::string_view reason);
  // DeregisterWorker, retried while the server is unreachable, for up to deregister_timeout.
  absl::Status CallDeregister(const std::string& worker_name, absl::string_view reason);
  void HeartbeatLoop();
  void ProbeLoop();
  void RunAndReport(const v1::ProbeAssignment& assignment, const std::string& worker_name);
  // The scheduler's Rendezvous, retried with backoff until gang[0]'s token is there;
  // CANCELLED once `stop` is notified.
  absl::StatusOr<std::string> Rendezvous(const std::string& worker_name, const std::string& probe,
                                         const std::string& token, const absl::Notification& stop);
  // ReportProbe, retried while the server is unreachable, for up to report_retry_window.
  // OK once reported; else the error it gave up on.
  absl::Status Report(const std::string& worker_name, const std::string& probe,
                      const v1::ProbeResult& result);

  const Options options_;
  Clock* const clock_;
  std::unique_ptr<v1::WorkerService::Stub> stub_;
  absl::Notification stop_;
  // Notified once max_probes probes have ended.
  absl::Notification finished_;

  // Serializes registrations and the deregistration: two threads that both hear NOT_FOUND
  // register once, and no registration is in flight while the daemon deregisters.
  absl::Mutex register_mu_;
  mutable absl::Mutex mu_ ABSL_ACQUIRED_AFTER(register_mu_);
  std::string name_ ABSL_GUARDED_BY(mu_);
  absl::Duration heartbeat_interval_ ABSL_GUARDED_BY(mu_) = absl::Seconds(2);
  std::optional<RunningProbe> running_ ABSL_GUARDED_BY(mu_);
  // The AcquireProbe call in flight, so Stop can cancel it.
  grpc::ClientContext* acquire_context_ ABSL_GUARDED_BY(mu_) = nullptr;
  // Stop was called.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Leave was called (by Stop, or after the last of max_probes): no new probe, no
  // registration, no heartbeat.
  bool leaving_ ABSL_GUARDED_BY(mu_) = false;
  // The server confirmed the deregistration: it has taken back whatever it leased to this
  // worker, so nothing is reported any more.
  bool deregistered_ ABSL_GUARDED_BY(mu_) = false;

  std::thread heartbeat_thread_;
  std::thread probe_thread_;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_WORKER_DAEMON_H_
