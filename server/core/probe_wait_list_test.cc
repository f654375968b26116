#include "server/core/probe_wait_list.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

// A stand-in for the scheduler: probes a test queues, handed out to whoever asks, and gang
// probes whose second share waits for a named worker. Like the scheduler, it tells its
// listener about work left for others after its own lock is released.
class FakeQueue {
 public:
  void set_listener(ProbesQueuedListener* listener) { listener_ = listener; }
  void Queue(const std::string& name) {
    absl::MutexLock lock(&mu_);
    next_ = name;
  }
  // The next caller gets `name`; `other_worker` gets it too on its next try.
  void QueueGang(const std::string& name, const std::string& other_worker) {
    absl::MutexLock lock(&mu_);
    next_ = name;
    gang_member_ = other_worker;
  }

  // The next miss queues `name` and tells the listener, as if another thread queued it while
  // the missing try was still running.
  void QueueDuringNextMiss(const std::string& name) {
    absl::MutexLock lock(&mu_);
    queue_during_miss_ = name;
  }

  ProbeWaitList::AcquireResult TryAcquire(const v1::AcquireProbeRequest& request) {
    bool notify = false;
    ProbeWaitList::AcquireResult result = TryAcquireLocked(request, notify);
    if (notify) listener_->OnProbesQueued();
    return result;
  }

  // Every try's AcquireProbeRequest.last_probe, in order.
  std::vector<std::string> last_probes() {
    absl::MutexLock lock(&mu_);
    return last_probes_;
  }

 private:
  ProbeWaitList::AcquireResult TryAcquireLocked(const v1::AcquireProbeRequest& request,
                                                bool& notify) {
    absl::MutexLock lock(&mu_);
    last_probes_.push_back(request.last_probe());
    const std::string& worker = request.worker();
    if (worker == "workers/unknown") return absl::NotFoundError("worker workers/unknown");
    if (auto share = shares_.find(worker); share != shares_.end()) {
      v1::ProbeAssignment assignment;
      assignment.set_name(share->second);
      shares_.erase(share);
      return std::optional<v1::ProbeAssignment>(assignment);
    }
    if (!next_.has_value()) {
      if (queue_during_miss_.has_value()) {
        next_ = std::exchange(queue_during_miss_, std::nullopt);
        notify = true;
      }
      return std::optional<v1::ProbeAssignment>();
    }
    v1::ProbeAssignment assignment;
    assignment.set_name(*next_);
    next_.reset();
    if (gang_member_.has_value()) {
      shares_[*gang_member_] = assignment.name();
      gang_member_.reset();
      notify = true;
    }
    return std::optional<v1::ProbeAssignment>(assignment);
  }

  ProbesQueuedListener* listener_ = nullptr;
  absl::Mutex mu_;
  std::optional<std::string> next_ ABSL_GUARDED_BY(mu_);
  std::optional<std::string> queue_during_miss_ ABSL_GUARDED_BY(mu_);
  std::optional<std::string> gang_member_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> shares_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> last_probes_ ABSL_GUARDED_BY(mu_);
};

// `worker`'s AcquireProbe, having received `last_probe` last.
v1::AcquireProbeRequest Asking(const std::string& worker, const std::string& last_probe = "") {
  v1::AcquireProbeRequest request;
  request.set_worker(worker);
  request.set_last_probe(last_probe);
  return request;
}

// Captures the one result of a Wait.
struct Outcome {
  absl::Notification done;
  ProbeWaitList::AcquireResult result;

  ProbeWaitList::Done Callback() {
    return [this](ProbeWaitList::AcquireResult r) {
      result = std::move(r);
      done.Notify();
    };
  }
};

class ProbeWaitListTest : public ::testing::Test {
 protected:
  ProbeWaitListTest()
      : list_(std::make_unique<ProbeWaitList>([this](const v1::AcquireProbeRequest& request) {
          return queue_.TryAcquire(request);
        })) {
    queue_.set_listener(list_.get());
  }

  FakeQueue queue_;
  std::unique_ptr<ProbeWaitList> list_;
};

TEST_F(ProbeWaitListTest, AnswersAtOnceWhenAProbeIsQueued) {
  queue_.Queue("p1");
  Outcome outcome;
  list_->Wait(Asking("workers/1"), absl::Now() + absl::Hours(1), outcome.Callback());
  // Called on this thread, before Wait returned.
  ASSERT_TRUE(outcome.done.HasBeenNotified());
  ASSERT_TRUE(outcome.result.ok());
  ASSERT_TRUE(outcome.result->has_value());
  EXPECT_EQ((*outcome.result)->name(), "p1");
}

