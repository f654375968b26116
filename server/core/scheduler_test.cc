// The scheduler's searches from creation to their end: policies, runs, failures, cancellation,
// reads, watchers, the event log and budgets.
#include "server/core/scheduler.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "convert/search_event_text.h"
#include "convert/search_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"
#include "server/core/probe_timing.h"
#include "server/core/scheduler_invariants.h"
#include "server/core/scheduler_test_fixture.h"
#include "server/core/test_requests.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST_F(SchedulerTest, CreateSearchQueuesTheTopKAndFillsDefaults) {
  const v1::Search search = Create(SmallSimSearch(3));
  EXPECT_EQ(search.name(), "searches/1");
  EXPECT_EQ(search.display_name(), "small sim search");
  EXPECT_EQ(search.state(), v1::PROBING);
  EXPECT_EQ(search.counts().selected(), 3);
  EXPECT_GE(search.counts().enumerated(), search.counts().valid());
  EXPECT_GE(search.counts().valid(), search.counts().memory_safe());
  EXPECT_GE(search.counts().memory_safe(), 3);
  ASSERT_EQ(search.candidates_size(), 3);
  double previous = 1e300;
  for (int n = 0; n < 3; ++n) {
    const v1::Candidate& candidate = search.candidates(n);
    EXPECT_EQ(candidate.name(), "searches/1/candidates/" + std::to_string(n));
    EXPECT_EQ(candidate.state(), v1::CANDIDATE_QUEUED);
    EXPECT_EQ(candidate.memory().verdict(), v1::SAFE);
    EXPECT_LE(candidate.predicted().model_tflops_per_gpu(), previous);
    previous = candidate.predicted().model_tflops_per_gpu();
  }
  const v1::ProbeSettings& probe = search.spec().probe();
  EXPECT_EQ(probe.backend(), "sim");
  EXPECT_EQ(probe.warmup_steps(), 2);
  EXPECT_EQ(probe.timed_steps(), 5);
  // Derived per probe from its predicted duration (probe_timing.h).
  EXPECT_EQ(probe.deadline_seconds(), 0);
  EXPECT_EQ(probe.max_attempts(), 2);
  EXPECT_EQ(search.spec().seed(), 1u);
  EXPECT_EQ(listener_.calls, 1);
}

TEST_F(SchedulerTest, UnspecifiedPolicyIsAdaptiveStartingWithMaxInFlightCandidates) {
  v1::CreateSearchRequest request = SmallSimSearch(0);
  request.mutable_spec()->set_policy(v1::SEARCH_POLICY_UNSPECIFIED);
  const v1::Search search = Create(request);
  EXPECT_EQ(search.spec().policy(), v1::ADAPTIVE);
  EXPECT_EQ(search.spec().adaptive().max_in_flight(), 2);
  EXPECT_EQ(search.counts().selected(), 2);
  EXPECT_GT(search.counts().memory_safe(), 2);
  ASSERT_EQ(search.candidates_size(), 2);
  EXPECT_EQ(search.candidates(0).state(), v1::CANDIDATE_QUEUED);
  EXPECT_THAT(search.candidates(0).selection_note(), HasSubstr("predicted"));
}

TEST_F(SchedulerTest, ExhaustiveSelectsEveryMemorySafeCandidate) {
  v1::CreateSearchRequest request = SmallSimSearch(0);
  request.mutable_spec()->set_policy(v1::EXHAUSTIVE);
  const v1::Search search = Create(request);
  EXPECT_EQ(search.counts().selected(), search.counts().memory_safe());
  EXPECT_EQ(search.candidates_size(), search.counts().selected());
}

