// The events the scheduler logs, one test per kind (proto/search_event.proto): each is
// emitted where it happens, with the fields its kind lists, as ListSearchEvents reads it
// back, text rendered.
#include <algorithm>
#include <cstdint>
#include <iterator>
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

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

std::vector<v1::SearchEventKind> KindsOf(const std::vector<v1::SearchEvent>& events) {
  std::vector<v1::SearchEventKind> kinds;
  for (const v1::SearchEvent& event : events) kinds.push_back(event.kind());
  return kinds;
}

// The events of `kind`, in order.
std::vector<v1::SearchEvent> OfKind(const std::vector<v1::SearchEvent>& events,
                                    v1::SearchEventKind kind) {
  std::vector<v1::SearchEvent> found;
  std::copy_if(events.begin(), events.end(), std::back_inserter(found),
               [&](const v1::SearchEvent& event) { return event.kind() == kind; });
  return found;
}

TEST_F(SchedulerTest, ASearchLogsItsCreationPicksLeaseResultAndEnd) {
  const std::string worker = Register(8);
  const v1::Search search = Create(SmallSimSearch(1));
  std::optional<v1::ProbeAssignment> assignment = Acquire(worker);
  ASSERT_TRUE(assignment.has_value());
  ASSERT_TRUE(Report(worker, assignment->name(), OkResult(402.1)).ok());

  const std::vector<v1::SearchEvent> events = Events(search.name());
  ASSERT_THAT(KindsOf(events), ElementsAre(v1::EVENT_CREATED, v1::EVENT_PLANNED, v1::EVENT_LEASED,
                                           v1::EVENT_PROBED, v1::EVENT_STOPPED));
  for (const v1::SearchEvent& event : events) {
    EXPECT_GT(event.sequence(), 0);
    EXPECT_TRUE(event.has_time());
    EXPECT_THAT(event.text(), Not(IsEmpty()));
  }
  const v1::SearchEvent& created = events[0];
  EXPECT_EQ(created.policy(), v1::TOP_K);
  EXPECT_EQ(created.counts().memory_safe(), search.counts().memory_safe());
  EXPECT_THAT(created.text(), HasSubstr("search created: "));

  const v1::SearchEvent& planned = events[1];
  const v1::Candidate& candidate = search.candidates(0);
  EXPECT_EQ(planned.candidate(), candidate.name());
  EXPECT_EQ(planned.config().SerializeAsString(), candidate.config().SerializeAsString());
  EXPECT_EQ(planned.reason(), candidate.selection_note());

  const v1::SearchEvent& leased = events[2];
  EXPECT_EQ(leased.candidate(), candidate.name());
  EXPECT_EQ(leased.probe(), assignment->name());
  EXPECT_EQ(leased.attempt(), 1);
  EXPECT_EQ(leased.max_attempts(), search.spec().probe().max_attempts());
  EXPECT_EQ(leased.scope(), assignment->scope());
  EXPECT_EQ(leased.gpus(), assignment->num_ranks());
  ASSERT_EQ(leased.workers_size(), 1);
  EXPECT_EQ(leased.workers(0).worker(), worker);
  EXPECT_EQ(leased.workers(0).num_ranks(), assignment->num_ranks());

  const v1::SearchEvent& probed = events[3];
  EXPECT_EQ(probed.probe(), assignment->name());
  EXPECT_EQ(probed.outcome(), v1::PROBE_OK);
  EXPECT_DOUBLE_EQ(probed.tflops_per_gpu(), 402.1);
  EXPECT_EQ(probed.result_source(), "simulated");
  EXPECT_FALSE(probed.screening_result_stands());
  ASSERT_EQ(probed.workers_size(), 1);
  EXPECT_EQ(probed.workers(0).worker(), worker);

  const v1::SearchEvent& stopped = events[4];
  EXPECT_EQ(stopped.state(), v1::SUCCEEDED);
  EXPECT_EQ(stopped.reason(), Get(search.name()).stop_reason());
}

TEST_F(SchedulerTest, ASearchWithNothingToProbeLogsItsCreationAndFailure) {
  v1::CreateSearchRequest request = SmallSimSearch(3);
  request.mutable_spec()->mutable_model()->set_preset("llama3.1-405b");
  const v1::Search search = Create(request);
  ASSERT_EQ(search.state(), v1::FAILED);
  const std::vector<v1::SearchEvent> events = Events(search.name());
  ASSERT_THAT(KindsOf(events), ElementsAre(v1::EVENT_CREATED, v1::EVENT_STOPPED));
  EXPECT_EQ(events[1].state(), v1::FAILED);
  EXPECT_THAT(events[1].reason(), HasSubstr("no memory-safe configuration to probe"));
  EXPECT_THAT(events[1].text(), HasSubstr("search failed: no memory-safe configuration"));
}

