#include "worker/worker_daemon.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/grpc_client.h"
#include "common/grpc_status.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "worker/probe_failure.h"
#include "worker/probe_pipeline.h"

namespace paratune {
namespace {

constexpr absl::Duration kInitialBackoff = absl::Milliseconds(200);
constexpr absl::Duration kMaxBackoff = absl::Seconds(5);
constexpr absl::Duration kRendezvousInitialBackoff = absl::Milliseconds(20);
// DeregisterWorkerRequest.reason's limit.
constexpr size_t kMaxReasonBytes = 1024;

bool Retryable(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kDeadlineExceeded;
}

// The longest prefix of `text` of at most `max_bytes` bytes that does not end inside a UTF-8
// sequence (a proto3 string must stay valid UTF-8).
absl::string_view Utf8Prefix(absl::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t end = max_bytes;
  // text[end] is the first byte cut; a continuation byte (10xxxxxx) there splits a sequence.
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

absl::Status ValidateOptions(const WorkerDaemon::Options& options) {
  if (options.server_address.empty()) {
    return absl::InvalidArgumentError("server_address (\"\") must be host:port");
  }
  if (options.backends.empty()) {
    return absl::InvalidArgumentError("backends (none) must name at least one backend");
  }
  absl::flat_hash_set<std::string> names;
  for (const auto& backend : options.backends) {
    if (!names.insert(backend->Name()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("backends (\"", backend->Name(), "\") is listed twice"));
    }
  }
  if (options.gpus.empty() || options.gpus.size() > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpus (", options.gpus.size(), " GPUs) must list 1 to 64 GPUs"));
  }
  if (options.hostname.empty()) return absl::InvalidArgumentError("hostname (\"\") must be set");
  if (options.max_probes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_probes (", options.max_probes, ") must be >= 0"));
  }
  if (options.deregister_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "deregister_timeout (", absl::FormatDuration(options.deregister_timeout), ") must be > 0"));
  }
  if (options.rpc_timeout <= absl::ZeroDuration() || options.acquire_wait <= absl::ZeroDuration() ||
      options.acquire_wait > absl::Seconds(60)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rpc_timeout (", absl::FormatDuration(options.rpc_timeout),
                     ") must be > 0 and "
                     "acquire_wait (",
                     absl::FormatDuration(options.acquire_wait), ") in (0, 60s]"));
  }
  return absl::OkStatus();
}

}  // namespace

// A probe's window onto the daemon: the scheduler's rendezvous relay.
class WorkerDaemon::DaemonProbeContext : public ProbeContext {
 public:
  DaemonProbeContext(WorkerDaemon* daemon, std::string worker_name, std::string probe)
      : daemon_(daemon), worker_name_(std::move(worker_name)), probe_(std::move(probe)) {}

  absl::StatusOr<std::string> Rendezvous(const std::string& token) override {
    return daemon_->Rendezvous(worker_name_, probe_, token, stop());
  }

 private:
  WorkerDaemon* const daemon_;
  const std::string worker_name_;
  const std::string probe_;
};

WorkerDaemon::WorkerDaemon(Options options,
                           std::shared_ptr<grpc::ChannelCredentials> channel_credentials)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : RealClock()),
      stub_(v1::WorkerService::NewStub(
          grpc::CreateChannel(options_.server_address, std::move(channel_credentials)))) {}

absl::StatusOr<std::unique_ptr<WorkerDaemon>> WorkerDaemon::Start(Options options) {
  PT_RETURN_IF_ERROR(ValidateOptions(options));
  PT_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ChannelCredentials> channel_credentials,
                      LoadClientCredentials(options.credentials));
  std::unique_ptr<WorkerDaemon> daemon(
      new WorkerDaemon(std::move(options), std::move(channel_credentials)));
  const absl::Time give_up = daemon->clock_->Now() + daemon->options_.register_timeout;
  absl::Duration backoff = kInitialBackoff;
  while (true) {
    absl::StatusOr<v1::RegisterWorkerResponse> registered = daemon->CallRegister();
    if (registered.ok()) {
      absl::MutexLock lock(&daemon->mu_);
      daemon->name_ = registered->name();
      daemon->heartbeat_interval_ = absl::Seconds(registered->heartbeat_interval_seconds());
      break;
    }
    if (!Retryable(registered.status()) || daemon->clock_->Now() + backoff > give_up) {
      return registered.status();
    }
    Log(LogLevel::kWarning, "server unreachable; retrying",
        {{"server", daemon->options_.server_address}, {"error", registered.status().ToString()}});
    daemon->clock_->Sleep(backoff);
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
  Log(LogLevel::kInfo, "registered",
      {{"worker", daemon->name()}, {"server", daemon->options_.server_address}});
  WorkerDaemon* self = daemon.get();
  daemon->heartbeat_thread_ = std::thread([self] { self->HeartbeatLoop(); });
  daemon->probe_thread_ = std::thread([self] { self->ProbeLoop(); });
  return daemon;
}