TEST_F(SchedulerTest, BadRequestsNameTheField) {
  v1::CreateSearchRequest adaptive = SmallSimSearch(3);
  adaptive.mutable_spec()->set_policy(v1::ADAPTIVE);
  adaptive.mutable_spec()->mutable_adaptive()->set_max_in_flight(5000);
  // The code and the message are what reach the client (the field also rides along as a
  // status payload, estimator/field_error.h, which gRPC does not carry).
  const absl::Status in_flight = scheduler_->CreateSearch(adaptive).status();
  EXPECT_EQ(in_flight.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(in_flight.message(), "spec.adaptive.max_in_flight (5000) must be in [0, 1024]");

  v1::CreateSearchRequest steps = SmallSimSearch(3);
  steps.mutable_spec()->mutable_probe()->set_timed_steps(20000);
  const absl::Status timed_steps = scheduler_->CreateSearch(steps).status();
  EXPECT_EQ(timed_steps.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(timed_steps.message(), "spec.probe.timed_steps (20000) must be in [0, 10000]");

  v1::CreateSearchRequest preset = SmallSimSearch(3);
  preset.mutable_spec()->mutable_model()->set_preset("gpt-5");
  const absl::Status status = scheduler_->CreateSearch(preset).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("model.preset"));

  // Nothing was created.
  absl::StatusOr<v1::ListSearchesResponse> list = scheduler_->reader().ListSearches({});
  ASSERT_TRUE(list.ok());
  EXPECT_THAT(list->searches(), IsEmpty());
}

TEST_F(SchedulerTest, NoMemorySafeCandidateFailsWithTheCounts) {
  v1::CreateSearchRequest request = SmallSimSearch(3);
  request.mutable_spec()->mutable_model()->set_preset("llama3.1-405b");
  const v1::Search search = Create(request);
  EXPECT_EQ(search.state(), v1::FAILED);
  EXPECT_THAT(search.stop_reason(), HasSubstr("no memory-safe configuration to probe"));
  EXPECT_THAT(search.stop_reason(), HasSubstr("out of memory"));
  EXPECT_EQ(search.counts().selected(), 0);
  EXPECT_EQ(Get("searches/1").state(), v1::FAILED);
  EXPECT_EQ(listener_.calls, 0);
}

TEST_F(SchedulerTest, ProbesRunToSuccessAndAreRankedByMeasurement) {
  const v1::Search created = Create(SmallSimSearch(3));
  const std::string worker = Register(8);

  std::vector<v1::ProbeAssignment> assignments;
  for (int i = 0; i < 3; ++i) {
    std::optional<v1::ProbeAssignment> assignment = Acquire(worker);
    ASSERT_TRUE(assignment.has_value());
    assignments.push_back(*assignment);
    // Predicted order is probed first; measurements reverse it.
    ASSERT_TRUE(Report(worker, assignment->name(), OkResult(100.0 + 10 * i)).ok());
  }
  EXPECT_EQ(assignments[0].name(), "searches/1/candidates/0/probes/1");
  EXPECT_EQ(assignments[0].backend(), "sim");
  EXPECT_EQ(assignments[0].scope(), v1::PROBE_SCOPE_FULL);
  EXPECT_EQ(assignments[0].timed_steps(), 5);
  EXPECT_EQ(assignments[0].warmup_steps(), 2);
  EXPECT_EQ(assignments[0].seed(), 1u);
  EXPECT_EQ(assignments[0].model().preset(), "llama3.2-1b");
  EXPECT_EQ(assignments[0].config().data_parallel(),
            created.candidates(0).config().data_parallel());
  EXPECT_FALSE(Acquire(worker).has_value());

  const v1::Search search = Get(created.name());
  EXPECT_EQ(search.state(), v1::SUCCEEDED);
  EXPECT_EQ(search.counts().probed(), 3);
  EXPECT_EQ(search.counts().succeeded(), 3);
  ASSERT_EQ(search.candidates_size(), 3);
  EXPECT_EQ(search.candidates(0).name(), "searches/1/candidates/2");
  EXPECT_EQ(search.candidates(1).name(), "searches/1/candidates/1");
  EXPECT_EQ(search.candidates(2).name(), "searches/1/candidates/0");
  EXPECT_EQ(search.candidates(0).worker(), worker);
  EXPECT_THAT(search.stop_reason(), HasSubstr("probed all 3 selected candidates; best dp"));
  EXPECT_THAT(search.stop_reason(), HasSubstr("120.0 TFLOP/s per GPU (simulated)"));

  absl::StatusOr<v1::ListWorkersResponse> workers = scheduler_->reader().ListWorkers();
  ASSERT_TRUE(workers.ok());
  ASSERT_EQ(workers->workers_size(), 1);
  EXPECT_EQ(workers->workers(0).probes_completed(), 3);
  EXPECT_EQ(workers->workers(0).state(), v1::WORKER_IDLE);
}

TEST_F(SchedulerTest, AWorkersProbeShowsOnlyToAdminsAndTheOwnerOfItsSearch) {
  const Caller alice = Principal{"alice", Role::kClient};
  const Caller bob = Principal{"bob", Role::kClient};
  const Caller root = Principal{"root", Role::kAdmin};
  absl::StatusOr<v1::Search> search = scheduler_->CreateSearch(SmallSimSearch(1), alice);
  ASSERT_TRUE(search.ok()) << search.status();
  Register(8);
  std::optional<v1::ProbeAssignment> assignment = Acquire("workers/1");
  ASSERT_TRUE(assignment.has_value());
  for (const Caller& caller : {alice, root, Caller()}) {
    absl::StatusOr<v1::ListWorkersResponse> listed = scheduler_->reader().ListWorkers(caller);
    ASSERT_TRUE(listed.ok()) << listed.status();
    EXPECT_EQ(listed->workers(0).current_probe(), assignment->name()) << DescribeCaller(caller);
  }
  absl::StatusOr<v1::ListWorkersResponse> listed = scheduler_->reader().ListWorkers(bob);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->workers(0).current_probe(), "");
  // The rest of the fleet shows to everyone: what it is and that it is busy.
  EXPECT_EQ(listed->workers(0).state(), v1::WORKER_BUSY);
  EXPECT_EQ(listed->workers(0).gpus_size(), 8);
}

