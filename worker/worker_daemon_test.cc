#include "worker/worker_daemon.h"

#include <cmath>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/fake_clock.h"
#include "gmock/gmock.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "proto/worker.pb.h"
#include "proto/worker_service.grpc.pb.h"
#include "worker/fake_backend.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

// How long a test waits, in real time, for something the daemon does.
constexpr absl::Duration kWait = absl::Seconds(30);
// On the daemon's fake clock.
constexpr absl::Duration kHeartbeatInterval = absl::Seconds(1);
constexpr absl::Duration kStepTime = absl::Seconds(1);

// A scripted WorkerService: hands out the probes a test queues, records reports and
// deregistrations, and can forget the worker or cancel a probe on the next heartbeat. A
// deregistered worker is unknown to it (NOT_FOUND), as to the real server, and like the
// real server it refuses a result with a NaN mean step time (INVALID_ARGUMENT).
class FakeWorkerService final : public v1::WorkerService::Service {
 public:
  grpc::Status RegisterWorker(grpc::ServerContext*, const v1::RegisterWorkerRequest* request,
                              v1::RegisterWorkerResponse* response) override {
    absl::MutexLock lock(&mu_);
    ++registrations_;
    last_registration_ = *request;
    response->set_name(absl::StrCat("workers/", registrations_));
    response->set_heartbeat_interval_seconds(absl::ToDoubleSeconds(kHeartbeatInterval));
    calls_.push_back(absl::StrCat("RegisterWorker ", response->name()));
    return grpc::Status::OK;
  }