WorkerDaemon::~WorkerDaemon() { Stop(); }

std::string WorkerDaemon::name() const {
  absl::MutexLock lock(&mu_);
  return name_;
}

void WorkerDaemon::Stop(absl::string_view reason) {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  // Leaving first: once leaving_ is set the daemon takes no new probe and never registers
  // again, and the deregistration releases whatever the server leased to it until then: the
  // probe it is running, and one leased while it was leaving, which it drops unrun. The
  // running probe goes back by the deregistration alone, not also by a report of an
  // infrastructure error: the server re-queues it either way (the attempt counted), and a
  // report sent after the deregistration would be refused, so a second path could only race
  // the first. The report remains the fallback when the deregistration fails (a server
  // without DeregisterWorker, or one that stays unreachable).
  Leave(reason);
  {
    absl::MutexLock lock(&mu_);
    if (acquire_context_ != nullptr) acquire_context_->TryCancel();
    if (running_.has_value()) running_->context->Stop();
  }
  stop_.Notify();
  // A daemon whose Start failed has no threads and nothing to report.
  if (!probe_thread_.joinable()) return;
  heartbeat_thread_.join();
  probe_thread_.join();
  Log(LogLevel::kInfo, "stopped", {{"worker", name()}});
}

bool WorkerDaemon::WaitUntilFinished(absl::Duration timeout) const {
  return clock_->WaitForNotification(finished_, timeout);
}

absl::StatusOr<v1::RegisterWorkerResponse> WorkerDaemon::CallRegister() {
  v1::RegisterWorkerRequest request;
  request.set_hostname(options_.hostname);
  for (const v1::Gpu& gpu : options_.gpus) *request.add_gpus() = gpu;
  for (const auto& backend : options_.backends) request.add_backends(backend->Name());
  for (const auto& [key, value] : options_.labels) (*request.mutable_labels())[key] = value;
  for (const std::string& name : options_.command_templates) request.add_command_templates(name);
  v1::RegisterWorkerResponse response;
  PT_RETURN_IF_ERROR(FromGrpcStatus(
      stub_->RegisterWorker(ContextWithTimeout(options_.rpc_timeout).get(), request, &response)));
  return response;
}

absl::Status WorkerDaemon::Reregister(const std::string& stale_name) {
  absl::MutexLock register_lock(&register_mu_);
  {
    absl::MutexLock lock(&mu_);
    // A worker that deregistered stays gone: the server would lease a new registration
    // probes that nobody runs.
    if (leaving_ || name_ != stale_name) return absl::OkStatus();
  }
  PT_ASSIGN_OR_RETURN(v1::RegisterWorkerResponse registered, CallRegister());
  {
    absl::MutexLock lock(&mu_);
    name_ = registered.name();
    heartbeat_interval_ = absl::Seconds(registered.heartbeat_interval_seconds());
  }
  Log(LogLevel::kWarning, "registered again: the server had forgotten this worker",
      {{"old_worker", stale_name}, {"worker", registered.name()}});
  return absl::OkStatus();
}

void WorkerDaemon::Leave(absl::string_view reason) {
  // Held across the call, so that no registration is in flight while the worker leaves and
  // none starts after it.
  absl::MutexLock register_lock(&register_mu_);
  std::string name;
  {
    absl::MutexLock lock(&mu_);
    if (leaving_) return;
    leaving_ = true;
    name = name_;
  }
  // A daemon whose Start failed never registered.
  if (name.empty()) return;
  const absl::Status deregistered = CallDeregister(name, reason);
  absl::MutexLock lock(&mu_);
  deregistered_ = deregistered.ok();
}