TEST_F(SchedulerTest, ASearchWhereNothingFitsWithoutRecomputeSearchesItAndSaysSo) {
  v1::CreateSearchRequest request = SmallSimSearch(2, /*nodes=*/2);
  request.mutable_spec()->mutable_model()->set_preset("llama3.1-70b");
  request.mutable_spec()->mutable_training()->set_global_batch_size(1024);
  request.mutable_spec()->mutable_training()->set_seq_len(8192);
  const v1::Search search = Create(request);
  EXPECT_EQ(search.state(), v1::PROBING);
  EXPECT_THAT(search.spec().space().recompute_modes(),
              ElementsAre(v1::RECOMPUTE_NONE, v1::RECOMPUTE_SELECTIVE, v1::RECOMPUTE_FULL));

  // Named modes are kept: with none only, it fails at once naming what would give candidates.
  request.mutable_spec()->mutable_space()->add_recompute_modes(v1::RECOMPUTE_NONE);
  const v1::Search failed = Create(request);
  EXPECT_EQ(failed.state(), v1::FAILED);
  EXPECT_THAT(failed.stop_reason(),
              HasSubstr("each of these changes gives candidates: recompute modes none, "
                        "selective, full: "));
  EXPECT_THAT(failed.stop_reason(), HasSubstr("; 4 nodes: 3 candidates; h200-141gb GPUs: "));
}

TEST_F(SchedulerTest, InfrastructureErrorsAreRetriedWithinMaxAttempts) {
  const v1::Search search = Create(SmallSimSearch(1));
  const std::string worker = Register(8);
  std::optional<v1::ProbeAssignment> first = Acquire(worker);
  ASSERT_TRUE(first.has_value());
  const int notified = listener_.calls;
  ASSERT_TRUE(Report(worker, first->name(), FailedResult(v1::PROBE_INFRA_ERROR)).ok());
  EXPECT_EQ(listener_.calls, notified + 1);
  std::optional<v1::ProbeAssignment> second = Acquire(worker);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->name(), "searches/1/candidates/0/probes/2");
  ASSERT_TRUE(Report(worker, second->name(), OkResult(50)).ok());
  const v1::Search done = Get(search.name());
  EXPECT_EQ(done.state(), v1::SUCCEEDED);
  EXPECT_EQ(done.candidates(0).attempts(), 2);
}

