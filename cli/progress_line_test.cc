#include "cli/progress_line.h"

#include "convert/search_progress.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

// A candidate of dp4 tp2 in `state`, with `result` as its probe's (PROBED) or its screening
// probe's (being confirmed) when given.
v1::Candidate Dp4Tp2(v1::CandidateState state, const v1::ProbeResult* result = nullptr) {
  v1::Candidate candidate;
  v1::ParallelConfig& config = *candidate.mutable_config();
  config.set_data_parallel(4);
  config.set_tensor_parallel(2);
  config.set_pipeline_parallel(1);
  config.set_context_parallel(1);
  config.set_micro_batch_size(1);
  candidate.set_state(state);
  if (result != nullptr && state == v1::CANDIDATE_PROBED)
    *candidate.mutable_probe_result() = *result;
  if (result != nullptr && state != v1::CANDIDATE_PROBED) {
    *candidate.mutable_screening_result() = *result;
  }
  return candidate;
}

v1::ProbeResult Result(v1::ProbeOutcome outcome, double tflops, bool simulated) {
  v1::ProbeResult result;
  result.set_outcome(outcome);
  result.set_model_tflops_per_gpu(tflops);
  result.set_simulated(simulated);
  return result;
}

TEST(FormatProgressTest, ProbedCouldStillWinAndTotalThenTheBest) {
  v1::Search search;
  search.set_name("searches/3");
  search.set_state(v1::PROBING);
  search.mutable_counts()->set_memory_safe(40);
  search.mutable_counts()->set_still_contending(3);
  const v1::ProbeResult ok = Result(v1::PROBE_OK, 410.5, true);
  const v1::ProbeResult oom = Result(v1::PROBE_OUT_OF_MEMORY, 0, true);
  *search.add_candidates() = Dp4Tp2(v1::CANDIDATE_PROBED, &ok);
  *search.add_candidates() = Dp4Tp2(v1::CANDIDATE_PROBED, &oom);
  *search.add_candidates() = Dp4Tp2(v1::CANDIDATE_RUNNING);
  *search.add_candidates() = Dp4Tp2(v1::CANDIDATE_QUEUED);
  *search.mutable_progress() = ProgressOf(search);
  EXPECT_EQ(FormatProgress(search),
            "searches/3 PROBING: probed 2 of 40 candidates (1 ok, 1 failed), 5 could still win; "
            "1 running, 1 waiting; best 410.5 TFLOP/s per GPU simulated (dp4 tp2 pp1 cp1 mbs1)");
  search.mutable_counts()->set_projected_remaining_gpu_seconds(3 * 3600);
  search.mutable_counts()->set_projected_remaining_wall_seconds(1800);
  EXPECT_EQ(FormatProgress(search),
            "searches/3 PROBING: probed 2 of 40 candidates (1 ok, 1 failed), 5 could still win; "
            "1 running, 1 waiting; best 410.5 TFLOP/s per GPU simulated (dp4 tp2 pp1 cp1 mbs1); "
            "~3.00 GPU-hours, ~0.50 h left (projected)");
}

TEST(DescribeProgressTest, ShowsTheServersCountsAsSent) {
  v1::SearchProgress progress;
  progress.set_candidates(40);
  progress.set_probed(6);
  progress.set_ok(5);
  progress.set_failed(1);
  progress.set_could_still_win(2);
  EXPECT_EQ(DescribeProgress(progress),
            "probed 6 of 40 candidates (5 ok, 1 failed), 2 could still win");
}

TEST(DescribeProgressTest, AConfirmationRunsAsConfirming) {
  v1::SearchProgress progress;
  progress.set_candidates(40);
  progress.set_probed(6);
  progress.set_ok(6);
  progress.set_could_still_win(3);
  progress.set_running(2);
  progress.set_confirming(1);
  progress.set_waiting(1);
  EXPECT_EQ(DescribeProgress(progress),
            "probed 6 of 40 candidates (6 ok, 0 failed), 3 could still win; 2 running, "
            "1 waiting (1 confirming)");
}

TEST(FormatProgressTest, TheBestSaysWhereItsNumberComesFrom) {
  v1::Search search;
  search.mutable_counts()->set_memory_safe(10);
  v1::ProbeResult screening = Result(v1::PROBE_OK, 599.7, false);
  *search.add_candidates() = Dp4Tp2(v1::CANDIDATE_RUNNING, &screening);
  EXPECT_THAT(FormatProgress(search),
              HasSubstr("; best 599.7 TFLOP/s per GPU measured (dp4 tp2 pp1 cp1 mbs1)"));
  screening.add_extrapolated("full_step");
  *search.mutable_candidates(0) = Dp4Tp2(v1::CANDIDATE_RUNNING, &screening);
  EXPECT_THAT(FormatProgress(search), HasSubstr("; best 599.7 TFLOP/s per GPU extrapolated"));
}

}  // namespace
}  // namespace paratune