TEST_F(ProbeWaitListTest, ParkedCallGetsAProbeQueuedLater) {
  Outcome outcome;
  list_->Wait(Asking("workers/1"), absl::Now() + absl::Hours(1), outcome.Callback());
  EXPECT_FALSE(outcome.done.HasBeenNotified());
  queue_.Queue("p2");
  list_->OnProbesQueued();
  ASSERT_TRUE(outcome.done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_TRUE(outcome.result.ok());
  ASSERT_TRUE(outcome.result->has_value());
  EXPECT_EQ((*outcome.result)->name(), "p2");
}

TEST_F(ProbeWaitListTest, ParkedCallTriesAgainWithItsRequest) {
  Outcome outcome;
  list_->Wait(Asking("workers/1", "p0"), absl::Now() + absl::Hours(1), outcome.Callback());
  queue_.Queue("p5");
  list_->OnProbesQueued();
  ASSERT_TRUE(outcome.done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(queue_.last_probes(), std::vector<std::string>({"p0", "p0"}));
}

TEST_F(ProbeWaitListTest, ParkedCallEndsEmptyAtItsDeadline) {
  Outcome outcome;
  list_->Wait(Asking("workers/1"), absl::Now() + absl::Milliseconds(20), outcome.Callback());
  ASSERT_TRUE(outcome.done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_TRUE(outcome.result.ok());
  EXPECT_FALSE(outcome.result->has_value());
}

TEST_F(ProbeWaitListTest, ErrorsAreReturnedAtOnce) {
  Outcome outcome;
  list_->Wait(Asking("workers/unknown"), absl::Now() + absl::Hours(1), outcome.Callback());
  ASSERT_TRUE(outcome.done.HasBeenNotified());
  EXPECT_EQ(outcome.result.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ProbeWaitListTest, StopEndsParkedCallsAndRefusesNewOnes) {
  Outcome parked;
  list_->Wait(Asking("workers/1"), absl::Now() + absl::Hours(1), parked.Callback());
  list_->Stop();
  ASSERT_TRUE(parked.done.HasBeenNotified());
  ASSERT_TRUE(parked.result.ok());
  EXPECT_FALSE(parked.result->has_value());

  Outcome late;
  list_->Wait(Asking("workers/1"), absl::Now() + absl::Hours(1), late.Callback());
  ASSERT_TRUE(late.done.HasBeenNotified());
  EXPECT_EQ(late.result.status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(ProbeWaitListTest, OnlyOneOfTwoParkedCallsGetsTheProbe) {
  Outcome first;
  Outcome second;
  list_->Wait(Asking("workers/1"), absl::Now() + absl::Hours(1), first.Callback());
  list_->Wait(Asking("workers/2"), absl::Now() + absl::Hours(1), second.Callback());
  queue_.Queue("p3");
  list_->OnProbesQueued();
  ASSERT_TRUE(first.done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_TRUE(first.result.ok() && first.result->has_value());
  EXPECT_EQ((*first.result)->name(), "p3");
  EXPECT_FALSE(second.done.HasBeenNotified());
  list_->Stop();
  ASSERT_TRUE(second.done.HasBeenNotified());
}

TEST_F(ProbeWaitListTest, ProbeQueuedWhileTheFirstTryMissedIsNotMissed) {
  queue_.QueueDuringNextMiss("p4");
  Outcome outcome;
  list_->Wait(Asking("workers/1"), absl::Now() + absl::Hours(1), outcome.Callback());
  ASSERT_TRUE(outcome.done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_TRUE(outcome.result.ok() && outcome.result->has_value());
  EXPECT_EQ((*outcome.result)->name(), "p4");
}

TEST_F(ProbeWaitListTest, ShareLeftForAParkedCallReachesIt) {
  Outcome member;
  list_->Wait(Asking("workers/2"), absl::Now() + absl::Hours(1), member.Callback());
  queue_.QueueGang("gang", "workers/2");
  Outcome leader;
  list_->Wait(Asking("workers/1"), absl::Now() + absl::Hours(1), leader.Callback());
  ASSERT_TRUE(leader.done.HasBeenNotified());
  ASSERT_TRUE(member.done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_TRUE(member.result.ok() && member.result->has_value());
  EXPECT_EQ((*member.result)->name(), "gang");
}

}  // namespace
}  // namespace paratune
