#include "server/core/scheduler_test_fixture.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "convert/search_view.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "server/core/launch_target.h"
#include "server/core/scheduler_invariants.h"
#include "server/core/test_probe_result.h"
#include "server/core/test_requests.h"
#include "server/store/sqlite_search_store.h"

namespace paratune {

using ::testing::IsEmpty;

v1::ProbeResult OkResult(double tflops) {
  v1::ProbeResult result;
  result.set_outcome(v1::PROBE_OK);
  result.set_backend("sim");
  result.set_simulated(true);
  result.add_step_times_seconds(1.0);
  result.set_mean_step_time_seconds(1.0);
  result.set_tokens_per_second(1000);
  result.set_model_tflops_per_gpu(tflops);
  return result;
}

v1::ProbeResult FailedResult(v1::ProbeOutcome outcome) {
  v1::ProbeResult result;
  result.set_outcome(outcome);
  result.set_backend("sim");
  result.set_message("it broke");
  return result;
}

v1::CreateSearchRequest FullScopeSearch() {
  v1::CreateSearchRequest request = SmallSimSearch(1, /*nodes=*/2, /*gpus_per_node=*/4);
  request.mutable_spec()->mutable_probe()->set_scope(v1::PROBE_SCOPE_FULL);
  return request;
}

v1::CreateSearchRequest OneNodeFullSearch() {
  v1::CreateSearchRequest request = SmallSimSearch(1);
  request.mutable_spec()->mutable_probe()->set_scope(v1::PROBE_SCOPE_FULL);
  return request;
}

v1::RegisterWorkerRequest ReservedWorker(int gpus, const std::string& probe) {
  v1::RegisterWorkerRequest request = Worker(gpus);
  (*request.mutable_labels())[kProbeReservationLabel] = probe;
  return request;
}

v1::RegisterWorkerRequest A100Worker(int gpus) {
  v1::RegisterWorkerRequest request = Worker(gpus);
  for (v1::Gpu& gpu : *request.mutable_gpus()) {
    gpu.set_name("simulated A100-40GB");
    gpu.set_memory_bytes(42'949'672'960);
  }
  return request;
}

v1::AcquireProbeRequest AcquireRequest(const std::string& worker, const std::string& last_probe) {
  v1::AcquireProbeRequest request;
  request.set_worker(worker);
  request.set_last_probe(last_probe);
  return request;
}

v1::ProbeResult MeasuredAsPredicted(const v1::Search& search, const v1::ProbeAssignment& assignment,
                                    double factor, double spread) {
  const v1::Candidate* candidate = nullptr;
  for (const v1::Candidate& c : search.candidates()) {
    if (absl::StartsWith(assignment.name(), c.name() + "/")) candidate = &c;
  }
  EXPECT_NE(candidate, nullptr) << assignment.name();
  v1::ProbeResult result = TimedResult(candidate->predicted().model_tflops_per_gpu() * factor,
                                       candidate->predicted().step_time_seconds() / factor,
                                       assignment.timed_steps(), spread);
  result.set_backend("sim");
  result.set_simulated(true);
  result.set_tokens_per_second(1000);
  result.set_wall_seconds(2);
  return result;
}

SchedulerTest::SchedulerTest() {
  Scheduler::Options options;
  options.clock = &clock_;
  options.heartbeat_interval = absl::Seconds(2);
  auto store = std::make_unique<FakeSearchStore>();
  store_ = store.get();
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
      Scheduler::Create(std::move(options), std::move(store));
  EXPECT_TRUE(scheduler.ok()) << scheduler.status();
  scheduler_.reset(*std::move(scheduler));
  scheduler_->fleet().AddListener(&listener_);
}

void SchedulerTest::TearDown() {
  ExpectStoredAsInMemory();
  ExpectInvariants();
}

void SchedulerTest::ExpectStoredAsInMemory() {
  if (scheduler_ == nullptr || (store_ != nullptr && store_->last_write_failed())) return;
  Scheduler& scheduler = *scheduler_.get();
  v1::ListSearchesRequest list;
  list.set_page_size(1000);
  absl::StatusOr<v1::ListSearchesResponse> listed = scheduler.reader().ListSearches(list);
  ASSERT_TRUE(listed.ok()) << listed.status();
  RecordingObserver observer;
  for (const v1::Search& search : listed->searches()) {
    absl::StatusOr<Scheduler::WatchStart> watched = scheduler.Watch(search.name(), &observer);
    if (!watched.ok()) return;  // shut down
    scheduler.Unwatch(search.name(), &observer);
    if (watched->ended) continue;
    absl::StatusOr<v1::Search> stored = scheduler.reader().GetSearch(search.name());
    ASSERT_TRUE(stored.ok()) << stored.status();
    std::string differences;
    google::protobuf::util::MessageDifferencer differencer;
    differencer.ReportDifferencesToString(&differences);
    EXPECT_TRUE(differencer.Compare(*stored, ClientView(watched->search)))
        << search.name() << " in the store differs from the scheduler's:\n"
        << differences;
  }
  EXPECT_THAT(SchedulerInvariants::StoreDifferences(scheduler), IsEmpty());
}

void SchedulerTest::ExpectInvariants() {
  if (scheduler_ == nullptr) return;
  EXPECT_THAT(SchedulerInvariants::Violations(*scheduler_.get()), IsEmpty());
}

v1::Search SchedulerTest::Create(const v1::CreateSearchRequest& request) {
  absl::StatusOr<v1::Search> search = scheduler_->CreateSearch(request);
  EXPECT_TRUE(search.ok()) << search.status();
  return search.ok() ? *search : v1::Search();
}

std::string SchedulerTest::Register(int gpus, const std::string& backend) {
  absl::StatusOr<v1::RegisterWorkerResponse> response =
      scheduler_->fleet().RegisterWorker(Worker(gpus, backend));
  EXPECT_TRUE(response.ok()) << response.status();
  return response.ok() ? response->name() : "";
}

std::optional<v1::ProbeAssignment> SchedulerTest::Acquire(const std::string& worker) {
  const int notified = listener_.calls;
  absl::StatusOr<std::optional<v1::ProbeAssignment>> acquired =
      scheduler_->fleet().TryAcquireProbe(AcquireRequest(worker, last_probes_[worker]));
  EXPECT_TRUE(acquired.ok()) << acquired.status();
  others_may_have_work_ = listener_.calls > notified;
  if (!acquired.ok() || !acquired->has_value()) return std::nullopt;
  last_probes_[worker] = (*acquired)->name();
  return *acquired;
}

absl::Status SchedulerTest::Report(const std::string& worker, const std::string& probe,
                                   const v1::ProbeResult& result) {
  v1::ReportProbeRequest request;
  request.set_worker(worker);
  request.set_probe(probe);
  *request.mutable_result() = result;
  return scheduler_->fleet().ReportProbe(request);
}

absl::StatusOr<v1::HeartbeatResponse> SchedulerTest::Heartbeat(const std::string& worker,
                                                               std::vector<std::string> running) {
  v1::HeartbeatRequest request;
  request.set_worker(worker);
  for (std::string& probe : running) request.add_running_probes(std::move(probe));
  return scheduler_->fleet().Heartbeat(request);
}

v1::Search SchedulerTest::Get(const std::string& name) {
  absl::StatusOr<v1::Search> search = scheduler_->reader().GetSearch(name);
  EXPECT_TRUE(search.ok()) << search.status();
  return search.ok() ? *search : v1::Search();
}

std::vector<v1::SearchEvent> SchedulerTest::Events(const std::string& name) {
  v1::ListSearchEventsRequest request;
  request.set_name(name);
  request.set_page_size(1000);
  absl::StatusOr<v1::ListSearchEventsResponse> log = scheduler_->reader().ListSearchEvents(request);
  EXPECT_TRUE(log.ok()) << log.status();
  if (!log.ok()) return {};
  EXPECT_TRUE(log->next_page_token().empty()) << "more than a page of events";
  return {log->events().begin(), log->events().end()};
}

std::vector<int64_t> SchedulerTest::RunToEnd(const std::string& worker, const std::string& name,
                                             double factor, double spread) {
  std::vector<int64_t> timed_steps;
  for (int probes = 0; probes < 500; ++probes) {
    std::optional<v1::ProbeAssignment> assignment = Acquire(worker);
    if (!assignment.has_value()) break;
    timed_steps.push_back(assignment->timed_steps());
    EXPECT_TRUE(Report(worker, assignment->name(),
                       MeasuredAsPredicted(Get(name), *assignment, factor, spread))
                    .ok());
  }
  return timed_steps;
}

SchedulerRestartTest::SchedulerRestartTest()
    : path_(::testing::TempDir() + "/scheduler_restart.db") {
  RemoveFiles();
  Restart();
}

SchedulerRestartTest::~SchedulerRestartTest() {
  scheduler_.reset();
  RemoveFiles();
}

void SchedulerRestartTest::Restart() {
  scheduler_.reset();
  store_ = nullptr;
  Scheduler::Options options;
  options.clock = &clock_;
  options.heartbeat_interval = absl::Seconds(2);
  absl::StatusOr<std::unique_ptr<SqliteSearchStore>> store = SqliteSearchStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
      Scheduler::Create(std::move(options), *std::move(store));
  ASSERT_TRUE(scheduler.ok()) << scheduler.status();
  scheduler_.reset(*std::move(scheduler));
  scheduler_->fleet().AddListener(&listener_);
}

void SchedulerRestartTest::RemoveFiles() {
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path_ + suffix).c_str());
}

}  // namespace paratune