  grpc::Status Heartbeat(grpc::ServerContext*, const v1::HeartbeatRequest* request,
                         v1::HeartbeatResponse* response) override {
    absl::MutexLock lock(&mu_);
    if (park_calls_) {
      ++parked_heartbeats_;
      auto removed = [this, request] {
        mu_.AssertHeld();
        return removed_.count(request->worker()) > 0;
      };
      mu_.AwaitWithTimeout(absl::Condition(&removed), kWait);
      --parked_heartbeats_;
    }
    if (removed_.count(request->worker()) > 0) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown worker");
    }
    if (forget_) {
      forget_ = false;
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown worker");
    }
    for (const std::string& probe : request->running_probes()) {
      if (probe == cancel_) response->add_cancel_probes(probe);
    }
    return grpc::Status::OK;
  }

  grpc::Status AcquireProbe(grpc::ServerContext*, const v1::AcquireProbeRequest* request,
                            v1::AcquireProbeResponse* response) override {
    absl::MutexLock lock(&mu_);
    last_probe_asked_ = request->last_probe();
    auto queued_or_removed = [this, request] {
      mu_.AssertHeld();
      return !queue_.empty() || removed_.count(request->worker()) > 0;
    };
    // A short long poll keeps the daemon's Stop quick, unless the test parks calls.
    const bool park = park_calls_;
    if (park) ++parked_acquires_;
    mu_.AwaitWithTimeout(absl::Condition(&queued_or_removed),
                         park ? kWait : absl::Milliseconds(100));
    if (park) --parked_acquires_;
    if (!queue_.empty()) {
      *response->mutable_assignment() = std::move(queue_.front());
      queue_.pop_front();
    } else if (removed_.count(request->worker()) > 0) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown worker");
    }
    return grpc::Status::OK;
  }

  // Records the call. With AnswerDeregistrationWith, answers that code (as a server older
  // than DeregisterWorker answers UNIMPLEMENTED); else removes the worker,
  // first handing a parked AcquireProbe the probe of LeaseOnDeregistration, as if the server
  // had leased it a moment before.
  grpc::Status DeregisterWorker(grpc::ServerContext*, const v1::DeregisterWorkerRequest* request,
                                v1::DeregisterWorkerResponse*) override {
    absl::MutexLock lock(&mu_);
    deregistrations_.push_back(*request);
    calls_.push_back(absl::StrCat("DeregisterWorker ", request->worker()));
    if (deregistration_code_ != grpc::StatusCode::OK) {
      return grpc::Status(deregistration_code_, "deregistration refused by the test");
    }
    if (lease_on_deregistration_.has_value()) {
      queue_.push_back(*std::move(lease_on_deregistration_));
      lease_on_deregistration_.reset();
      auto taken = [this] {
        mu_.AssertHeld();
        return queue_.empty();
      };
      mu_.AwaitWithTimeout(absl::Condition(&taken), kWait);
    }
    removed_.insert(request->worker());
    return grpc::Status::OK;
  }

  // Has no token for the first two calls, then "nccl-id".
  grpc::Status Rendezvous(grpc::ServerContext*, const v1::RendezvousRequest* request,
                          v1::RendezvousResponse* response) override {
    absl::MutexLock lock(&mu_);
    if (++rendezvous_calls_ > 2) response->set_token("nccl-id");
    return grpc::Status::OK;
  }

  grpc::Status ReportProbe(grpc::ServerContext*, const v1::ReportProbeRequest* request,
                           v1::ReportProbeResponse*) override {
    absl::MutexLock lock(&mu_);
    if (removed_.count(request->worker()) > 0) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown worker");
    }
    if (std::isnan(request->result().mean_step_time_seconds())) {
      calls_.push_back(absl::StrCat("ReportProbe ", request->probe(), " refused"));
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "result.mean_step_time_seconds (nan) must be in [0, 1e+06]");
    }
    reports_.push_back(*request);
    calls_.push_back(absl::StrCat("ReportProbe ", request->probe()));
    return grpc::Status::OK;
  }

  void Queue(v1::ProbeAssignment assignment) {
    absl::MutexLock lock(&mu_);
    queue_.push_back(std::move(assignment));
  }
  void CancelOnHeartbeat(const std::string& probe) {
    absl::MutexLock lock(&mu_);
    cancel_ = probe;
  }
  void Forget() {
    absl::MutexLock lock(&mu_);
    forget_ = true;
  }
  // Heartbeats wait until the worker is deregistered (then NOT_FOUND); AcquireProbe waits
  // until a probe is queued or the worker is deregistered.
  void ParkCalls() {
    absl::MutexLock lock(&mu_);
    park_calls_ = true;
  }
  void AnswerDeregistrationWith(grpc::StatusCode code) {
    absl::MutexLock lock(&mu_);
    deregistration_code_ = code;
  }
  void LeaseOnDeregistration(v1::ProbeAssignment assignment) {
    absl::MutexLock lock(&mu_);
    lease_on_deregistration_ = std::move(assignment);
  }
  // Waits up to kWait until a Heartbeat and an AcquireProbe are parked; whether they are.
  bool WaitUntilParked() {
    absl::MutexLock lock(&mu_);
    auto parked = [this] {
      mu_.AssertHeld();
      return parked_heartbeats_ > 0 && parked_acquires_ > 0;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&parked), kWait);
  }
  size_t queued() {
    absl::MutexLock lock(&mu_);
    return queue_.size();
  }
  // Waits up to kWait until an AcquireProbe names `probe` as its last_probe; whether one did.
  bool WaitForAcquireNaming(const std::string& probe) {
    absl::MutexLock lock(&mu_);
    auto named = [this, &probe] {
      mu_.AssertHeld();
      return last_probe_asked_ == probe;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&named), kWait);
  }

  // The first `n` reports, waiting for them up to kWait; fewer if they do not come.
  std::vector<v1::ReportProbeRequest> WaitForReports(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n] {
      mu_.AssertHeld();
      return reports_.size() >= n;
    };
    mu_.AwaitWithTimeout(absl::Condition(&enough), kWait);
    return reports_;
  }

  bool WaitForRegistrations(int n) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n] {
      mu_.AssertHeld();
      return registrations_ >= n;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), kWait);
  }

  v1::RegisterWorkerRequest last_registration() {
    absl::MutexLock lock(&mu_);
    return last_registration_;
  }
  int registrations() {
    absl::MutexLock lock(&mu_);
    return registrations_;
  }
  std::vector<v1::DeregisterWorkerRequest> deregistrations() {
    absl::MutexLock lock(&mu_);
    return deregistrations_;
  }
  std::vector<v1::ReportProbeRequest> reports() {
    absl::MutexLock lock(&mu_);
    return reports_;
  }
  // RegisterWorker, ReportProbe and DeregisterWorker calls in order, e.g. "ReportProbe ok",
  // "ReportProbe nan refused".
  std::vector<std::string> calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }

 private:
  absl::Mutex mu_;
  int registrations_ ABSL_GUARDED_BY(mu_) = 0;
  v1::RegisterWorkerRequest last_registration_ ABSL_GUARDED_BY(mu_);
  bool forget_ ABSL_GUARDED_BY(mu_) = false;
  int rendezvous_calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::string cancel_ ABSL_GUARDED_BY(mu_);
  std::deque<v1::ProbeAssignment> queue_ ABSL_GUARDED_BY(mu_);
  // The last AcquireProbe's last_probe; nullopt before the first call.
  std::optional<std::string> last_probe_asked_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::ReportProbeRequest> reports_ ABSL_GUARDED_BY(mu_);
  bool park_calls_ ABSL_GUARDED_BY(mu_) = false;
  int parked_heartbeats_ ABSL_GUARDED_BY(mu_) = 0;
  int parked_acquires_ ABSL_GUARDED_BY(mu_) = 0;
  grpc::StatusCode deregistration_code_ ABSL_GUARDED_BY(mu_) = grpc::StatusCode::OK;
  std::optional<v1::ProbeAssignment> lease_on_deregistration_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> removed_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::DeregisterWorkerRequest> deregistrations_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
};

