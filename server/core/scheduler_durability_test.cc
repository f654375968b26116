// What the scheduler keeps through failures: worker heartbeats and losses, leases, lost
// AcquireProbe replies, repeated reports, refused store writes, deregistration and restarts
// over a database file.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/scheduler.h"
#include "server/core/scheduler_test_fixture.h"
#include "server/core/test_requests.h"

namespace paratune {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST_F(SchedulerTest, LostWorkersProbeIsRequeuedThenGivenUp) {
  const v1::Search search = Create(SmallSimSearch(1));
  const std::string first = Register(8);
  std::optional<v1::ProbeAssignment> assignment = Acquire(first);
  ASSERT_TRUE(assignment.has_value());

  // Three missed intervals of 2 s: lost.
  clock_.Advance(absl::Seconds(6));
  scheduler_->CheckLeases();
  EXPECT_EQ(Get(search.name()).candidates(0).state(), v1::CANDIDATE_RUNNING);
  clock_.Advance(absl::Seconds(1));
  const std::string second = Register(8);
  scheduler_->CheckLeases();
  EXPECT_EQ(Heartbeat(first).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Report(first, assignment->name(), OkResult(1)).code(), absl::StatusCode::kNotFound);
  v1::Search requeued = Get(search.name());
  EXPECT_EQ(requeued.candidates(0).state(), v1::CANDIDATE_QUEUED);
  EXPECT_EQ(requeued.candidates(0).attempts(), 1);

  assignment = Acquire(second);
  ASSERT_TRUE(assignment.has_value());
  EXPECT_EQ(assignment->name(), "searches/1/candidates/0/probes/2");
  clock_.Advance(absl::Seconds(7));
  scheduler_->CheckLeases();

  // max_attempts (2) spent: the candidate is probed with an infrastructure error and the
  // search fails, since nothing succeeded.
  const v1::Search failed = Get(search.name());
  EXPECT_EQ(failed.state(), v1::FAILED);
  EXPECT_EQ(failed.candidates(0).state(), v1::CANDIDATE_PROBED);
  EXPECT_EQ(failed.candidates(0).probe_result().outcome(), v1::PROBE_INFRA_ERROR);
  EXPECT_THAT(failed.candidates(0).probe_result().message(), HasSubstr("gave up after 2"));
  EXPECT_THAT(failed.stop_reason(), HasSubstr("all 1 selected candidates failed"));