TEST_F(SchedulerTest, SearchWhoseProbesAllFailIsFailed) {
  const v1::Search search = Create(SmallSimSearch(2));
  const std::string worker = Register(8);
  for (v1::ProbeOutcome outcome : {v1::PROBE_OUT_OF_MEMORY, v1::PROBE_CRASH}) {
    std::optional<v1::ProbeAssignment> assignment = Acquire(worker);
    ASSERT_TRUE(assignment.has_value());
    ASSERT_TRUE(Report(worker, assignment->name(), FailedResult(outcome)).ok());
  }
  const v1::Search failed = Get(search.name());
  EXPECT_EQ(failed.state(), v1::FAILED);
  EXPECT_EQ(failed.counts().failed(), 2);
  EXPECT_EQ(failed.counts().succeeded(), 0);
  EXPECT_THAT(failed.stop_reason(), HasSubstr("all 2 selected candidates failed"));
  EXPECT_THAT(failed.stop_reason(), HasSubstr("out of memory: it broke"));
}

TEST_F(SchedulerTest, CancelDropsQueuedProbesAndStopsRunningOnes) {
  const v1::Search search = Create(SmallSimSearch(3));
  const std::string worker = Register(8);
  std::optional<v1::ProbeAssignment> running = Acquire(worker);
  ASSERT_TRUE(running.has_value());

  absl::StatusOr<v1::Search> cancelled = scheduler_->CancelSearch(search.name());
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->state(), v1::CANCELLED);
  for (const v1::Candidate& candidate : cancelled->candidates()) {
    EXPECT_EQ(candidate.state(), v1::CANDIDATE_SKIPPED);
  }
  absl::StatusOr<v1::HeartbeatResponse> heartbeat = Heartbeat(worker, {running->name()});
  ASSERT_TRUE(heartbeat.ok());
  EXPECT_THAT(heartbeat->cancel_probes(), ElementsAre(running->name()));
  EXPECT_FALSE(Acquire(worker).has_value());
  EXPECT_EQ(Report(worker, running->name(), OkResult(1)).code(),
            absl::StatusCode::kFailedPrecondition);

  EXPECT_EQ(scheduler_->CancelSearch(search.name()).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(scheduler_->CancelSearch("searches/42").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(SchedulerTest, GetNamesMissingAndMalformedSearches) {
  const absl::Status missing = scheduler_->reader().GetSearch("searches/42").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.message(), HasSubstr("searches/42"));
  EXPECT_EQ(scheduler_->reader().GetSearch("searches/x").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(SchedulerTest, ListSearchesPagesNewestFirstWithoutCandidates) {
  for (int i = 0; i < 3; ++i) Create(SmallSimSearch(1));
  v1::ListSearchesRequest request;
  request.set_page_size(2);
  absl::StatusOr<v1::ListSearchesResponse> first = scheduler_->reader().ListSearches(request);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->searches_size(), 2);
  EXPECT_EQ(first->searches(0).name(), "searches/3");
  EXPECT_EQ(first->searches(1).name(), "searches/2");
  EXPECT_THAT(first->searches(0).candidates(), IsEmpty());
  ASSERT_FALSE(first->next_page_token().empty());

  request.set_page_token(first->next_page_token());
  absl::StatusOr<v1::ListSearchesResponse> second = scheduler_->reader().ListSearches(request);
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->searches_size(), 1);
  EXPECT_EQ(second->searches(0).name(), "searches/1");
  EXPECT_TRUE(second->next_page_token().empty());

  request.set_page_token("garbage");
  EXPECT_EQ(scheduler_->reader().ListSearches(request).status().code(),
            absl::StatusCode::kInvalidArgument);
  request.clear_page_token();
  request.set_page_size(1001);
  EXPECT_EQ(scheduler_->reader().ListSearches(request).status(),
            absl::InvalidArgumentError("page_size (1001) must be in [0, 1000]"));
}

TEST_F(SchedulerTest, WatchersHearEveryChangeUntilTheSearchEnds) {
  const std::string worker = Register(8);
  const v1::Search search = Create(SmallSimSearch(1));
  RecordingObserver observer;
  absl::StatusOr<Scheduler::WatchStart> start = scheduler_->Watch(search.name(), &observer);
  ASSERT_TRUE(start.ok());
  EXPECT_FALSE(start->ended);
  EXPECT_EQ(start->search.state(), v1::PROBING);

  std::optional<v1::ProbeAssignment> assignment = Acquire(worker);
  ASSERT_TRUE(assignment.has_value());
  ASSERT_TRUE(Report(worker, assignment->name(), OkResult(402.1)).ok());
  EXPECT_THAT(observer.states, ElementsAre(v1::PROBING, v1::SUCCEEDED));
  ASSERT_EQ(observer.events.size(), 3u);
  const v1::SearchEvent& leased = observer.events[0];
  EXPECT_EQ(leased.kind(), v1::EVENT_LEASED);
  EXPECT_EQ(leased.candidate(), "searches/1/candidates/0");
  EXPECT_EQ(leased.probe(), assignment->name());
  ASSERT_EQ(leased.workers_size(), 1);
  EXPECT_EQ(leased.workers(0).worker(), worker);
  const v1::SearchEvent& probed = observer.events[1];
  EXPECT_EQ(probed.kind(), v1::EVENT_PROBED);
  EXPECT_EQ(probed.outcome(), v1::PROBE_OK);
  EXPECT_DOUBLE_EQ(probed.tflops_per_gpu(), 402.1);
  EXPECT_EQ(probed.result_source(), "simulated");
  EXPECT_TRUE(probed.has_time());
  EXPECT_EQ(RenderSearchEvent(probed),
            "searches/1/candidates/0 probed on workers/1: 402.1 TFLOP/s per GPU (simulated)");
  EXPECT_EQ(observer.events[2].kind(), v1::EVENT_STOPPED);
  EXPECT_EQ(observer.events[2].state(), v1::SUCCEEDED);
  // Each change carries the candidates it changed, and applied to the start they give what
  // GetSearch gives.
  for (const v1::WatchSearchResponse& change : observer.changes) {
    EXPECT_EQ(change.search().candidates_size(), 0);
    ASSERT_EQ(change.changed_candidates_size(), 1);
    EXPECT_EQ(change.changed_candidates(0).name(), "searches/1/candidates/0");
  }
  WatchedSearch watched;
  v1::WatchSearchResponse first;
  *first.mutable_search() = start->search;
  ASSERT_TRUE(watched.Apply(first).ok());
  for (const v1::WatchSearchResponse& change : observer.changes) {
    ASSERT_TRUE(watched.Apply(change).ok());
  }
  EXPECT_EQ(watched.View().SerializeAsString(), Get(search.name()).SerializeAsString());

  // An ended search is returned as is, without registering.
  RecordingObserver late;
  absl::StatusOr<Scheduler::WatchStart> ended = scheduler_->Watch(search.name(), &late);
  ASSERT_TRUE(ended.ok());
  EXPECT_TRUE(ended->ended);
  EXPECT_EQ(ended->search.state(), v1::SUCCEEDED);
}

TEST_F(SchedulerTest, ACandidateChangeLeftOutOfTheStoredUpdateIsCaught) {
  const std::string worker = Register(8);
  Create(SmallSimSearch(1));
  // The lease's change to candidates/0 is stored without the candidate, as it would be if the
  // scheduler had changed it without naming it in the search's update.
  store_->LoseNextCandidateWrites(1);
  std::optional<v1::ProbeAssignment> assignment;
  EXPECT_NONFATAL_FAILURE(assignment = Acquire(worker),
                          "searches/1 in the store differs from the scheduler's");
  ASSERT_TRUE(assignment.has_value());
  // The result changes (and names) the candidate again.
  EXPECT_TRUE(Report(worker, assignment->name(), OkResult(300)).ok());
}

TEST_F(SchedulerTest, TheInvariantCheckerCatchesABusyWorkerWithoutALease) {
  const std::string worker = Register(8);
  SchedulerInvariants::MarkBusyWithoutLease(*scheduler_.get(), worker);
  // Whatever the next call, the fixture checks the invariants once it returns.
  EXPECT_NONFATAL_FAILURE(scheduler_->CheckLeases(),
                          worker + " is WORKER_BUSY but holds no share of a live lease");
  // What was planted stays: nothing is left for the end of the test to check.
  scheduler_.reset();
}

TEST_F(SchedulerTest, ShutdownReleasesWatchers) {
  const v1::Search search = Create(SmallSimSearch(1));
  RecordingObserver observer;
  ASSERT_TRUE(scheduler_->Watch(search.name(), &observer).ok());
  scheduler_->Shutdown();
  EXPECT_TRUE(observer.shut_down);
  EXPECT_EQ(scheduler_->CreateSearch(SmallSimSearch(1)).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(scheduler_->Watch(search.name(), &observer).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST_F(SchedulerTest, UnwatchStopsNotifications) {
  const v1::Search search = Create(SmallSimSearch(1));
  RecordingObserver observer;
  ASSERT_TRUE(scheduler_->Watch(search.name(), &observer).ok());
  scheduler_->Unwatch(search.name(), &observer);
  ASSERT_TRUE(Acquire(Register(8)).has_value());
  EXPECT_THAT(observer.events, IsEmpty());
}

TEST_F(SchedulerTest, AdaptiveStopsBeforeProbingEverythingAndConfirmsCloseLeaders) {
  const std::string worker = Register(8);
  v1::CreateSearchRequest request = SmallSimSearch(0);
  request.mutable_spec()->set_policy(v1::ADAPTIVE);
  const v1::Search search = Create(request);

  // Every probe measures its prediction with 3% step-to-step noise: the leaders' short probes
  // cannot be told apart, so they are confirmed with 4 x 5 timed steps.
  const std::vector<int64_t> timed_steps = RunToEnd(worker, search.name(), 1.0, 0.03);
  const v1::Search done = Get(search.name());
  EXPECT_EQ(done.state(), v1::SUCCEEDED) << done.stop_reason();
  EXPECT_THAT(done.stop_reason(), HasSubstr("no unprobed candidate can beat the best measured"));
  EXPECT_LT(done.counts().selected(), done.counts().memory_safe());
  EXPECT_GE(done.counts().confirmations(), 1);
  EXPECT_EQ(std::count(timed_steps.begin(), timed_steps.end(), 20), done.counts().confirmations());
  EXPECT_EQ(done.counts().probed(), static_cast<int64_t>(timed_steps.size()));
  const v1::Candidate& best = done.candidates(0);
  EXPECT_TRUE(best.has_screening_result());
  EXPECT_EQ(best.probe_result().step_times_seconds_size(), 20);
  EXPECT_EQ(best.screening_result().step_times_seconds_size(), 5);
  EXPECT_GT(done.counts().gpu_seconds(), 0);
}

TEST_F(SchedulerTest, BudgetOfProbesEndsTheSearchAndSkipsTheRest) {
  const std::string worker = Register(8);
  v1::CreateSearchRequest request = SmallSimSearch(0);
  request.mutable_spec()->set_policy(v1::EXHAUSTIVE);
  request.mutable_spec()->mutable_budget()->set_max_probes(3);
  const v1::Search search = Create(request);
  RunToEnd(worker, search.name(), 1.0, 0);
  const v1::Search done = Get(search.name());
  EXPECT_EQ(done.state(), v1::SUCCEEDED);
  EXPECT_EQ(done.stop_reason(), "budget: max_probes (3) reached");
  EXPECT_EQ(done.counts().probed(), 3);
  int64_t skipped = 0;
  for (const v1::Candidate& candidate : done.candidates()) {
    skipped += candidate.state() == v1::CANDIDATE_SKIPPED;
  }
  EXPECT_EQ(skipped, done.counts().selected() - 3);
}

TEST_F(SchedulerTest, DeadlineStopsRunningProbesAndEndsTheSearch) {
  const std::string worker = Register(8);
  v1::CreateSearchRequest request = SmallSimSearch(3);
  request.mutable_spec()->mutable_budget()->set_deadline_seconds(10);
  const v1::Search search = Create(request);
  std::optional<v1::ProbeAssignment> running = Acquire(worker);
  ASSERT_TRUE(running.has_value());
  clock_.Advance(absl::Seconds(11));
  ASSERT_TRUE(Heartbeat(worker).ok());
  scheduler_->CheckLeases();
  const v1::Search done = Get(search.name());
  EXPECT_EQ(done.state(), v1::FAILED);
  EXPECT_EQ(done.stop_reason(), "budget: deadline (10s) passed");
  EXPECT_THAT(Heartbeat(worker, {running->name()})->cancel_probes(), ElementsAre(running->name()));
}

TEST_F(SchedulerTest, FailuresAreCountedByOutcome) {
  const std::string worker = Register(8);
  const v1::Search search = Create(SmallSimSearch(2));
  for (v1::ProbeOutcome outcome : {v1::PROBE_OUT_OF_MEMORY, v1::PROBE_TIMEOUT}) {
    std::optional<v1::ProbeAssignment> assignment = Acquire(worker);
    ASSERT_TRUE(assignment.has_value());
    ASSERT_TRUE(Report(worker, assignment->name(), FailedResult(outcome)).ok());
  }
  const v1::SearchCounts counts = Get(search.name()).counts();
  EXPECT_EQ(counts.failed(), 2);
  EXPECT_EQ(counts.failed_by_outcome().at("PROBE_OUT_OF_MEMORY"), 1);
  EXPECT_EQ(counts.failed_by_outcome().at("PROBE_TIMEOUT"), 1);
}

TEST_F(SchedulerTest, EventLogKeepsEveryChangeInPages) {
  const std::string worker = Register(8);
  const v1::Search search = Create(SmallSimSearch(2));
  for (int i = 0; i < 2; ++i) {
    std::optional<v1::ProbeAssignment> assignment = Acquire(worker);
    ASSERT_TRUE(assignment.has_value());
    ASSERT_TRUE(Report(worker, assignment->name(), OkResult(100 + i)).ok());
  }
  v1::ListSearchEventsRequest request;
  request.set_name(search.name());
  request.set_page_size(5);
  absl::StatusOr<v1::ListSearchEventsResponse> first =
      scheduler_->reader().ListSearchEvents(request);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->events_size(), 5);
  EXPECT_THAT(first->events(0).text(), HasSubstr("search created"));
  EXPECT_THAT(first->events(1).text(),
              HasSubstr("queued searches/1/candidates/0 dp8 tp1 pp1 cp1 mbs8: predicted rank 1, "
                        "selected 1 of 2"));
  EXPECT_THAT(first->events(2).text(), HasSubstr("queued searches/1/candidates/1"));
  EXPECT_THAT(first->events(3).text(), HasSubstr("searches/1/candidates/0 leased to workers/1"));
  EXPECT_THAT(first->events(4).text(), HasSubstr("searches/1/candidates/0 probed on workers/1"));
  ASSERT_FALSE(first->next_page_token().empty());
  request.set_page_token(first->next_page_token());
  absl::StatusOr<v1::ListSearchEventsResponse> rest =
      scheduler_->reader().ListSearchEvents(request);
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(rest->events_size(), 3);
  EXPECT_GT(rest->events(0).sequence(), first->events(4).sequence());
  EXPECT_THAT(rest->events(2).text(), HasSubstr("search succeeded"));
  EXPECT_TRUE(rest->next_page_token().empty());

  request.set_name("searches/99");
  request.clear_page_token();
  EXPECT_EQ(scheduler_->reader().ListSearchEvents(request).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(SchedulerTest, AssignmentsCarryShortStepsAndADeadlineFromThePrediction) {
  v1::CreateSearchRequest request = SmallSimSearch(1);
  request.mutable_spec()->mutable_training()->set_global_batch_size(1024);
  Create(request);
  std::optional<v1::ProbeAssignment> probe = Acquire(Register(8));
  ASSERT_TRUE(probe.has_value());
  const int64_t pp = probe->config().pipeline_parallel();
  EXPECT_THAT(probe->micro_batch_counts(), ElementsAre(2 * pp, 4 * pp));
  // Derived from the predicted duration (probe_timing_test holds the formula).
  EXPECT_GE(probe->deadline_seconds(), kMinDeadlineSeconds);

  // A deadline the search sets wins.
  request.mutable_spec()->mutable_probe()->set_deadline_seconds(45);
  Create(request);
  std::optional<v1::ProbeAssignment> bounded = Acquire(Register(8));
  ASSERT_TRUE(bounded.has_value());
  EXPECT_EQ(bounded->deadline_seconds(), 45);
}

}  // namespace
}  // namespace paratune
