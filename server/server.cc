#include "server/server.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc_server.h"
#include "common/hostname.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "grpcpp/health_check_service_interface.h"
#include "server/security/listen_address.h"
#include "server/store/sqlite_search_store.h"

namespace paratune {

ParatuneServer::ParatuneServer(const Options& options)
    : heartbeat_interval_(options.heartbeat_interval), token_file_(options.security.token_file) {}

absl::StatusOr<std::unique_ptr<ParatuneServer>> ParatuneServer::Start(Options options) {
  PT_ASSIGN_OR_RETURN(const ServerSecurity security, LoadServerSecurity(options.security));
  PT_RETURN_IF_ERROR(CheckListenAddress("address", options.address,
                                        security.protects_remote_access() || options.allow_remote));
  if (options.heartbeat_interval < absl::Milliseconds(10) ||
      options.heartbeat_interval > absl::Hours(1)) {
    return absl::InvalidArgumentError(absl::StrCat("heartbeat_interval (",
                                                   absl::FormatDuration(options.heartbeat_interval),
                                                   ") must be in [10ms, 1h]"));
  }
  PT_RETURN_IF_ERROR(ValidateLimits(options.limits));
  std::unique_ptr<ParatuneServer> server(new ParatuneServer(options));
  ParatuneServer* self = server.get();
  server->token_processor_ = security.token_processor;
  server->certificates_ = security.certificates;
  Scheduler::Options scheduler_options;
  scheduler_options.clock = options.clock;
  scheduler_options.heartbeat_interval = options.heartbeat_interval;
  scheduler_options.limits = options.limits;
  if (security.token_processor != nullptr) {
    scheduler_options.is_admin = [tokens = security.token_processor](absl::string_view name) {
      return tokens->tokens()->IsAdmin(name);
    };
  }
  PT_ASSIGN_OR_RETURN(std::unique_ptr<SqliteSearchStore> store,
                      SqliteSearchStore::Open(options.db_path));
  PT_ASSIGN_OR_RETURN(server->scheduler_,
                      Scheduler::Create(std::move(scheduler_options), std::move(store)));
  server->wait_list_ =
      std::make_unique<ProbeWaitList>([self](const v1::AcquireProbeRequest& request) {
        return self->scheduler_->fleet().TryAcquireProbe(request);
      });
  server->scheduler_->fleet().AddListener(server->wait_list_.get());
  server->autotuner_service_ =
      std::make_unique<AutotunerService>(server->scheduler_.get(), security.token_processor.get());
  server->worker_service_ = std::make_unique<WorkerService>(
      &server->scheduler_->fleet(), server->wait_list_.get(), security.token_processor.get());

  GrpcServerOptions grpc_options;
  grpc_options.address = options.address;
  grpc_options.credentials = security.credentials;
  grpc_options.services = {server->autotuner_service_.get(), server->worker_service_.get()};
  grpc_options.interceptors = std::move(options.interceptors);
  grpc_options.max_receive_message_bytes =
      std::max(options.limits.max_request_bytes, kGrpcMaxReceiveBytes);
  PT_ASSIGN_OR_RETURN(StartedGrpcServer started, StartGrpcServer(std::move(grpc_options)));
  server->server_ = std::move(started.server);
  server->port_ = started.port;
  // Counts only: the token file's contents are never logged.
  Log(LogLevel::kInfo, "security",
      {{"tls", security.tls ? "on" : "off"},
       {"client_certificates", security.mutual_tls ? "required" : "not required"},
       {"bearer_tokens", absl::StrCat(security.tokens)},
       {"bound_certificates", absl::StrCat(security.bound_certificates)}});
  if (options.slurm_launcher.has_value()) {
    SlurmLauncher::Options& launcher = *options.slurm_launcher;
    launcher.clock = options.clock;
    launcher.job.required_worker_flags = WorkerCredentialFlags(security);
    if (launcher.job.server_address.empty()) {
      absl::StatusOr<std::string> hostname = LocalHostname();
      if (!hostname.ok()) {
        return absl::UnavailableError(absl::StrCat(
            "cannot read this machine's hostname for the Slurm jobs' workers to dial (",
            hostname.status().message(), "); set slurm_launcher.job.server_address"));
      }
      launcher.job.server_address = DialAddress(options.address, server->port_, *hostname);
    }
    Log(LogLevel::kInfo, "submitting probes as Slurm jobs",
        {{"workers_dial", launcher.job.server_address},
         {"job_name_prefix", launcher.job.job_name_prefix}});
    PT_ASSIGN_OR_RETURN(std::unique_ptr<SlurmLauncher> started,
                        SlurmLauncher::Start(std::move(launcher), &server->scheduler_->fleet()));
    server->scheduler_->fleet().AddListener(started.get());
    absl::MutexLock lock(&server->launcher_mu_);
    server->launcher_ = std::move(started);
  }
  if (!options.console_address.empty()) {
    ConsoleServer::Options console;
    console.address = options.console_address;
    console.allow_remote = options.allow_remote;
    console.api.reader = &server->scheduler_->reader();
    console.api.limits = options.limits;
    console.api.tokens = security.token_processor.get();
    PT_ASSIGN_OR_RETURN(server->console_, ConsoleServer::Start(std::move(console)));
  }
  server->lease_checker_ = std::thread([self] { self->CheckLeasesUntilShutdown(); });
  return server;
}

std::optional<SlurmLauncher::Stats> ParatuneServer::slurm_launcher_stats() const {
  absl::MutexLock lock(&launcher_mu_);
  if (launcher_ == nullptr) return std::nullopt;
  return launcher_->stats();
}

ParatuneServer::~ParatuneServer() { Shutdown(); }

void ParatuneServer::ReloadCredentials() {
  if (token_processor_ == nullptr && certificates_ == nullptr) {
    Log(LogLevel::kWarning,
        "nothing to reload: the server runs without --token_file and without TLS");
    return;
  }
  if (token_processor_ != nullptr) {
    const absl::Status status =
        ReloadTokens(token_file_,
                     certificates_->verifies_clients() ? ClientCertificates::kVerified
                                                       : ClientCertificates::kNotVerified,
                     *token_processor_);
    if (status.ok()) {
      // Counts only: the token file's contents are never logged.
      const std::shared_ptr<const TokenTable> tokens = token_processor_->tokens();
      Log(LogLevel::kInfo, "tokens reloaded",
          {{"bearer_tokens", absl::StrCat(tokens->tokens())},
           {"bound_certificates", absl::StrCat(tokens->certificates())},
           {"principals", absl::StrCat(tokens->principals())}});
    } else {
      Log(LogLevel::kError, "token reload failed; the old tokens stay in force",
          {{"error", status.ToString()}});
    }
    absl::MutexLock lock(&reload_mu_);
    ++(status.ok() ? reload_stats_.token_reloads : reload_stats_.token_reload_errors);
  }
  if (certificates_ != nullptr) {
    const absl::Status status = certificates_->Reload();
    if (status.ok()) {
      Log(LogLevel::kInfo,
          "certificates reloaded; new connections get them, open ones keep theirs");
    } else {
      Log(LogLevel::kError, "certificate reload failed; the old certificates stay in force",
          {{"error", status.ToString()}});
    }
    absl::MutexLock lock(&reload_mu_);
    ++(status.ok() ? reload_stats_.certificate_reloads : reload_stats_.certificate_reload_errors);
  }
}

CredentialStats ParatuneServer::credential_stats() const {
  CredentialStats stats;
  {
    absl::MutexLock lock(&reload_mu_);
    stats = reload_stats_;
  }
  if (token_processor_ != nullptr) {
    stats.principals = static_cast<int64_t>(token_processor_->tokens()->principals());
  }
  return stats;
}

void ParatuneServer::CheckLeasesUntilShutdown() {
  // Twice per heartbeat interval: a lost worker is noticed within half an interval of its
  // third missed heartbeat.
  while (!shutting_down_.WaitForNotificationWithTimeout(heartbeat_interval_ / 2)) {
    scheduler_->CheckLeases();
  }
}

void ParatuneServer::Shutdown(absl::Duration grace) {
  absl::MutexLock lock(&shutdown_mu_);
  if (shut_down_) return;
  shut_down_ = true;
  if (!shutting_down_.HasBeenNotified()) shutting_down_.Notify();
  if (lease_checker_.joinable()) lease_checker_.join();
  // Its pages read through the scheduler, which shuts down below.
  console_.reset();
  if (server_ != nullptr) {
    if (auto* health = server_->GetHealthCheckService(); health != nullptr) health->Shutdown();
    // Parked long polls and open watch streams end first, so that the server's shutdown
    // does not wait for them until the grace period runs out.
    wait_list_->Stop();
    scheduler_->Shutdown();
    server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
    server_->Wait();
  }
  if (wait_list_ != nullptr) wait_list_->Stop();
  std::unique_ptr<SlurmLauncher> launcher;
  {
    absl::MutexLock lock(&launcher_mu_);
    launcher = std::move(launcher_);
  }
  // Its jobs run on; a restarted server follows them again.
  if (launcher != nullptr) {
    scheduler_->fleet().RemoveListener(launcher.get());
    launcher->Stop();
  }
}

}  // namespace paratune
