#include "server/core/dispatch.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/change_set.h"
#include "server/core/dispatch_invariants.h"
#include "server/core/lease.h"
#include "server/core/test_probe_result.h"
#include "server/core/test_requests.h"
#include "server/store/fake_search_store.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const absl::Time kNow = absl::FromUnixSeconds(1'000'000);
const char kProbe[] = "searches/1/candidates/0/probes/1";

v1::ReportProbeRequest Report(const std::string& worker, const v1::ProbeResult& result) {
  v1::ReportProbeRequest request;
  request.set_worker(worker);
  request.set_probe(kProbe);
  *request.mutable_result() = result;
  return request;
}

v1::AcquireProbeRequest Ask(const std::string& worker, const std::string& last_probe = "") {
  v1::AcquireProbeRequest request;
  request.set_worker(worker);
  request.set_last_probe(last_probe);
  return request;
}

v1::HeartbeatRequest Heartbeat(const std::string& worker) {
  v1::HeartbeatRequest request;
  request.set_worker(worker);
  return request;
}

// A Dispatch over a ChangeSet committed to a fake store; each test checks the invariant after
// every transition (ExpectHolds), and what the store holds where it matters.
class DispatchTest : public ::testing::Test {
 protected:
  // Registers a worker of 4 GPUs; returns its name.
  std::string Register() {
    const std::string name = dispatch_.Register(Worker(4), "alice", kNow).name();
    ExpectHolds();
    return name;
  }

  // Leases kProbe of candidate 0 of search 1 on the workers, 4 ranks each, `ids`[0] asking.
  const internal::LeaseState& LeaseOn(const std::vector<int64_t>& ids) {
    std::vector<RankShare> shares;
    std::vector<const v1::Worker*> workers;
    for (int64_t id : ids) {
      shares.push_back({id, static_cast<int64_t>(shares.size()) * 4, 4});
      workers.push_back(&dispatch_.workers().Find(id)->worker);
    }
    const internal::LeaseState& lease = dispatch_.Lease(
        MakeLease(kProbe, 1, 0, v1::PROBE_SCOPE_FULL, 4 * static_cast<int64_t>(ids.size()), shares,
                  workers, absl::ToUnixNanos(kNow + absl::Minutes(5))));
    ExpectHolds();
    return lease;
  }

  // TakeReport with every result plausible (result_plausibility.h has its own tests).
  absl::StatusOr<Dispatch::Report> Take(const v1::ReportProbeRequest& request) {
    return dispatch_.TakeReport(request, [](const v1::ProbeResult&, const internal::LeaseState&,
                                            const v1::Worker&) { return absl::OkStatus(); });
  }

  void ExpectHolds() { EXPECT_THAT(DispatchViolations(dispatch_), IsEmpty()); }

  // What the store holds once the changes are committed.
  StoredState Stored() {
    EXPECT_TRUE(changes_.Commit(store_).ok());
    absl::StatusOr<StoredState> stored = store_.Load();
    EXPECT_TRUE(stored.ok()) << stored.status();
    return stored.ok() ? *std::move(stored) : StoredState();
  }

  const v1::Worker& Registered(int64_t id) { return dispatch_.workers().Find(id)->worker; }

  FakeSearchStore store_;
  ChangeSet changes_;
  Dispatch dispatch_{&changes_};
};

TEST_F(DispatchTest, ALeaseMakesItsMembersBusyAndIsStoredWithThem) {
  Register();
  Register();
  const internal::LeaseState& lease = LeaseOn({1, 2});
  EXPECT_TRUE(lease.members(0).delivered());
  EXPECT_FALSE(lease.members(1).delivered());
  for (int64_t id : {1, 2}) {
    EXPECT_EQ(Registered(id).state(), v1::WORKER_BUSY);
    EXPECT_EQ(Registered(id).current_probe(), kProbe);
  }
  const StoredState stored = Stored();
  ASSERT_EQ(stored.leases.size(), 1u);
  EXPECT_EQ(stored.leases[0].probe(), kProbe);
  EXPECT_EQ(stored.workers.at(2).state(), v1::WORKER_BUSY);
  EXPECT_EQ(stored.workers.at(1).registered_by(), "alice");
}