v1::ProbeAssignment Assignment(const std::string& name, double deadline_seconds = 60) {
  return FakeAssignment(name, deadline_seconds);
}

// The fake backend on the daemon's clock: a run takes one step time (kStepTime) on it.
std::unique_ptr<ProbeBackend> Backend(FakeClock* clock, absl::Notification* hang_started) {
  FakeBackend::Options options;
  options.step_time = kStepTime;
  options.clock = clock;
  options.hang_started = hang_started;
  return std::make_unique<FakeBackend>(options);
}

class WorkerDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);

    WorkerDaemon::Options options;
    options.server_address = absl::StrCat("127.0.0.1:", port);
    options.backends.push_back(Backend(&clock_, &hang_started_));
    v1::Gpu gpu;
    gpu.set_name("simulated H100-80GB");
    gpu.set_memory_bytes(85'520'809'984);
    options.gpus = {gpu, gpu};
    options.hostname = "test-host";
    options.labels = {{"rack", "a1"}};
    options.command_templates = {"megatron-llama", "nemo-llama"};
    options.acquire_wait = absl::Milliseconds(100);
    options.clock = &clock_;
    Configure(options);
    absl::StatusOr<std::unique_ptr<WorkerDaemon>> daemon = WorkerDaemon::Start(std::move(options));
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = *std::move(daemon);
  }

  // Changes the daemon's options before it starts.
  virtual void Configure(WorkerDaemon::Options& options) {}

  void TearDown() override {
    if (daemon_ != nullptr) daemon_->Stop();
    if (server_ != nullptr) server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  }

  // The daemon waits on it: the tests move its heartbeats, backoffs and deadlines.
  FakeClock clock_;
  FakeWorkerService service_;
  absl::Notification hang_started_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<WorkerDaemon> daemon_;
};

TEST_F(WorkerDaemonTest, RegistersItsInventory) {
  EXPECT_EQ(daemon_->name(), "workers/1");
  const v1::RegisterWorkerRequest registration = service_.last_registration();
  EXPECT_EQ(registration.hostname(), "test-host");
  EXPECT_EQ(registration.gpus_size(), 2);
  EXPECT_THAT(registration.backends(), ::testing::ElementsAre("fake"));
  EXPECT_EQ(registration.labels().at("rack"), "a1");
  EXPECT_THAT(registration.command_templates(),
              ::testing::ElementsAre("megatron-llama", "nemo-llama"));
}

TEST_F(WorkerDaemonTest, RunsProbesAndReportsResults) {
  service_.Queue(Assignment("ok"));
  const std::vector<v1::ReportProbeRequest> reports = service_.WaitForReports(1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].worker(), "workers/1");
  EXPECT_EQ(reports[0].probe(), "ok");
  EXPECT_EQ(reports[0].result().outcome(), v1::PROBE_OK);
  // Measured on the daemon's clock, which the backend moved by its one step.
  EXPECT_EQ(reports[0].result().wall_seconds(), absl::ToDoubleSeconds(kStepTime));
}

TEST_F(WorkerDaemonTest, AsksForTheNextProbeNamingTheOneItReceivedLast) {
  EXPECT_TRUE(service_.WaitForAcquireNaming(""));
  service_.Queue(Assignment("ok"));
  EXPECT_TRUE(service_.WaitForAcquireNaming("ok"));
  EXPECT_EQ(service_.reports().size(), 1u);
}