  absl::StatusOr<v1::ListWorkersResponse> workers = scheduler_->reader().ListWorkers();
  ASSERT_TRUE(workers.ok());
  EXPECT_EQ(workers->workers(0).state(), v1::WORKER_LOST);
}

TEST_F(SchedulerTest, HeartbeatsKeepAWorkerAlive) {
  Create(SmallSimSearch(1));
  const std::string worker = Register(8);
  std::optional<v1::ProbeAssignment> assignment = Acquire(worker);
  ASSERT_TRUE(assignment.has_value());
  for (int i = 0; i < 10; ++i) {
    clock_.Advance(absl::Seconds(2));
    ASSERT_TRUE(Heartbeat(worker, {assignment->name()}).ok());
    scheduler_->CheckLeases();
  }
  EXPECT_TRUE(Report(worker, assignment->name(), OkResult(5)).ok());
}

TEST_F(SchedulerTest, OverdueLeaseIsRequeuedAndTheWorkerToldToStop) {
  const v1::Search search = Create(SmallSimSearch(1));
  const std::string worker = Register(8);
  std::optional<v1::ProbeAssignment> assignment = Acquire(worker);
  ASSERT_TRUE(assignment.has_value());
  // Past its deadline plus 30 s of grace, heartbeating all along.
  const int64_t intervals = static_cast<int64_t>(assignment->deadline_seconds() + 30) / 2 + 1;
  for (int64_t i = 0; i < intervals; ++i) {
    clock_.Advance(absl::Seconds(2));
    ASSERT_TRUE(Heartbeat(worker, {assignment->name()}).ok());
    scheduler_->CheckLeases();
  }
  EXPECT_EQ(Get(search.name()).candidates(0).state(), v1::CANDIDATE_QUEUED);
  absl::StatusOr<v1::HeartbeatResponse> heartbeat = Heartbeat(worker, {assignment->name()});
  ASSERT_TRUE(heartbeat.ok());
  EXPECT_THAT(heartbeat->cancel_probes(), ElementsAre(assignment->name()));
}

TEST_F(SchedulerTest, AnOverdueProbeWhoseGiveUpEndsTheSearchStopsTheOthersOnce) {
  v1::CreateSearchRequest request = SmallSimSearch(2);
  request.mutable_spec()->mutable_probe()->set_max_attempts(1);
  request.mutable_spec()->mutable_budget()->set_deadline_seconds(10);
  const v1::Search search = Create(request);
  const std::string a = Register(8);
  const std::string b = Register(8);
  std::optional<v1::ProbeAssignment> first = Acquire(a);
  std::optional<v1::ProbeAssignment> second = Acquire(b);
  ASSERT_TRUE(first.has_value() && second.has_value());
  // Both overdue at the next check, and the search's deadline long past: giving up the first
  // ends the search, which stops the second before its own turn comes.
  const double overdue = std::max(first->deadline_seconds(), second->deadline_seconds()) + 30;
  for (double waited = 0; waited <= overdue; waited += 2) {
    clock_.Advance(absl::Seconds(2));
    ASSERT_TRUE(Heartbeat(a, {first->name()}).ok());
    ASSERT_TRUE(Heartbeat(b, {second->name()}).ok());
  }
  scheduler_->CheckLeases();

  const v1::Search done = Get(search.name());
  EXPECT_EQ(done.state(), v1::FAILED);
  EXPECT_THAT(done.stop_reason(), HasSubstr("budget: deadline (10s) passed"));
  EXPECT_EQ(done.candidates(0).state(), v1::CANDIDATE_PROBED);
  EXPECT_THAT(done.candidates(0).probe_result().message(),
              HasSubstr("gave up after 1 attempts; last: " + first->name() +
                        " was not reported within its deadline plus 30s"));
  EXPECT_EQ(done.candidates(1).state(), v1::CANDIDATE_SKIPPED);
  EXPECT_THAT(Heartbeat(a, {first->name()})->cancel_probes(), ElementsAre(first->name()));
  EXPECT_THAT(Heartbeat(b, {second->name()})->cancel_probes(), ElementsAre(second->name()));
}

TEST_F(SchedulerTest, ReportsMustMatchALease) {
  const v1::Search search = Create(SmallSimSearch(2));
  const std::string worker = Register(8);
  const std::string other = Register(8);
  std::optional<v1::ProbeAssignment> assignment = Acquire(worker);
  ASSERT_TRUE(assignment.has_value());

  EXPECT_EQ(Report(other, assignment->name(), OkResult(1)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Report(worker, "searches/1/candidates/1/probes/1", OkResult(1)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Report("workers/99", assignment->name(), OkResult(1)).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(Report("nonsense", assignment->name(), OkResult(1)).code(),
            absl::StatusCode::kInvalidArgument);
  const absl::Status invalid =
      Report(worker, assignment->name(), FailedResult(v1::PROBE_OUTCOME_UNSPECIFIED));
  EXPECT_EQ(invalid.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(invalid.message(), HasSubstr("result.outcome"));

  ASSERT_TRUE(Report(worker, assignment->name(), OkResult(1)).ok());
  // The same report again (its reply was lost) is answered OK again; another is refused.
  EXPECT_TRUE(Report(worker, assignment->name(), OkResult(1)).ok());
  EXPECT_EQ(Report(worker, assignment->name(), OkResult(2)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Get(search.name()).counts().probed(), 1);
}

TEST_F(SchedulerTest, AReportRetriedAfterAFailedCommitIsStoredOnce) {
  const std::string worker = Register(8);
  const v1::Search search = Create(SmallSimSearch(1));
  RecordingObserver observer;
  ASSERT_TRUE(scheduler_->Watch(search.name(), &observer).ok());
  std::optional<v1::ProbeAssignment> probe = Acquire(worker);
  ASSERT_TRUE(probe.has_value());
  const size_t told = observer.events.size();

  store_->FailNextWrites(1, absl::UnavailableError("database is locked"));
  EXPECT_EQ(Report(worker, probe->name(), OkResult(300)).code(), absl::StatusCode::kUnavailable);
  // Nothing was stored, so nothing was told.
  EXPECT_EQ(Get(search.name()).candidates(0).state(), v1::CANDIDATE_RUNNING);
  EXPECT_EQ(observer.events.size(), told);

  // The worker retries: OK, stored once, told once.
  ASSERT_TRUE(Report(worker, probe->name(), OkResult(300)).ok());
  const v1::Search done = Get(search.name());
  EXPECT_EQ(done.state(), v1::SUCCEEDED);
  EXPECT_EQ(done.counts().probed(), 1);
  EXPECT_EQ(done.candidates(0).probe_result().model_tflops_per_gpu(), 300);
  ASSERT_GT(observer.events.size(), told);
  EXPECT_EQ(observer.events[told].kind(), v1::EVENT_PROBED);
  EXPECT_EQ(observer.events[told].candidate(), "searches/1/candidates/0");
  ASSERT_EQ(observer.events[told].workers_size(), 1);
  EXPECT_EQ(observer.events[told].workers(0).worker(), worker);
}

TEST_F(SchedulerTest, ALeaseThatCouldNotBeStoredIsHandedOverAgain) {
  const std::string worker = Register(8);
  const v1::Search search = Create(SmallSimSearch(1));
  store_->FailNextWrites(1, absl::UnavailableError("database is locked"));
  absl::StatusOr<std::optional<v1::ProbeAssignment>> failed =
      scheduler_->fleet().TryAcquireProbe(AcquireRequest(worker));
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable);
  std::optional<v1::ProbeAssignment> probe = Acquire(worker);
  ASSERT_TRUE(probe.has_value());
  // The same attempt: none was burnt.
  EXPECT_EQ(probe->name(), "searches/1/candidates/0/probes/1");
  EXPECT_EQ(Get(search.name()).candidates(0).state(), v1::CANDIDATE_RUNNING);
}

TEST_F(SchedulerTest, ASearchTheStoreRefusesLeavesNoTrace) {
  store_->FailNextWrites(1, absl::UnavailableError("database is locked"));
  EXPECT_EQ(scheduler_->CreateSearch(SmallSimSearch(1)).status().code(),
            absl::StatusCode::kUnavailable);
  absl::StatusOr<v1::ListSearchesResponse> listed = scheduler_->reader().ListSearches({});
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->searches_size(), 0);
  EXPECT_EQ(scheduler_->Stats().queued_probes, 0);
  // The next one is created and runs.
  const v1::Search search = Create(SmallSimSearch(1));
  EXPECT_EQ(search.state(), v1::PROBING);
  EXPECT_TRUE(Acquire(Register(8)).has_value());
}

TEST_F(SchedulerTest, ACancellationTheStoreRefusedIsStoredWithTheNextChange) {
  const v1::Search search = Create(SmallSimSearch(2));
  store_->FailNextWrites(1, absl::UnavailableError("database is locked"));
  EXPECT_EQ(scheduler_->CancelSearch(search.name()).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(Get(search.name()).state(), v1::PROBING);
  scheduler_->CheckLeases();
  EXPECT_EQ(Get(search.name()).state(), v1::CANCELLED);
}

TEST_F(SchedulerTest, ADeregisteredWorkerIsGoneAndItsProbeRequeued) {
  const v1::Search search = Create(SmallSimSearch(1));
  const std::string worker = Register(8);
  std::optional<v1::ProbeAssignment> probe = Acquire(worker);
  ASSERT_TRUE(probe.has_value());

  v1::DeregisterWorkerRequest request;
  request.set_worker(worker);
  request.set_reason("SIGTERM");
  ASSERT_TRUE(scheduler_->fleet().DeregisterWorker(request).ok());
  absl::StatusOr<v1::ListWorkersResponse> workers = scheduler_->reader().ListWorkers();
  ASSERT_TRUE(workers.ok());
  EXPECT_EQ(workers->workers_size(), 0);
  const v1::Candidate candidate = Get(search.name()).candidates(0);
  EXPECT_EQ(candidate.state(), v1::CANDIDATE_QUEUED);
  EXPECT_THAT(candidate.waiting_reason(), HasSubstr("live workers: none"));
  EXPECT_EQ(Heartbeat(worker).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Report(worker, probe->name(), OkResult(1)).code(), absl::StatusCode::kNotFound);
  v1::ListSearchEventsRequest events;
  events.set_name(search.name());
  absl::StatusOr<v1::ListSearchEventsResponse> log = scheduler_->reader().ListSearchEvents(events);
  ASSERT_TRUE(log.ok());
  std::vector<std::string> texts;
  for (const v1::SearchEvent& event : log->events()) texts.push_back(event.text());
  EXPECT_THAT(texts, Contains(HasSubstr("candidates/0 re-queued after attempt 1 of 2: " + worker +
                                        " left: SIGTERM")));

  // A retry after a lost reply is OK; bad requests name the field.
  EXPECT_TRUE(scheduler_->fleet().DeregisterWorker(request).ok());
  request.set_worker("nonsense");
  EXPECT_EQ(scheduler_->fleet().DeregisterWorker(request).code(),
            absl::StatusCode::kInvalidArgument);
  request.set_worker(worker);
  request.set_reason(std::string(1025, 'x'));
  EXPECT_EQ(scheduler_->fleet().DeregisterWorker(request).message(),
            "reason (1025 bytes) must be at most 1024 bytes");

  // The next worker does not reuse its name.
  EXPECT_EQ(Register(8), "workers/2");
}

TEST_F(SchedulerTest, AProbeRunWithoutItsReportArrivingIsGivenUpWhenTheWorkerAsksAgain) {
  const v1::Search search = Create(SmallSimSearch(1));
  const std::string worker = Register(8);
  std::optional<v1::ProbeAssignment> first = Acquire(worker);
  ASSERT_TRUE(first.has_value());
  // The worker ran it, its report was lost, and it asks again naming it.
  std::optional<v1::ProbeAssignment> second = Acquire(worker);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->name(), "searches/1/candidates/0/probes/2");
  EXPECT_EQ(Get(search.name()).candidates(0).attempts(), 2);
  v1::ListSearchEventsRequest events;
  events.set_name(search.name());
  absl::StatusOr<v1::ListSearchEventsResponse> log = scheduler_->reader().ListSearchEvents(events);
  ASSERT_TRUE(log.ok());
  std::vector<std::string> texts;
  for (const v1::SearchEvent& event : log->events()) texts.push_back(event.text());
  EXPECT_THAT(texts, Contains(HasSubstr("re-queued after attempt 1 of 2: " + worker + " ran " +
                                        first->name() + " but its report never arrived")));
}

TEST_F(SchedulerTest, AReplyLostOnTheWayIsHandedOverAgain) {
  const v1::Search search = Create(SmallSimSearch(1));
  const std::string worker = Register(8);
  absl::StatusOr<std::optional<v1::ProbeAssignment>> lost =
      scheduler_->fleet().TryAcquireProbe(AcquireRequest(worker));
  ASSERT_TRUE(lost.ok() && lost->has_value());
  std::optional<v1::ProbeAssignment> again = Acquire(worker);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->SerializeAsString(), (*lost)->SerializeAsString());
  EXPECT_EQ(Get(search.name()).candidates(0).attempts(), 1);
}

TEST_F(SchedulerTest, AcquireRefusesAMalformedLastProbe) {
  const std::string worker = Register(8);
  const absl::Status status =
      scheduler_->fleet()
          .TryAcquireProbe(AcquireRequest(worker, "searches/1/candidates/x"))
          .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("last_probe"));
}

TEST_F(SchedulerTest, HeartbeatCancelsProbesNotLeasedToTheWorker) {
  const std::string worker = Register(8);
  absl::StatusOr<v1::HeartbeatResponse> heartbeat =
      Heartbeat(worker, {"searches/9/candidates/0/probes/1"});
  ASSERT_TRUE(heartbeat.ok());
  EXPECT_THAT(heartbeat->cancel_probes(), ElementsAre("searches/9/candidates/0/probes/1"));
}

TEST_F(SchedulerTest, RegisterValidatesTheWorker) {
  v1::RegisterWorkerRequest request = Worker(0);
  const absl::Status status = scheduler_->fleet().RegisterWorker(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("gpus"));
}

TEST_F(SchedulerRestartTest, ResumedSearchAcceptsReportsOfProbesLeasedBeforeAndFinishes) {
  const std::string worker = Register(8);
  const std::string other = Register(8);
  const v1::Search search = Create(SmallSimSearch(3));
  std::optional<v1::ProbeAssignment> before = Acquire(worker);
  ASSERT_TRUE(before.has_value());
  std::optional<v1::ProbeAssignment> reported = Acquire(other);
  ASSERT_TRUE(reported.has_value());
  ASSERT_TRUE(Report(other, reported->name(), OkResult(200)).ok());

  Restart();

  // The result reported before the restart is there; the probe leased before it is still
  // leased to its worker, whose report is accepted.
  v1::Search resumed = Get(search.name());
  EXPECT_EQ(resumed.state(), v1::PROBING);
  EXPECT_EQ(resumed.counts().succeeded(), 1);
  ASSERT_TRUE(Heartbeat(worker, {before->name()}).ok());
  EXPECT_THAT(Heartbeat(worker, {before->name()})->cancel_probes(), IsEmpty());
  ASSERT_TRUE(Report(worker, before->name(), OkResult(300)).ok());
  // The candidate still queued is handed out again.
  std::optional<v1::ProbeAssignment> after = Acquire(other);
  ASSERT_TRUE(after.has_value());
  ASSERT_TRUE(Report(other, after->name(), OkResult(100)).ok());

  const v1::Search done = Get(search.name());
  EXPECT_EQ(done.state(), v1::SUCCEEDED);
  EXPECT_EQ(done.counts().succeeded(), 3);
  EXPECT_DOUBLE_EQ(done.candidates(0).probe_result().model_tflops_per_gpu(), 300);
  v1::ListSearchEventsRequest events;
  events.set_name(search.name());
  events.set_page_size(1000);
  absl::StatusOr<v1::ListSearchEventsResponse> log = scheduler_->reader().ListSearchEvents(events);
  ASSERT_TRUE(log.ok()) << log.status();
  bool resumed_event = false;
  for (const v1::SearchEvent& event : log->events()) {
    resumed_event |= event.text() == "server restarted; search resumed";
  }
  EXPECT_TRUE(resumed_event);
}

TEST_F(SchedulerRestartTest, UndeliveredGangShareIsHandedOverAfterARestart) {
  const std::string a = Register(4);
  const std::string b = Register(4);
  Create(FullScopeSearch());
  std::optional<v1::ProbeAssignment> first = Acquire(a);
  ASSERT_TRUE(first.has_value());

  Restart();

  std::optional<v1::ProbeAssignment> second = Acquire(b);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->name(), first->name());
  EXPECT_EQ(second->gang_index(), 1);
}

TEST_F(SchedulerRestartTest, ALeaseWhoseReplyTheRestartCutOffIsHandedOverAgain) {
  const std::string worker = Register(8);
  const v1::Search search = Create(SmallSimSearch(2));
  std::optional<v1::ProbeAssignment> ran = Acquire(worker);
  ASSERT_TRUE(ran.has_value());
  ASSERT_TRUE(Report(worker, ran->name(), OkResult(100)).ok());
  // The next lease is stored, then the server dies before its reply leaves.
  absl::StatusOr<std::optional<v1::ProbeAssignment>> lost =
      scheduler_->fleet().TryAcquireProbe(AcquireRequest(worker, ran->name()));
  ASSERT_TRUE(lost.ok() && lost->has_value()) << lost.status();

  Restart();

  // A heartbeat without it proves nothing (the reply might still be on its way).
  absl::StatusOr<v1::HeartbeatResponse> heartbeat = Heartbeat(worker);
  ASSERT_TRUE(heartbeat.ok()) << heartbeat.status();
  EXPECT_THAT(heartbeat->cancel_probes(), IsEmpty());
  scheduler_->CheckLeases();
  // The worker asks again, naming the probe before: it gets the same lease.
  std::optional<v1::ProbeAssignment> again = Acquire(worker);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->SerializeAsString(), (*lost)->SerializeAsString());
  ASSERT_TRUE(Report(worker, again->name(), OkResult(200)).ok());
  const v1::Search done = Get(search.name());
  EXPECT_EQ(done.state(), v1::SUCCEEDED);
  for (const v1::Candidate& candidate : done.candidates()) {
    EXPECT_EQ(candidate.attempts(), 1) << candidate.name();
  }
}

