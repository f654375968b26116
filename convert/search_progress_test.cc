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

TEST(ProgressOfTest, TheTotalIsEveryCandidateTheSearchMayProbe) {
  const SearchProgress progress = ProgressOf(Adaptive());
  EXPECT_EQ(progress.probed, 2);
  EXPECT_EQ(progress.succeeded, 1);
  EXPECT_EQ(progress.failed, 1);
  EXPECT_EQ(progress.could_still_win, 5);
  EXPECT_EQ(progress.total, 40);
}

TEST(ProgressOfTest, TheTotalStaysAsTheSearchGoesOn) {
  v1::Search search = Adaptive();
  const int64_t total = ProgressOf(search).total;
  // The running probe finishes and ADAPTIVE picks one more.
  *search.mutable_candidates(2) = Probed(v1::PROBE_OK, 300);
  *search.add_candidates() = WithState(v1::CANDIDATE_QUEUED);
  search.mutable_counts()->set_still_contending(2);
  const SearchProgress progress = ProgressOf(search);
  EXPECT_EQ(progress.total, total);
  EXPECT_EQ(progress.probed, 3);
  EXPECT_EQ(progress.could_still_win, 4);
}

TEST(ProgressOfTest, ALeaderBeingConfirmedKeepsItsResultAndCouldStillWin) {
  v1::Search search;
  search.mutable_counts()->set_memory_safe(10);
  v1::Candidate confirming = WithState(v1::CANDIDATE_RUNNING);
  confirming.mutable_screening_result()->set_outcome(v1::PROBE_OK);
  confirming.mutable_screening_result()->set_model_tflops_per_gpu(599.7);
  *search.add_candidates() = confirming;
  *search.add_candidates() = Probed(v1::PROBE_OK, 576.5);
  const SearchProgress progress = ProgressOf(search);
  EXPECT_EQ(progress.probed, 2);
  EXPECT_EQ(progress.succeeded, 2);
  EXPECT_EQ(progress.could_still_win, 1);
  ASSERT_NE(BestMeasured(search), nullptr);
  EXPECT_EQ(LatestResult(*BestMeasured(search))->model_tflops_per_gpu(), 599.7);
}

TEST(ProgressOfTest, AListedSearchCountsProbedCandidatesFromItsCounts) {
  v1::Search listed;
  listed.mutable_counts()->set_memory_safe(45);
  listed.mutable_counts()->set_probed(9);
  listed.mutable_counts()->set_confirmations(2);
  const SearchProgress progress = ProgressOf(listed);
  EXPECT_EQ(progress.probed, 7);
  EXPECT_EQ(progress.total, 45);
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