TEST_F(WorkerDaemonTest, FailingBackendsBecomeResultsAndTheDaemonGoesOn) {
  service_.Queue(Assignment("throw"));
  service_.Queue(Assignment("error"));
  v1::ProbeAssignment other_backend = Assignment("cuda-probe");
  other_backend.set_backend("cuda");
  service_.Queue(other_backend);
  service_.Queue(Assignment("ok"));
  const std::vector<v1::ReportProbeRequest> reports = service_.WaitForReports(4);
  ASSERT_EQ(reports.size(), 4u);
  EXPECT_EQ(reports[0].result().outcome(), v1::PROBE_CRASH);
  EXPECT_THAT(reports[0].result().message(), HasSubstr("boom"));
  EXPECT_EQ(reports[1].result().outcome(), v1::PROBE_INFRA_ERROR);
  EXPECT_THAT(reports[1].result().message(), HasSubstr("driver went away"));
  // A backend the worker lacks is another worker's job.
  EXPECT_EQ(reports[2].result().outcome(), v1::PROBE_INFRA_ERROR);
  EXPECT_THAT(reports[2].result().message(), HasSubstr("no backend \"cuda\""));
  EXPECT_EQ(reports[3].result().outcome(), v1::PROBE_OK);
}

// Keeps the first result the daemon hands on_probe_finished.
class FirstFinishedProbeTest : public WorkerDaemonTest {
 protected:
  void Configure(WorkerDaemon::Options& options) override {
    options.on_probe_finished = [this](const v1::ProbeAssignment&, const v1::ProbeResult& result) {
      if (finished_.HasBeenNotified()) return;
      first_finished_ = result;
      finished_.Notify();
    };
  }

  absl::Notification finished_;
  v1::ProbeResult first_finished_;
};

TEST_F(FirstFinishedProbeTest, AResultTheServerRefusesIsReportedAsACrash) {
  service_.Queue(Assignment("nan"));
  const std::vector<v1::ReportProbeRequest> reports = service_.WaitForReports(1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].probe(), "nan");
  const v1::ProbeResult& result = reports[0].result();
  EXPECT_EQ(result.outcome(), v1::PROBE_CRASH);
  EXPECT_EQ(result.backend(), "fake");
  EXPECT_EQ(result.message(),
            "the server refused the result: result.mean_step_time_seconds (nan) must be in [0, "
            "1e+06]");
  EXPECT_EQ(result.wall_seconds(), absl::ToDoubleSeconds(kStepTime));
  // With the fake clock never moved past the probe's step: the crash is reported at once, a
  // refusal not being retried.
  EXPECT_THAT(service_.calls(),
              ::testing::ElementsAre("RegisterWorker workers/1", "ReportProbe nan refused",
                                     "ReportProbe nan"));
  // The worker's metrics count what the server recorded.
  ASSERT_TRUE(finished_.WaitForNotificationWithTimeout(kWait));
  EXPECT_EQ(first_finished_.SerializeAsString(), result.SerializeAsString());
}

TEST_F(WorkerDaemonTest, RendezvousWaitsForTheGangToken) {
  service_.Queue(Assignment("rendezvous"));
  // The server has no token for the first two calls; after each the probe backs off.
  for (int backoff = 0; backoff < 2; ++backoff) {
    // Waiting: the heartbeat, the probe's deadline and the rendezvous backoff.
    clock_.BlockUntilWaiters(3);
    clock_.Advance(absl::Seconds(1));
  }
  const std::vector<v1::ReportProbeRequest> reports = service_.WaitForReports(1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].result().outcome(), v1::PROBE_OK);
  EXPECT_THAT(reports[0].result().message(), HasSubstr("simulated: nccl-id: mean step time"));
}

TEST_F(WorkerDaemonTest, DeadlineStopsAHangingProbe) {
  service_.Queue(Assignment("hang", /*deadline_seconds=*/60));
  ASSERT_TRUE(hang_started_.WaitForNotificationWithTimeout(kWait));
  // Waiting: the heartbeat and the probe's deadline.
  clock_.BlockUntilWaiters(2);
  clock_.Advance(absl::Seconds(59));
  // A second short of it the deadline still waits (the heartbeat waits again).
  clock_.BlockUntilWaiters(2);
  clock_.Advance(absl::Seconds(1));
  const std::vector<v1::ReportProbeRequest> reports = service_.WaitForReports(1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].result().outcome(), v1::PROBE_TIMEOUT);
  EXPECT_THAT(reports[0].result().message(), HasSubstr("deadline of 60 s"));
}