TEST_F(SchedulerTest, ALostWorkerLogsTheLossTheRequeueAndTheGiveUp) {
  const v1::Search search = Create(SmallSimSearch(1));
  const std::string first = Register(8);
  ASSERT_TRUE(Acquire(first).has_value());
  clock_.Advance(absl::Seconds(7));
  const std::string second = Register(8);
  scheduler_->CheckLeases();
  ASSERT_TRUE(Acquire(second).has_value());
  clock_.Advance(absl::Seconds(7));
  scheduler_->CheckLeases();

  const std::vector<v1::SearchEvent> events = Events(search.name());
  const std::vector<v1::SearchEvent> lost = OfKind(events, v1::EVENT_WORKER_LOST);
  ASSERT_EQ(lost.size(), 2u);
  EXPECT_EQ(lost[0].probe(), "searches/1/candidates/0/probes/1");
  EXPECT_EQ(lost[0].candidate(), "searches/1/candidates/0");
  ASSERT_EQ(lost[0].workers_size(), 1);
  EXPECT_EQ(lost[0].workers(0).worker(), first);
  EXPECT_THAT(lost[0].reason(), HasSubstr("no heartbeat for"));

  const std::vector<v1::SearchEvent> requeued = OfKind(events, v1::EVENT_REQUEUED);
  ASSERT_EQ(requeued.size(), 1u);
  EXPECT_EQ(requeued[0].probe(), "searches/1/candidates/0/probes/1");
  EXPECT_EQ(requeued[0].attempt(), 1);
  EXPECT_EQ(requeued[0].max_attempts(), 2);
  EXPECT_EQ(requeued[0].reason(), first + " lost: " + lost[0].reason());

  const std::vector<v1::SearchEvent> gave_up = OfKind(events, v1::EVENT_GAVE_UP);
  ASSERT_EQ(gave_up.size(), 1u);
  EXPECT_EQ(gave_up[0].probe(), "searches/1/candidates/0/probes/2");
  EXPECT_EQ(gave_up[0].attempt(), 2);
  EXPECT_EQ(gave_up[0].max_attempts(), 2);
  EXPECT_THAT(gave_up[0].text(), HasSubstr("gave up after 2 of 2 attempts"));
  // The give-up follows its loss, and ends the search.
  EXPECT_THAT(KindsOf({events.end() - 3, events.end()}),
              ElementsAre(v1::EVENT_WORKER_LOST, v1::EVENT_GAVE_UP, v1::EVENT_STOPPED));
  EXPECT_EQ(events.back().state(), v1::FAILED);
}

TEST_F(SchedulerTest, AGangMemberLogsItsFinishedShareAndTheResultNamesEveryMember) {
  const std::string a = Register(4);
  const std::string b = Register(4);
  const v1::Search search = Create(FullScopeSearch());
  std::optional<v1::ProbeAssignment> first = Acquire(a);
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(Acquire(b).has_value());
  ASSERT_TRUE(Report(a, first->name(), OkResult(300)).ok());
  ASSERT_TRUE(Report(b, first->name(), OkResult(250)).ok());

  const std::vector<v1::SearchEvent> events = Events(search.name());
  const std::vector<v1::SearchEvent> leased = OfKind(events, v1::EVENT_LEASED);
  ASSERT_EQ(leased.size(), 1u);
  ASSERT_EQ(leased[0].workers_size(), 2);
  EXPECT_EQ(leased[0].workers(1).worker(), b);
  EXPECT_EQ(leased[0].workers(1).first_rank(), 4);
  EXPECT_EQ(leased[0].gpus(), 8);
  EXPECT_EQ(leased[0].scope(), v1::PROBE_SCOPE_FULL);

  const std::vector<v1::SearchEvent> shares = OfKind(events, v1::EVENT_SHARE_FINISHED);
  ASSERT_EQ(shares.size(), 1u);
  EXPECT_EQ(shares[0].probe(), first->name());
  ASSERT_EQ(shares[0].workers_size(), 1);
  EXPECT_EQ(shares[0].workers(0).worker(), a);

  const std::vector<v1::SearchEvent> probed = OfKind(events, v1::EVENT_PROBED);
  ASSERT_EQ(probed.size(), 1u);
  ASSERT_EQ(probed[0].workers_size(), 2);
  EXPECT_EQ(probed[0].workers(0).worker(), a);
  EXPECT_EQ(probed[0].workers(1).worker(), b);
  EXPECT_THAT(probed[0].text(), HasSubstr(" probed on " + a + " + " + b + ": "));
}

TEST_F(SchedulerTest, AFailedGangMemberIsTheOneTheResultNames) {
  const std::string a = Register(4);
  const std::string b = Register(4);
  const v1::Search search = Create(FullScopeSearch());
  std::optional<v1::ProbeAssignment> first = Acquire(a);
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(Acquire(b).has_value());
  ASSERT_TRUE(Report(b, first->name(), FailedResult(v1::PROBE_OUT_OF_MEMORY)).ok());

  const std::vector<v1::SearchEvent> probed = OfKind(Events(search.name()), v1::EVENT_PROBED);
  ASSERT_EQ(probed.size(), 1u);
  EXPECT_EQ(probed[0].outcome(), v1::PROBE_OUT_OF_MEMORY);
  ASSERT_EQ(probed[0].workers_size(), 1);
  EXPECT_EQ(probed[0].workers(0).worker(), b);
  EXPECT_THAT(probed[0].reason(), HasSubstr("(member 2 of 2)"));
  EXPECT_DOUBLE_EQ(probed[0].tflops_per_gpu(), 0);
}

