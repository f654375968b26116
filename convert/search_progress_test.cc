#include "convert/search_progress.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

v1::Candidate WithState(v1::CandidateState state) {
  v1::Candidate candidate;
  v1::ParallelConfig& config = *candidate.mutable_config();
  config.set_data_parallel(4);
  config.set_tensor_parallel(2);
  config.set_pipeline_parallel(1);
  config.set_context_parallel(1);
  config.set_micro_batch_size(1);
  candidate.set_state(state);
  return candidate;
}

v1::Candidate Probed(v1::ProbeOutcome outcome, double tflops) {
  v1::Candidate candidate = WithState(v1::CANDIDATE_PROBED);
  candidate.mutable_probe_result()->set_outcome(outcome);
  candidate.mutable_probe_result()->set_model_tflops_per_gpu(tflops);
  candidate.mutable_probe_result()->set_simulated(true);
  return candidate;
}

// An ADAPTIVE search of 40 candidates: 2 probed, 1 running, 1 queued, 3 more may be picked.
v1::Search Adaptive() {
  v1::Search search;
  search.set_name("searches/3");
  search.set_state(v1::PROBING);
  search.mutable_counts()->set_memory_safe(40);
  search.mutable_counts()->set_still_contending(3);
  *search.add_candidates() = Probed(v1::PROBE_OK, 410.5);
  *search.add_candidates() = Probed(v1::PROBE_OUT_OF_MEMORY, 0);
  *search.add_candidates() = WithState(v1::CANDIDATE_RUNNING);
  *search.add_candidates() = WithState(v1::CANDIDATE_QUEUED);
  return search;
}

TEST(ProgressOfTest, CountsCandidatesAgainstEveryCandidateTheSearchMayProbe) {
  v1::Search search = Adaptive();
  search.mutable_counts()->set_probed(2);
  const v1::SearchProgress progress = ProgressOf(search);
  EXPECT_EQ(progress.candidates(), 40);
  EXPECT_EQ(progress.probed(), 2);
  EXPECT_EQ(progress.ok(), 1);
  EXPECT_EQ(progress.failed(), 1);
  EXPECT_EQ(progress.probes(), 2);
  EXPECT_EQ(progress.running(), 1);
  EXPECT_EQ(progress.waiting(), 1);
  EXPECT_EQ(progress.confirming(), 0);
  // The running one, the waiting one and the 3 the policy may still pick.
  EXPECT_EQ(progress.could_still_win(), 5);
  EXPECT_EQ(progress.waiting_reason(), "");
}

TEST(ProgressOfTest, TheCandidatesStayAsTheSearchGoesOn) {
  v1::Search search = Adaptive();
  const int64_t candidates = ProgressOf(search).candidates();
  // The running probe finishes and ADAPTIVE picks one more.
  *search.mutable_candidates(2) = Probed(v1::PROBE_OK, 300);
  *search.add_candidates() = WithState(v1::CANDIDATE_QUEUED);
  search.mutable_counts()->set_still_contending(2);
  const v1::SearchProgress progress = ProgressOf(search);
  EXPECT_EQ(progress.candidates(), candidates);
  EXPECT_EQ(progress.probed(), 3);
  EXPECT_EQ(progress.could_still_win(), 4);
}

TEST(ProgressOfTest, ALeaderBeingConfirmedCountsOnceWithItsFirstMeasurement) {
  v1::Search search;
  search.set_state(v1::PROBING);
  search.mutable_counts()->set_memory_safe(10);
  // Three probes finished: the leader's screening, the other's, and a confirmation before.
  search.mutable_counts()->set_probed(3);
  v1::Candidate confirming = WithState(v1::CANDIDATE_RUNNING);
  confirming.mutable_screening_result()->set_outcome(v1::PROBE_OK);
  confirming.mutable_screening_result()->set_model_tflops_per_gpu(599.7);
  *search.add_candidates() = confirming;
  *search.add_candidates() = Probed(v1::PROBE_OK, 576.5);
  const v1::SearchProgress progress = ProgressOf(search);
  EXPECT_EQ(progress.probed(), 2);
  EXPECT_EQ(progress.ok(), 2);
  EXPECT_EQ(progress.probes(), 3);
  EXPECT_EQ(progress.confirming(), 1);
  EXPECT_EQ(progress.running(), 1);
  EXPECT_EQ(progress.could_still_win(), 1);
  ASSERT_NE(BestMeasured(search), nullptr);
  EXPECT_EQ(LatestResult(*BestMeasured(search))->model_tflops_per_gpu(), 599.7);
}

TEST(ProgressOfTest, SaysWhyTheFirstCandidateThatCannotStartWaits) {
  v1::Search search = Adaptive();
  v1::Candidate first = WithState(v1::CANDIDATE_QUEUED);
  first.set_waiting_reason(
      "needs 16 GPUs on workers offering backend sim; the live workers have 8");
  v1::Candidate second = WithState(v1::CANDIDATE_QUEUED);
  second.set_waiting_reason(
      "needs 32 GPUs on workers offering backend sim; the live workers have 8");
  *search.add_candidates() = first;
  *search.add_candidates() = second;
  const v1::SearchProgress progress = ProgressOf(search);
  EXPECT_EQ(progress.waiting(), 3);
  EXPECT_EQ(progress.waiting_reason(), first.waiting_reason());
}

TEST(ProgressOfTest, AnEndedSearchCouldNoLongerWin) {
  v1::Search search = Adaptive();
  search.set_state(v1::CANCELLED);
  EXPECT_EQ(ProgressOf(search).could_still_win(), 0);
}

TEST(CountCandidateTest, TakingAShareOutUndoesAddingIt) {
  v1::SearchProgress sum;
  const v1::Search search = Adaptive();
  for (const v1::Candidate& candidate : search.candidates()) CountCandidate(candidate, 1, sum);
  const v1::SearchProgress all = sum;
  v1::Candidate running = WithState(v1::CANDIDATE_RUNNING);
  running.mutable_screening_result()->set_outcome(v1::PROBE_OK);
  CountCandidate(running, 1, sum);
  CountCandidate(running, -1, sum);
  EXPECT_EQ(sum.SerializeAsString(), all.SerializeAsString());
}

TEST(BestMeasuredTest, TheFastestSuccessfulProbe) {
  v1::Search search = Adaptive();
  *search.add_candidates() = Probed(v1::PROBE_OK, 420.0);
  ASSERT_NE(BestMeasured(search), nullptr);
  EXPECT_EQ(BestMeasured(search)->probe_result().model_tflops_per_gpu(), 420.0);
  EXPECT_EQ(BestMeasured(v1::Search()), nullptr);
}

}  // namespace
}  // namespace paratune
