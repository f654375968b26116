// The fixture and helpers the scheduler's tests share (scheduler_test.cc,
// scheduler_placement_test.cc, scheduler_durability_test.cc, scheduler_events_test.cc,
// scheduler_limits_test.cc): a Scheduler over a fake store and a fake clock, checked after
// every call, sim workers and results, and a scheduler over a database file that tests
// restart.
#ifndef PARATUNE_SERVER_CORE_SCHEDULER_TEST_FIXTURE_H_
#define PARATUNE_SERVER_CORE_SCHEDULER_TEST_FIXTURE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
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
#include "server/core/test_requests.h"
#include "server/store/fake_search_store.h"

namespace paratune {

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

// The scheduler under test, checked after every call made through it: `scheduler_->X(...)`
// returns a Call whose destructor, at the end of the full expression, runs `check`
// (Stroustrup's "wrapping member function calls"). get() is unchecked, for the check itself.
class CheckedScheduler {
 public:
  class Call {
   public:
    Call(Scheduler* scheduler, const std::function<void()>& check)
        : scheduler_(scheduler), check_(check) {}
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;
    ~Call() { check_(); }
    Scheduler* operator->() const { return scheduler_; }

   private:
    Scheduler* const scheduler_;
    const std::function<void()>& check_;
  };

  explicit CheckedScheduler(std::function<void()> check) : check_(std::move(check)) {}

  Call operator->() const { return Call(scheduler_.get(), check_); }
  Scheduler* get() const { return scheduler_.get(); }
  void reset(std::unique_ptr<Scheduler> scheduler = nullptr) { scheduler_ = std::move(scheduler); }
  bool operator==(std::nullptr_t) const { return scheduler_ == nullptr; }
  bool operator!=(std::nullptr_t) const { return scheduler_ != nullptr; }

 private:
  std::unique_ptr<Scheduler> scheduler_;
  const std::function<void()> check_;
};

// A Scheduler over a FakeSearchStore and a FakeClock, heartbeat interval 2 s, with
// `listener_` added. The helpers expect success where they return no status. After every call
// through scheduler_ and at the end of the test, the store must hold what the scheduler holds
// (ExpectStoredAsInMemory) and the scheduler's invariants must hold (ExpectInvariants).
class SchedulerTest : public ::testing::Test {
 protected:
  SchedulerTest();
  void TearDown() override;

  // Expects every search the scheduler has not ended to read from the store as the scheduler
  // holds it (what Watch starts from), and its workers and leases too: whatever an operation
  // changed was stored with it, no candidate left out of its update. Nothing to compare while
  // the store's last write failed (the scheduler stores those changes with its next commit)
  // or after Shutdown.
  void ExpectStoredAsInMemory();
  // Expects the scheduler's invariants to hold (scheduler_invariants.h).
  void ExpectInvariants();

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
  // Runs search `name` to its end on `worker`, each probe measuring `factor` x its prediction
  // with step times spread by +-`spread` (MeasuredAsPredicted); returns each probe's
  // timed_steps.
  std::vector<int64_t> RunToEnd(const std::string& worker, const std::string& name, double factor,
                                double spread);

  FakeClock clock_;
  CountingListener listener_;
  // Whether the last Acquire told listeners to look again (work left for other workers).
  bool others_may_have_work_ = false;
  // The probe Acquire handed each worker last, by worker name.
  std::map<std::string, std::string> last_probes_;
  // The store of the scheduler built by the constructor; null once a test replaced it.
  FakeSearchStore* store_ = nullptr;
  CheckedScheduler scheduler_{[this] {
    ExpectStoredAsInMemory();
    ExpectInvariants();
  }};
};

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