TEST_F(SchedulerTest, AdaptiveLogsItsConfirmations) {
  const std::string worker = Register(8);
  v1::CreateSearchRequest request = SmallSimSearch(0);
  request.mutable_spec()->set_policy(v1::ADAPTIVE);
  const v1::Search search = Create(request);
  RunToEnd(worker, search.name(), 1.0, 0.03);

  const v1::Search done = Get(search.name());
  const std::vector<v1::SearchEvent> events = Events(search.name());
  const std::vector<v1::SearchEvent> confirming = OfKind(events, v1::EVENT_CONFIRMING);
  ASSERT_EQ(static_cast<int64_t>(confirming.size()), done.counts().confirmations());
  ASSERT_FALSE(confirming.empty());
  for (const v1::SearchEvent& event : confirming) {
    EXPECT_THAT(event.candidate(), HasSubstr("/candidates/"));
    EXPECT_GT(event.config().data_parallel(), 0);
    EXPECT_THAT(event.reason(), Not(IsEmpty()));
  }
  EXPECT_EQ(static_cast<int64_t>(OfKind(events, v1::EVENT_PLANNED).size()),
            done.counts().selected());
}

TEST_F(SchedulerTest, AnOutOfMemoryResultLogsTheConfigurationsItRulesOut) {
  const std::string worker = Register(8);
  v1::CreateSearchRequest request = SmallSimSearch(0);
  request.mutable_spec()->set_policy(v1::ADAPTIVE);
  const v1::Search search = Create(request);
  while (std::optional<v1::ProbeAssignment> assignment = Acquire(worker)) {
    ASSERT_TRUE(Report(worker, assignment->name(), FailedResult(v1::PROBE_OUT_OF_MEMORY)).ok());
  }

  const std::vector<v1::SearchEvent> skipped = OfKind(Events(search.name()), v1::EVENT_SKIPPED);
  ASSERT_FALSE(skipped.empty());
  std::set<std::string> picked;
  const v1::Search done = Get(search.name());
  for (const v1::Candidate& candidate : done.candidates()) {
    picked.insert(candidate.config().SerializeAsString());
  }
  for (const v1::SearchEvent& event : skipped) {
    EXPECT_EQ(event.reason(), "not fitting in memory (calibrated estimate)");
    ASSERT_GT(event.ruled_out_size(), 0);
    // Never picked: the event is the one place that names them.
    for (const v1::ParallelConfig& config : event.ruled_out()) {
      EXPECT_EQ(picked.count(config.SerializeAsString()), 0u);
    }
  }
}

TEST_F(SchedulerTest, WaitingReasonsAreLoggedAsTheyChange) {
  v1::CreateSearchRequest request = SmallSimSearch(0);
  request.mutable_spec()->set_policy(v1::EXHAUSTIVE);
  const v1::Search search = Create(request);
  Register(8, "cuda");
  const std::string sim = Register(8);

  const std::vector<v1::SearchEvent> waiting = OfKind(Events(search.name()), v1::EVENT_WAITING);
  ASSERT_FALSE(waiting.empty());
  EXPECT_THAT(waiting.front().reason(), HasSubstr("backend sim"));
  EXPECT_THAT(waiting.front().candidate(), HasSubstr("/candidates/"));
  // The sim worker can host them: their reasons are cleared, each once.
  EXPECT_TRUE(waiting.back().reason().empty());
  EXPECT_THAT(waiting.back().text(), HasSubstr(" can be placed again"));
}

TEST_F(SchedulerTest, CancellationLogsWhoAndHowManyProbesWereStopped) {
  const v1::Search search = Create(SmallSimSearch(3));
  const std::string worker = Register(8);
  ASSERT_TRUE(Acquire(worker).has_value());
  ASSERT_TRUE(scheduler_->CancelSearch(search.name()).ok());

  const std::vector<v1::SearchEvent> events = Events(search.name());
  ASSERT_FALSE(events.empty());
  const v1::SearchEvent& cancelled = events.back();
  EXPECT_EQ(cancelled.kind(), v1::EVENT_CANCELLED);
  EXPECT_EQ(cancelled.state(), v1::CANCELLED);
  EXPECT_EQ(cancelled.stopped_probes(), 1);
  EXPECT_EQ(cancelled.principal(), "");
  EXPECT_THAT(cancelled.reason(), HasSubstr("cancelled by "));
  EXPECT_EQ(cancelled.text(), "search cancelled; 1 running probes told to stop");
}

TEST_F(SchedulerRestartTest, ARestartLogsThatTheSearchResumed) {
  const std::string worker = Register(8);
  const v1::Search search = Create(SmallSimSearch(2));
  ASSERT_TRUE(Acquire(worker).has_value());
  Restart();
  const std::vector<v1::SearchEvent> resumed = OfKind(Events(search.name()), v1::EVENT_RESUMED);
  ASSERT_EQ(resumed.size(), 1u);
  EXPECT_EQ(resumed[0].text(), "server restarted; search resumed");
}

}  // namespace
}  // namespace paratune