TEST_F(DispatchTest, AShareThatNeverArrivedIsHandedOverAndOneRunUnreportedEndsItsLease) {
  const std::string a = Register();
  const std::string b = Register();
  LeaseOn({1, 2});
  absl::StatusOr<Dispatch::Asked> asked = dispatch_.Ask(Ask(b), kNow);
  ASSERT_TRUE(asked.ok()) << asked.status();
  ASSERT_NE(asked->undelivered, nullptr);
  EXPECT_EQ(asked->member, 1);
  EXPECT_TRUE(asked->undelivered->members(1).delivered());
  EXPECT_TRUE(Stored().leases[0].members(1).delivered());
  ExpectHolds();

  // b ran it and asks again naming it: its report never arrived, the lease ends and a, which
  // received its share, is told to stop.
  asked = dispatch_.Ask(Ask(b, kProbe), kNow);
  ASSERT_TRUE(asked.ok()) << asked.status();
  EXPECT_EQ(asked->undelivered, nullptr);
  ASSERT_TRUE(asked->unreported.has_value());
  EXPECT_EQ(asked->unreported->probe(), kProbe);
  ExpectHolds();
  EXPECT_EQ(Registered(2).state(), v1::WORKER_IDLE);
  EXPECT_THAT(*dispatch_.Heartbeat(Heartbeat(a), kNow), ElementsAre(kProbe));
  EXPECT_THAT(*dispatch_.Heartbeat(Heartbeat(b), kNow), IsEmpty());
  EXPECT_THAT(Stored().leases, IsEmpty());
}

TEST_F(DispatchTest, AGangEndsWhenEveryMemberReportedOk) {
  const std::string a = Register();
  const std::string b = Register();
  LeaseOn({1, 2});
  absl::StatusOr<Dispatch::Report> first = Take(Report(b, CompleteProbeResult()));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->ended);
  EXPECT_EQ(first->member, 1);
  EXPECT_TRUE(first->lease.members(1).has_result());
  ExpectHolds();
  // Its share is done: it may take other work while the other runs on.
  EXPECT_EQ(Registered(2).state(), v1::WORKER_IDLE);
  EXPECT_EQ(Registered(2).probes_completed(), 1);
  EXPECT_TRUE(Take(Report(b, CompleteProbeResult()))->repeated);
  v1::ProbeResult other = CompleteProbeResult();
  other.set_model_tflops_per_gpu(1);
  EXPECT_EQ(Take(Report(b, other)).status().code(), absl::StatusCode::kFailedPrecondition);

  absl::StatusOr<Dispatch::Report> last = Take(Report(a, CompleteProbeResult()));
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_TRUE(last->ended);
  ExpectHolds();
  EXPECT_EQ(dispatch_.leases().size(), 0);
  // Nobody is told to stop a probe that finished.
  EXPECT_THAT(*dispatch_.Heartbeat(Heartbeat(b), kNow), IsEmpty());
  EXPECT_EQ(Stored().workers.at(1).state(), v1::WORKER_IDLE);
}