TEST_F(WorkerDaemonTest, ServerCancellationStopsTheProbeWithoutAReport) {
  service_.CancelOnHeartbeat("hang");
  service_.Queue(Assignment("hang"));
  service_.Queue(Assignment("ok"));
  ASSERT_TRUE(hang_started_.WaitForNotificationWithTimeout(kWait));
  // Waiting: the heartbeat and the probe's deadline; the next heartbeat hears of the cancel.
  clock_.BlockUntilWaiters(2);
  clock_.Advance(kHeartbeatInterval);
  // Probes run one at a time, so "ok" is reported only after "hang" was stopped.
  const std::vector<v1::ReportProbeRequest> reports = service_.WaitForReports(1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].probe(), "ok");
}

TEST_F(WorkerDaemonTest, StopDeregistersWithItsNameAndTheReason) {
  daemon_->Stop("paratune-worker received SIGTERM");
  const std::vector<v1::DeregisterWorkerRequest> deregistrations = service_.deregistrations();
  ASSERT_EQ(deregistrations.size(), 1u);
  EXPECT_EQ(deregistrations[0].worker(), "workers/1");
  EXPECT_EQ(deregistrations[0].reason(), "paratune-worker received SIGTERM");
  // Idempotent: the destructor's Stop does not deregister again.
  daemon_->Stop("again");
  EXPECT_EQ(service_.deregistrations().size(), 1u);
}

TEST_F(WorkerDaemonTest, StopHandsTheRunningProbeBackByDeregistering) {
  service_.Queue(Assignment("hang"));
  ASSERT_TRUE(hang_started_.WaitForNotificationWithTimeout(kWait));
  daemon_->Stop("stopping");
  // The deregistration re-queued the probe on the server: the stopped probe is not reported.
  EXPECT_EQ(service_.deregistrations().size(), 1u);
  EXPECT_THAT(service_.reports(), ::testing::IsEmpty());
}

TEST_F(WorkerDaemonTest, WhenDeregisteringFailsStopReportsTheRunningProbe) {
  // A server older than DeregisterWorker answers UNIMPLEMENTED; it still gets the probe back
  // at once, by the report.
  service_.AnswerDeregistrationWith(grpc::StatusCode::UNIMPLEMENTED);
  service_.Queue(Assignment("hang"));
  ASSERT_TRUE(hang_started_.WaitForNotificationWithTimeout(kWait));
  daemon_->Stop("stopping");
  EXPECT_EQ(service_.deregistrations().size(), 1u);
  const std::vector<v1::ReportProbeRequest> reports = service_.reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].probe(), "hang");
  EXPECT_EQ(reports[0].result().outcome(), v1::PROBE_INFRA_ERROR);
}

TEST_F(WorkerDaemonTest, ALeavingWorkerRunsNoProbeAndNeverRegistersAgain) {
  // A heartbeat and the long poll are in flight when the worker leaves; the poll gets a probe
  // leased just before the deregistration, the heartbeat the NOT_FOUND of a removed worker.
  service_.ParkCalls();
  service_.LeaseOnDeregistration(Assignment("ok"));
  // Waiting: the heartbeat.
  clock_.BlockUntilWaiters(1);
  clock_.Advance(kHeartbeatInterval);
  ASSERT_TRUE(service_.WaitUntilParked());
  daemon_->Stop("stopping");
  EXPECT_EQ(service_.queued(), 0u);
  EXPECT_THAT(service_.reports(), ::testing::IsEmpty());
  EXPECT_EQ(service_.registrations(), 1);
  EXPECT_THAT(service_.calls(),
              ::testing::ElementsAre("RegisterWorker workers/1", "DeregisterWorker workers/1"));
}

TEST_F(WorkerDaemonTest, ALongReasonIsCutOnACharacterBoundary) {
  // "é" is two bytes, at bytes 1,023 and 1,024: it is left out whole.
  daemon_->Stop(std::string(1023, 'a') + "\xc3\xa9 and more");
  const std::vector<v1::DeregisterWorkerRequest> deregistrations = service_.deregistrations();
  ASSERT_EQ(deregistrations.size(), 1u);
  EXPECT_EQ(deregistrations[0].reason(), std::string(1023, 'a'));
}