TEST_F(SchedulerRestartTest, GangSharesWhoseRepliesTheRestartCutOffAreHandedOverAgain) {
  const std::string a = Register(4);
  const std::string b = Register(4);
  const v1::Search search = Create(FullScopeSearch());
  // Both members' shares are stored as delivered; neither reply leaves.
  absl::StatusOr<std::optional<v1::ProbeAssignment>> lost_first =
      scheduler_->fleet().TryAcquireProbe(AcquireRequest(a));
  absl::StatusOr<std::optional<v1::ProbeAssignment>> lost_second =
      scheduler_->fleet().TryAcquireProbe(AcquireRequest(b));
  ASSERT_TRUE(lost_first.ok() && lost_first->has_value());
  ASSERT_TRUE(lost_second.ok() && lost_second->has_value());

  Restart();

  std::optional<v1::ProbeAssignment> second = Acquire(b);
  std::optional<v1::ProbeAssignment> first = Acquire(a);
  ASSERT_TRUE(first.has_value() && second.has_value());
  EXPECT_EQ(first->SerializeAsString(), (*lost_first)->SerializeAsString());
  EXPECT_EQ(second->SerializeAsString(), (*lost_second)->SerializeAsString());
  EXPECT_EQ(first->name(), "searches/1/candidates/0/probes/1");
  EXPECT_EQ(second->gang_index(), 1);
  ASSERT_TRUE(Report(b, second->name(), OkResult(100)).ok());
  ASSERT_TRUE(Report(a, first->name(), OkResult(100)).ok());
  const v1::Search done = Get(search.name());
  EXPECT_EQ(done.state(), v1::SUCCEEDED);
  EXPECT_EQ(done.candidates(0).attempts(), 1);
}

