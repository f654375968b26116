#include "server/core/search_events.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/core/gang_placement.h"
#include "server/core/lease.h"

namespace paratune {
namespace {

v1::Worker Node(const std::string& hostname, int gpus) {
  v1::Worker worker;
  worker.set_hostname(hostname);
  worker.set_gpu_type("h100-80gb");
  for (int index = 0; index < gpus; ++index) worker.add_gpus()->set_index(index);
  return worker;
}

// Candidate 1 of searches/3 on workers/4 (ranks 0-3) and workers/6 (ranks 4-7).
internal::LeaseState GangLease() {
  const v1::Worker a = Node("node-a", 4);
  const v1::Worker b = Node("node-b", 4);
  return MakeLease("searches/3/candidates/1/probes/2", 3, 1, v1::PROBE_SCOPE_FULL, 8,
                   {{4, 0, 4}, {6, 4, 4}}, {&a, &b}, 1'000);
}

TEST(SearchEventsTest, AResultNamesEveryMemberOnSuccessAndTheReporterOtherwise) {
  const internal::LeaseState lease = GangLease();
  v1::ProbeResult ok;
  ok.set_outcome(v1::PROBE_OK);
  ok.set_model_tflops_per_gpu(402.1);
  ok.add_extrapolated("full_step");
  const v1::SearchEvent probed = ProbedEvent(lease, 1, ok);
  EXPECT_EQ(probed.kind(), v1::EVENT_PROBED);
  EXPECT_EQ(probed.candidate(), "searches/3/candidates/1");
  EXPECT_EQ(probed.probe(), "searches/3/candidates/1/probes/2");
  ASSERT_EQ(probed.workers_size(), 2);
  EXPECT_EQ(probed.workers(0).worker(), "workers/4");
  EXPECT_EQ(probed.workers(1).hostname(), "node-b");
  EXPECT_EQ(probed.workers(1).first_rank(), 4);
  EXPECT_DOUBLE_EQ(probed.tflops_per_gpu(), 402.1);
  EXPECT_EQ(probed.result_source(), "extrapolated");
  EXPECT_TRUE(probed.reason().empty());

  v1::ProbeResult crashed;
  crashed.set_outcome(v1::PROBE_CRASH);
  crashed.set_message("NCCL error");
  crashed.set_simulated(true);
  const v1::SearchEvent failed = ProbedEvent(lease, 1, crashed);
  ASSERT_EQ(failed.workers_size(), 1);
  EXPECT_EQ(failed.workers(0).worker(), "workers/6");
  EXPECT_EQ(failed.reason(), "NCCL error");
  EXPECT_EQ(failed.result_source(), "simulated");
  EXPECT_DOUBLE_EQ(failed.tflops_per_gpu(), 0);
}

TEST(SearchEventsTest, ALostWorkerIsNamedOnlyWhenItIsAMember) {
  const internal::LeaseState lease = GangLease();
  const v1::SearchEvent lost = WorkerLostEvent(lease, 6, "no heartbeat for 6s");
  ASSERT_EQ(lost.workers_size(), 1);
  EXPECT_EQ(lost.workers(0).worker(), "workers/6");
  EXPECT_EQ(lost.reason(), "no heartbeat for 6s");
  EXPECT_EQ(WorkerLostEvent(lease, 5, "gone").workers_size(), 0);
}

TEST(SearchEventsTest, LeasesCountTheAttemptAndRequeuesNameTheProbeThatEnded) {
  const internal::LeaseState lease = GangLease();
  v1::Candidate candidate;
  candidate.set_name("searches/3/candidates/1");
  candidate.set_attempts(2);
  const v1::SearchEvent leased = LeasedEvent(candidate, lease, 3);
  EXPECT_EQ(leased.attempt(), 2);
  EXPECT_EQ(leased.max_attempts(), 3);
  EXPECT_EQ(leased.gpus(), 8);
  EXPECT_EQ(leased.scope(), v1::PROBE_SCOPE_FULL);
  EXPECT_EQ(leased.workers_size(), 2);

  const v1::SearchEvent requeued = RequeuedEvent(candidate, 3, 1, 3, false, "overdue");
  EXPECT_EQ(requeued.kind(), v1::EVENT_REQUEUED);
  EXPECT_EQ(requeued.probe(), "searches/3/candidates/1/probes/2");
  EXPECT_EQ(RequeuedEvent(candidate, 3, 1, 3, true, "overdue").kind(), v1::EVENT_GAVE_UP);
  EXPECT_FALSE(leased.confirmation());
}

TEST(SearchEventsTest, AConfirmationsLeaseCarriesTheMeasurementItConfirms) {
  v1::Candidate candidate;
  candidate.set_name("searches/3/candidates/1");
  candidate.set_attempts(2);
  v1::ProbeResult& screening = *candidate.mutable_screening_result();
  screening.set_outcome(v1::PROBE_OK);
  screening.set_model_tflops_per_gpu(620.9);
  screening.set_simulated(true);
  candidate.set_screening_attempts(1);
  const v1::SearchEvent leased = LeasedEvent(candidate, GangLease(), 2);
  EXPECT_TRUE(leased.confirmation());
  EXPECT_EQ(leased.tflops_per_gpu(), 620.9);
  EXPECT_EQ(leased.result_source(), "simulated");
  // Its own first attempt, not the candidate's second.
  EXPECT_EQ(leased.attempt(), 1);
  const v1::SearchEvent requeued = RequeuedEvent(candidate, 3, 1, 2, false, "worker lost");
  EXPECT_TRUE(requeued.confirmation());
  EXPECT_EQ(requeued.attempt(), 1);
  EXPECT_EQ(requeued.probe(), "searches/3/candidates/1/probes/2");
}

}  // namespace
}  // namespace paratune
