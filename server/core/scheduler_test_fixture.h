// The fixture and helpers the scheduler's tests share (scheduler_test.cc,
// scheduler_placement_test.cc, scheduler_durability_test.cc): a Scheduler over a fake store
// and a fake clock, sim workers and results, and a scheduler over a database file that tests
// restart.
#ifndef PARATUNE_SERVER_CORE_SCHEDULER_TEST_FIXTURE_H_
#define PARATUNE_SERVER_CORE_SCHEDULER_TEST_FIXTURE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/fake_clock.h"
#include "gtest/gtest.h"
#include "proto/autotuner_service.pb.h"
#include "proto/probe.pb.h"
#include "proto/search.pb.h"
#include "proto/worker_service.pb.h"
#include "server/core/probes_queued_listener.h"
#include "server/core/scheduler.h"
#include "server/core/search_observer.h"
#include "server/store/fake_search_store.h"

namespace paratune {

// A worker on host "node" with `gpus` simulated H100-80GB GPUs and the backend `backend`.
v1::RegisterWorkerRequest Worker(int gpus, const std::string& backend = "sim");
// A successful sim result: one timed step of 1 s, 1000 tokens/s, `tflops` per GPU.
v1::ProbeResult OkResult(double tflops);
// A sim result ending with `outcome` and the message "it broke".
v1::ProbeResult FailedResult(v1::ProbeOutcome outcome);
// Llama-3.2-1B on 2 x 4 H100-80GB probed FULL: 8 ranks, two nodes of 4.
v1::CreateSearchRequest FullScopeSearch();
// One node of 8 H100-80GB, probed FULL.
v1::CreateSearchRequest OneNodeFullSearch();
// A worker reserved for one probe, as a Slurm job started for it registers.
v1::RegisterWorkerRequest ReservedWorker(int gpus, const std::string& probe);
// A worker of `gpus` A100-40GB, as the sim declares them.
v1::RegisterWorkerRequest A100Worker(int gpus);
// `worker`'s AcquireProbe, having received `last_probe` last.
v1::AcquireProbeRequest AcquireRequest(const std::string& worker,
                                       const std::string& last_probe = "");
// `assignment`'s result at `factor` x its predicted speed, step times spread by +-`spread`.
v1::ProbeResult MeasuredAsPredicted(const v1::Search& search, const v1::ProbeAssignment& assignment,
                                    double factor, double spread = 0);

// Counts OnProbesQueued calls.
class CountingListener : public ProbesQueuedListener {
 public:
  void OnProbesQueued() override { ++calls; }
  int calls = 0;
};

// Records every call, for Watch tests.
class RecordingObserver : public SearchObserver {
 public:
  void OnSearchChanged(const v1::WatchSearchResponse& change) override {
    states.push_back(change.search().state());
    events.insert(events.end(), change.events().begin(), change.events().end());
    changes.push_back(change);
  }
  void OnSchedulerShutdown() override { shut_down = true; }

  // The search's state at each call, every event told, and each change, in order.
  std::vector<v1::SearchState> states;
  std::vector<v1::SearchEvent> events;
  std::vector<v1::WatchSearchResponse> changes;
  bool shut_down = false;
};

// A Scheduler over a FakeSearchStore and a FakeClock, heartbeat interval 2 s, with
// `listener_` added. The helpers expect success where they return no status. After each
// helper's call and at the end of the test, every search the scheduler has not ended must
// read from the store as the scheduler holds it (ExpectStoredAsInMemory).
class SchedulerTest : public ::testing::Test {
 protected:
  SchedulerTest();
  void TearDown() override;

  // Expects every search the scheduler has not ended to read from the store as the scheduler
  // holds it (what Watch starts from): whatever an operation changed was stored with it, no
  // candidate left out of its update. Nothing to compare while the store's last write failed
  // (the scheduler stores those changes with its next commit) or after Shutdown.
  void ExpectStoredAsInMemory();

  // The created search, or an empty one after a failed expectation.
  v1::Search Create(const v1::CreateSearchRequest& request);
  // The name of a newly registered Worker(gpus, backend), or "" after a failed expectation.
  std::string Register(int gpus, const std::string& backend = "sim");
  // TryAcquireProbe for `worker` naming the probe Acquire handed it last, as a worker daemon
  // asks once it ran it; sets others_may_have_work_. A test loses a reply by calling
  // scheduler_->TryAcquireProbe itself.
  std::optional<v1::ProbeAssignment> Acquire(const std::string& worker);
  // ReportProbe of `result` for `probe` by `worker`.
  absl::Status Report(const std::string& worker, const std::string& probe,
                      const v1::ProbeResult& result);
  // Heartbeat of `worker` running `running`.
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(const std::string& worker,
                                                  std::vector<std::string> running = {});
  // The search called `name`, or an empty one after a failed expectation.
  v1::Search Get(const std::string& name);
  // Every event of search `name` as ListSearchEvents reads them, oldest first.
  std::vector<v1::SearchEvent> Events(const std::string& name);

  FakeClock clock_;
  CountingListener listener_;
  // Whether the last Acquire told listeners to look again (work left for other workers).
  bool others_may_have_work_ = false;
  // The probe Acquire handed each worker last, by worker name.
  std::map<std::string, std::string> last_probes_;
  // The store of the scheduler built by the constructor; null once a test replaced it.
  FakeSearchStore* store_ = nullptr;
  std::unique_ptr<Scheduler> scheduler_;
};

// Runs the search to its end on `worker` at `factor` x each prediction; returns each timed_steps.
std::vector<int64_t> RunToEnd(Scheduler& scheduler, const std::string& worker,
                              const std::string& search_name, double factor, double spread);

// A scheduler over a database file, restarted as a killed server would be: everything it
// answered OK for is in the file.
class SchedulerRestartTest : public SchedulerTest {
 protected:
  SchedulerRestartTest();
  ~SchedulerRestartTest() override;

  // Replaces scheduler_ with one over the same file, listener_ added.
  void Restart();

 private:
  void RemoveFiles();
  const std::string path_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_SCHEDULER_TEST_FIXTURE_H_