TEST_F(DispatchTest, AFailedMemberEndsTheLeaseAndTheOthersAreToldToStop) {
  const std::string a = Register();
  const std::string b = Register();
  LeaseOn({1, 2});
  v1::ProbeResult oom;
  oom.set_outcome(v1::PROBE_OUT_OF_MEMORY);
  EXPECT_EQ(Take(Report(a, v1::ProbeResult())).status().code(), absl::StatusCode::kInvalidArgument);
  ExpectHolds();
  absl::StatusOr<Dispatch::Report> failed = Take(Report(a, oom));
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_TRUE(failed->ended);
  ExpectHolds();
  // b never received its share: it has nothing to stop.
  EXPECT_THAT(*dispatch_.Heartbeat(Heartbeat(b), kNow), IsEmpty());
  EXPECT_THAT(*dispatch_.Heartbeat(Heartbeat(a), kNow), IsEmpty());
  EXPECT_EQ(Take(Report(b, CompleteProbeResult())).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(dispatch_.EndLease(kProbe, 0).has_value());
}

TEST_F(DispatchTest, AnImplausibleResultIsRefusedAndTheLeaseTakesACorrectOneAfterwards) {
  const std::string a = Register();
  LeaseOn({1});
  v1::ProbeResult too_fast = CompleteProbeResult();
  too_fast.set_model_tflops_per_gpu(50'000);
  const auto refuse_over_1000_tflops = [](const v1::ProbeResult& result,
                                          const internal::LeaseState& lease,
                                          const v1::Worker& worker) {
    EXPECT_EQ(lease.probe(), kProbe);
    EXPECT_EQ(worker.name(), "workers/1");
    return result.model_tflops_per_gpu() > 1000
               ? absl::InvalidArgumentError("result.model_tflops_per_gpu (50000) ...")
               : absl::OkStatus();
  };
  EXPECT_EQ(dispatch_.TakeReport(Report(a, too_fast), refuse_over_1000_tflops).status().code(),
            absl::StatusCode::kInvalidArgument);
  ExpectHolds();
  EXPECT_EQ(Registered(1).state(), v1::WORKER_BUSY);
  EXPECT_EQ(Registered(1).probes_completed(), 0);
  EXPECT_FALSE(dispatch_.leases().Find(kProbe)->members(0).has_result());

  absl::StatusOr<Dispatch::Report> taken =
      dispatch_.TakeReport(Report(a, CompleteProbeResult()), refuse_over_1000_tflops);
  ASSERT_TRUE(taken.ok()) << taken.status();
  EXPECT_TRUE(taken->ended);
  ExpectHolds();
}

TEST_F(DispatchTest, ALostWorkerHoldsNothingAndIsToldNothingMore) {
  const std::string a = Register();
  const std::string b = Register();
  LeaseOn({1, 2});
  ASSERT_TRUE(dispatch_.Ask(Ask(b), kNow).ok());
  std::optional<internal::LeaseState> ended = dispatch_.LoseWorker(1);
  ASSERT_TRUE(ended.has_value());
  EXPECT_EQ(ended->probe(), kProbe);
  ExpectHolds();
  EXPECT_EQ(Registered(1).state(), v1::WORKER_LOST);
  EXPECT_EQ(dispatch_.Heartbeat(Heartbeat(a), kNow).status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(*dispatch_.Heartbeat(Heartbeat(b), kNow), ElementsAre(kProbe));
  EXPECT_EQ(Stored().workers.at(1).state(), v1::WORKER_LOST);
  EXPECT_FALSE(dispatch_.LoseWorker(2).has_value());
  ExpectHolds();
}

TEST_F(DispatchTest, ADeregisteredWorkerIsGoneWithItsLease) {
  Register();
  Register();
  LeaseOn({1, 2});
  ASSERT_TRUE(dispatch_.Deregister(2).has_value());
  ExpectHolds();
  EXPECT_EQ(dispatch_.workers().Find(2), nullptr);
  EXPECT_EQ(Registered(1).state(), v1::WORKER_IDLE);
  EXPECT_FALSE(dispatch_.Deregister(2).has_value());
  const StoredState stored = Stored();
  EXPECT_EQ(stored.workers.count(2), 0u);
  EXPECT_THAT(stored.leases, IsEmpty());
  // Its id is never handed out again.
  EXPECT_EQ(Register(), "workers/3");
}

TEST_F(DispatchTest, RendezvousRelaysGangZerosToken) {
  const std::string a = Register();
  const std::string b = Register();
  LeaseOn({1, 2});
  v1::RendezvousRequest ask;
  ask.set_worker(b);
  ask.set_probe(kProbe);
  EXPECT_THAT(*dispatch_.Rendezvous(ask), IsEmpty());
  v1::RendezvousRequest send = ask;
  send.set_worker(a);
  send.set_token("nccl-unique-id");
  EXPECT_EQ(*dispatch_.Rendezvous(send), "nccl-unique-id");
  EXPECT_EQ(*dispatch_.Rendezvous(ask), "nccl-unique-id");
  EXPECT_EQ(Stored().leases[0].rendezvous_token(), "nccl-unique-id");
}

TEST_F(DispatchTest, HeartbeatsNameProbesNotLeasedToTheWorker) {
  const std::string a = Register();
  LeaseOn({1});
  v1::HeartbeatRequest request = Heartbeat(a);
  request.add_running_probes(kProbe);
  request.add_running_probes("searches/9/candidates/0/probes/1");
  EXPECT_THAT(*dispatch_.Heartbeat(request, kNow), ElementsAre("searches/9/candidates/0/probes/1"));
  // Silent from now on.
  EXPECT_THAT(dispatch_.workers().Silent(kNow + absl::Seconds(7), absl::Seconds(6)),
              ElementsAre(1));
}

TEST_F(DispatchTest, RestoreKeepsRunningLeasesAndFreesWorkersHoldingNone) {
  Register();
  Register();
  Register();
  LeaseOn({1, 2});
  StoredState stored = Stored();
  // Worker 3 names a probe that no stored lease runs any more.
  stored.workers.at(3).set_state(v1::WORKER_BUSY);
  stored.workers.at(3).set_current_probe("searches/2/candidates/0/probes/1");

  ChangeSet changes;
  Dispatch restored(&changes);
  restored.Restore(stored.workers, stored.last_worker_id, stored.leases, kNow,
                   [](const internal::LeaseState&) { return true; });
  EXPECT_THAT(DispatchViolations(restored), IsEmpty());
  EXPECT_TRUE(restored.leases().Contains(kProbe));
  EXPECT_EQ(restored.workers().Find(3)->worker.state(), v1::WORKER_IDLE);
  EXPECT_EQ(restored.Register(Worker(4), "", kNow).name(), "workers/4");

  // A lease whose candidate moved on is ended, and its members freed.
  ChangeSet moved_on;
  Dispatch without(&moved_on);
  without.Restore(stored.workers, stored.last_worker_id, stored.leases, kNow,
                  [](const internal::LeaseState&) { return false; });
  EXPECT_THAT(DispatchViolations(without), IsEmpty());
  EXPECT_EQ(without.leases().size(), 0);
  EXPECT_EQ(without.workers().Find(1)->worker.state(), v1::WORKER_IDLE);
}

}  // namespace
}  // namespace paratune