TEST_F(SchedulerRestartTest, ProbeOfAWorkerThatNeverReturnsIsRequeued) {
  const std::string gone = Register(8);
  const v1::Search search = Create(SmallSimSearch(1));
  ASSERT_TRUE(Acquire(gone).has_value());

  Restart();
  const std::string fresh = Register(8);
  clock_.Advance(absl::Seconds(4));
  ASSERT_TRUE(Heartbeat(fresh).ok());
  clock_.Advance(absl::Seconds(3));
  scheduler_->CheckLeases();
  EXPECT_EQ(Get(search.name()).candidates(0).state(), v1::CANDIDATE_QUEUED);
  std::optional<v1::ProbeAssignment> retry = Acquire(fresh);
  ASSERT_TRUE(retry.has_value());
  EXPECT_THAT(retry->name(), HasSubstr("/probes/2"));
}

TEST_F(SchedulerRestartTest, AdaptiveSearchContinuesWhereItStopped) {
  const std::string worker = Register(8);
  v1::CreateSearchRequest request = SmallSimSearch(0);
  request.mutable_spec()->set_policy(v1::ADAPTIVE);
  const v1::Search search = Create(request);
  std::optional<v1::ProbeAssignment> first = Acquire(worker);
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(Report(worker, first->name(), MeasuredAsPredicted(search, *first, 1.0)).ok());
  const int64_t selected_before = Get(search.name()).counts().selected();

  Restart();

  // The policy was rebuilt from the stored results: it neither forgets the probed candidate
  // nor picks a queued one twice.
  EXPECT_EQ(Get(search.name()).counts().selected(), selected_before);
  RunToEnd(worker, search.name(), 1.0, 0);
  const v1::Search done = Get(search.name());
  EXPECT_EQ(done.state(), v1::SUCCEEDED) << done.stop_reason();
  std::set<std::string> configs;
  for (const v1::Candidate& candidate : done.candidates()) {
    EXPECT_TRUE(configs.insert(candidate.config().SerializeAsString()).second)
        << candidate.name() << " was selected twice";
  }
}

TEST_F(SchedulerRestartTest, WorkerIdsAreNotReusedAfterARestart) {
  EXPECT_EQ(Register(8), "workers/1");
  Restart();
  EXPECT_EQ(Register(8), "workers/2");
}

TEST_F(SchedulerRestartTest, DeregisteredWorkersIdsAreNotReusedAfterARestart) {
  EXPECT_EQ(Register(8), "workers/1");
  EXPECT_EQ(Register(8), "workers/2");
  v1::DeregisterWorkerRequest request;
  request.set_worker("workers/2");
  ASSERT_TRUE(scheduler_->fleet().DeregisterWorker(request).ok());
  Restart();
  EXPECT_EQ(Register(8), "workers/3");
}

}  // namespace
}  // namespace paratune