TEST_F(WorkerDaemonTest, RegistersAgainWhenTheServerForgetsIt) {
  service_.Forget();
  // Waiting: the heartbeat.
  clock_.BlockUntilWaiters(1);
  clock_.Advance(kHeartbeatInterval);
  // The heartbeat waits again only once it has registered again.
  clock_.BlockUntilWaiters(1);
  EXPECT_EQ(service_.registrations(), 2);
  EXPECT_EQ(daemon_->name(), "workers/2");
}

TEST_F(WorkerDaemonTest, WithoutAProbeLimitItNeverFinishes) {
  service_.Queue(Assignment("ok"));
  service_.Queue(Assignment("ok"));
  // It takes a probe after its first, and after its second is still not finished.
  ASSERT_EQ(service_.WaitForReports(2).size(), 2u);
  EXPECT_FALSE(daemon_->WaitUntilFinished(absl::ZeroDuration()));
}

class TwoProbeWorkerDaemonTest : public WorkerDaemonTest {
 protected:
  void Configure(WorkerDaemon::Options& options) override { options.max_probes = 2; }
};

TEST_F(TwoProbeWorkerDaemonTest, FinishesAfterItsProbesAndTakesNoMore) {
  // A probe the server cancels ends too: a server-cancelled probe is not coming back.
  service_.CancelOnHeartbeat("hang");
  service_.Queue(Assignment("hang"));
  service_.Queue(Assignment("ok"));
  service_.Queue(Assignment("error"));
  ASSERT_TRUE(hang_started_.WaitForNotificationWithTimeout(kWait));
  // Waiting: the heartbeat and the probe's deadline; the next heartbeat hears of the cancel.
  clock_.BlockUntilWaiters(2);
  clock_.Advance(kHeartbeatInterval);
  // On the fake clock the wait ends only when the daemon finishes.
  ASSERT_TRUE(daemon_->WaitUntilFinished(absl::InfiniteDuration()));
  const std::vector<v1::ReportProbeRequest> reports = service_.WaitForReports(1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].probe(), "ok");
  // It asks for nothing once finished: "error" stays queued.
  EXPECT_EQ(service_.queued(), 1u);
}

TEST_F(TwoProbeWorkerDaemonTest, DeregistersAfterItsLastReport) {
  service_.Queue(Assignment("ok"));
  service_.Queue(Assignment("ok"));
  // Finished means deregistered too: a Slurm job's worker leaves no lost worker behind.
  ASSERT_TRUE(daemon_->WaitUntilFinished(absl::InfiniteDuration()));
  EXPECT_THAT(service_.calls(),
              ::testing::ElementsAre("RegisterWorker workers/1", "ReportProbe ok", "ReportProbe ok",
                                     "DeregisterWorker workers/1"));
  const std::vector<v1::DeregisterWorkerRequest> deregistrations = service_.deregistrations();
  ASSERT_EQ(deregistrations.size(), 1u);
  EXPECT_THAT(deregistrations[0].reason(), HasSubstr("2 probes"));
  // Stopping afterwards, as paratune-worker does, does not deregister again.
  daemon_->Stop("exiting");
  EXPECT_EQ(service_.deregistrations().size(), 1u);
}

TEST(WorkerDaemonStartTest, BadOptionsNameTheOption) {
  WorkerDaemon::Options options;
  options.hostname = "h";
  options.gpus.resize(1);
  EXPECT_EQ(WorkerDaemon::Start(std::move(options)).status(),
            absl::InvalidArgumentError("backends (none) must name at least one backend"));
}

TEST(WorkerDaemonStartTest, AnUnreachableServerIsRetriedUntilTheRegisterTimeout) {
  FakeClock clock;
  WorkerDaemon::Options options;
  // Port 1 on loopback: nothing listens there.
  options.server_address = "127.0.0.1:1";
  options.backends.push_back(Backend(&clock, nullptr));
  options.gpus.resize(1);
  options.hostname = "h";
  options.register_timeout = absl::Seconds(30);
  options.clock = &clock;
  absl::Status started;
  std::thread start([&] { started = WorkerDaemon::Start(std::move(options)).status(); });
  // Backing off after the first attempt; the next is the last within the timeout.
  clock.BlockUntilWaiters(1);
  clock.Advance(absl::Seconds(30));
  start.join();
  EXPECT_EQ(started.code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace paratune