absl::Status WorkerDaemon::CallDeregister(const std::string& worker_name,
                                          absl::string_view reason) {
  v1::DeregisterWorkerRequest request;
  request.set_worker(worker_name);
  request.set_reason(std::string(Utf8Prefix(reason, kMaxReasonBytes)));
  const absl::Time give_up_at = clock_->Now() + options_.deregister_timeout;
  absl::Duration backoff = kInitialBackoff;
  for (int attempt = 1;; ++attempt) {
    v1::DeregisterWorkerResponse response;
    const absl::Duration timeout = std::min(options_.rpc_timeout, give_up_at - clock_->Now());
    const absl::Status status = FromGrpcStatus(
        stub_->DeregisterWorker(ContextWithTimeout(timeout).get(), request, &response));
    if (status.ok()) {
      Log(LogLevel::kInfo, "deregistered", {{"worker", worker_name}, {"reason", request.reason()}});
      return status;
    }
    // A retry after a lost reply is OK: the server answers OK for a worker it already removed.
    if (!Retryable(status) || clock_->Now() + backoff >= give_up_at) {
      Log(LogLevel::kWarning,
          "deregistering failed; the server declares this worker lost once its heartbeats stop",
          {{"worker", worker_name},
           {"attempt", absl::StrCat(attempt)},
           {"error", status.ToString()}});
      return status;
    }
    clock_->Sleep(backoff);
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

void WorkerDaemon::HeartbeatLoop() {
  while (true) {
    absl::Duration interval;
    v1::HeartbeatRequest request;
    {
      absl::MutexLock lock(&mu_);
      interval = heartbeat_interval_;
    }
    if (clock_->WaitForNotification(stop_, interval)) return;
    {
      absl::MutexLock lock(&mu_);
      // A leaving worker has deregistered, or failed to: then going silent lets the server
      // declare it lost.
      if (leaving_) return;
      request.set_worker(name_);
      if (running_.has_value()) request.add_running_probes(running_->name);
    }
    v1::HeartbeatResponse response;
    const absl::Status status = FromGrpcStatus(
        stub_->Heartbeat(ContextWithTimeout(options_.rpc_timeout).get(), request, &response));
    if (status.code() == absl::StatusCode::kNotFound) {
      if (absl::Status registered = Reregister(request.worker()); !registered.ok()) {
        Log(LogLevel::kWarning, "cannot register again", {{"error", registered.ToString()}});
      }
      continue;
    }
    if (!status.ok()) {
      Log(LogLevel::kWarning, "heartbeat failed", {{"error", status.ToString()}});
      continue;
    }
    absl::MutexLock lock(&mu_);
    for (const std::string& probe : response.cancel_probes()) {
      if (!running_.has_value() || running_->name != probe) continue;
      Log(LogLevel::kInfo, "the server cancelled the running probe", {{"probe", probe}});
      running_->cancelled_by_server = true;
      running_->context->Stop();
    }
  }
}

void WorkerDaemon::ProbeLoop() {
  absl::Duration backoff = kInitialBackoff;
  int64_t probes_ended = 0;
  // Named in every call, so that the server tells a probe whose assignment never reached
  // this worker (handed over again) from one it ran without its report arriving.
  std::string last_probe;
  while (!stop_.HasBeenNotified()) {
    v1::AcquireProbeRequest request;
    request.set_wait_seconds(absl::ToDoubleSeconds(options_.acquire_wait));
    request.set_last_probe(last_probe);
    std::unique_ptr<grpc::ClientContext> context =
        ContextWithTimeout(options_.acquire_wait + options_.rpc_timeout);
    {
      absl::MutexLock lock(&mu_);
      if (leaving_) return;
      request.set_worker(name_);
      acquire_context_ = context.get();
    }
    v1::AcquireProbeResponse response;
    const absl::Status status =
        FromGrpcStatus(stub_->AcquireProbe(context.get(), request, &response));
    {
      absl::MutexLock lock(&mu_);
      acquire_context_ = nullptr;
      // Stop cancels the call once the worker is leaving; that cancellation is no error, and
      // a probe that came back meanwhile was released by the deregistration: it is not run.
      if (leaving_) return;
    }
    if (status.code() == absl::StatusCode::kNotFound) {
      if (absl::Status registered = Reregister(request.worker()); registered.ok()) continue;
    }
    if (!status.ok()) {
      Log(LogLevel::kWarning, "acquiring a probe failed; retrying",
          {{"error", status.ToString()}, {"backoff", absl::FormatDuration(backoff)}});
      if (clock_->WaitForNotification(stop_, backoff)) return;
      backoff = std::min(backoff * 2, kMaxBackoff);
      continue;
    }
    backoff = kInitialBackoff;
    if (!response.has_assignment()) continue;
    last_probe = response.assignment().name();
    RunAndReport(response.assignment(), request.worker());
    if (++probes_ended == options_.max_probes) {
      Log(LogLevel::kInfo, "ran its last probe",
          {{"worker", request.worker()}, {"probes", absl::StrCat(probes_ended)}});
      // After the last report, so that the server has the result before the worker goes.
      Leave(absl::StrCat("ran the ", probes_ended, " probes it was started for"));
      finished_.Notify();
      return;
    }
  }
}

void WorkerDaemon::RunAndReport(const v1::ProbeAssignment& assignment,
                                const std::string& worker_name) {
  const absl::Time start = clock_->Now();
  Log(LogLevel::kInfo, "probe started",
      {{"probe", assignment.name()}, {"backend", assignment.backend()}});
  auto backend = std::find_if(
      options_.backends.begin(), options_.backends.end(),
      [&](const auto& candidate) { return candidate->Name() == assignment.backend(); });
  v1::ProbeResult result;
  if (backend == options_.backends.end()) {
    // The server only leases probes of registered backends; a mismatch is its problem or
    // a stale registration, so another worker should try.
    result.set_outcome(v1::PROBE_INFRA_ERROR);
    result.set_backend(assignment.backend());
    result.set_message(
        absl::StrCat("worker ", worker_name, " has no backend \"", assignment.backend(), "\""));
    result.set_wall_seconds(absl::ToDoubleSeconds(clock_->Now() - start));
  } else {
    DaemonProbeContext context(this, worker_name, assignment.name());
    {
      absl::MutexLock lock(&mu_);
      running_ = RunningProbe{assignment.name(), &context, false};
      if (leaving_) context.Stop();
    }
    result = RunProbe(**backend, assignment, context, *clock_);
    bool taken_back = false;
    {
      absl::MutexLock lock(&mu_);
      // The server took the probe back (it cancelled it, or the deregistration re-queued
      // it): a report would be refused.
      taken_back = running_->cancelled_by_server || deregistered_;
      running_.reset();
    }
    if (taken_back) return;
  }
  const absl::Status reported = Report(worker_name, assignment.name(), result);
  if (reported.code() == absl::StatusCode::kInvalidArgument) {
    // Unreported, the probe would stay leased to this worker until its deadline and grace
    // passed (up to a day) before the server re-queued it.
    Log(LogLevel::kWarning, "the server refused the result; reporting the probe as crashed",
        {{"probe", assignment.name()}, {"error", reported.ToString()}});
    result = ResultRefusedByServer(assignment.backend(), reported,
                                   absl::ToDoubleSeconds(clock_->Now() - start));
    // Report logs a failure itself; a second refusal leaves the lease to its deadline.
    Report(worker_name, assignment.name(), result).IgnoreError();
  }
  if (options_.on_probe_finished) options_.on_probe_finished(assignment, result);
}

absl::StatusOr<std::string> WorkerDaemon::Rendezvous(const std::string& worker_name,
                                                     const std::string& probe,
                                                     const std::string& token,
                                                     const absl::Notification& stop) {
  v1::RendezvousRequest request;
  request.set_worker(worker_name);
  request.set_probe(probe);
  request.set_token(token);
  // Members start within moments of each other, so the first polls are quick.
  absl::Duration backoff = kRendezvousInitialBackoff;
  while (true) {
    v1::RendezvousResponse response;
    const absl::Status status = FromGrpcStatus(
        stub_->Rendezvous(ContextWithTimeout(options_.rpc_timeout).get(), request, &response));
    if (status.ok() && !response.token().empty()) return response.token();
    if (!status.ok() && !Retryable(status)) return status;
    if (clock_->WaitForNotification(stop, backoff)) {
      return absl::CancelledError(absl::StrCat("probe ", probe, " was stopped during rendezvous"));
    }
    backoff = std::min(backoff * 2, kMaxBackoff / 10);
  }
}

absl::Status WorkerDaemon::Report(const std::string& worker_name, const std::string& probe,
                                  const v1::ProbeResult& result) {
  v1::ReportProbeRequest request;
  request.set_worker(worker_name);
  request.set_probe(probe);
  *request.mutable_result() = result;
  absl::Duration backoff = kInitialBackoff;
  const absl::Time give_up_at = clock_->Now() + options_.report_retry_window;
  for (int attempt = 1;; ++attempt) {
    v1::ReportProbeResponse response;
    const absl::Status status = FromGrpcStatus(
        stub_->ReportProbe(ContextWithTimeout(options_.rpc_timeout).get(), request, &response));
    if (status.ok()) {
      Log(LogLevel::kInfo, "probe reported",
          {{"probe", probe},
           {"outcome", v1::ProbeOutcome_Name(result.outcome())},
           {"tflops_per_gpu", absl::StrCat(result.model_tflops_per_gpu())}});
      return status;
    }
    // While stopping, one retry at most: the server re-queues an unreported probe anyway
    // once this worker's heartbeats stop.
    const bool give_up = !Retryable(status) || clock_->Now() + backoff > give_up_at ||
                         (stop_.HasBeenNotified() && attempt >= 2);
    Log(LogLevel::kWarning,
        give_up ? "reporting a probe failed; dropping the result"
                : "reporting a probe failed; retrying",
        {{"probe", probe}, {"attempt", absl::StrCat(attempt)}, {"error", status.ToString()}});
    if (give_up) return status;
    if (clock_->WaitForNotification(stop_, backoff)) continue;
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

}  // namespace paratune
