#include "cli/live_view.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cli/text_width.h"
#include "convert/search_progress.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1::Candidate Candidate(int64_t tp, v1::CandidateState state) {
  v1::Candidate candidate;
  v1::ParallelConfig& config = *candidate.mutable_config();
  config.set_data_parallel(16 / tp);
  config.set_tensor_parallel(tp);
  config.set_pipeline_parallel(2);
  config.set_context_parallel(1);
  config.set_micro_batch_size(2);
  config.set_virtual_pipeline(4);
  config.set_sequence_parallel(true);
  config.set_recompute(v1::RECOMPUTE_SELECTIVE);
  candidate.set_state(state);
  candidate.mutable_memory()->set_peak_bytes(int64_t{71} << 30);
  candidate.mutable_memory()->set_fraction_of_capacity(0.891);
  candidate.mutable_memory()->set_verdict(v1::RISKY);
  candidate.mutable_calibrated_memory()->set_peak_bytes(int64_t{73} << 30);
  candidate.mutable_predicted()->set_model_tflops_per_gpu(433.2);
  return candidate;
}

v1::Candidate Measured(int64_t tp, double tflops) {
  v1::Candidate candidate = Candidate(tp, v1::CANDIDATE_PROBED);
  v1::ProbeResult& result = *candidate.mutable_probe_result();
  result.set_outcome(v1::PROBE_OK);
  result.set_model_tflops_per_gpu(tflops);
  result.set_mean_step_time_seconds(12.345);
  result.set_peak_memory_bytes(int64_t{72} << 30);
  result.set_simulated(true);
  return candidate;
}

// A search of 2 nodes x 8 GPUs with long configurations: 3 measured, one out of memory, one
// running, one waiting for workers that do not exist.
v1::Search Running() {
  v1::Search search;
  search.set_name("searches/12");
  search.set_state(v1::PROBING);
  search.mutable_counts()->set_memory_safe(96);
  search.mutable_counts()->set_still_contending(7);
  search.mutable_counts()->set_projected_remaining_gpu_seconds(5.5 * 3600);
  search.mutable_counts()->set_projected_remaining_wall_seconds(0.4 * 3600);
  *search.add_candidates() = Measured(2, 1412.3);
  *search.add_candidates() = Measured(4, 398.7);
  *search.add_candidates() = Measured(8, 351.0);
  v1::Candidate oom = Candidate(1, v1::CANDIDATE_PROBED);
  oom.mutable_probe_result()->set_outcome(v1::PROBE_OUT_OF_MEMORY);
  *search.add_candidates() = oom;
  *search.add_candidates() = Candidate(2, v1::CANDIDATE_RUNNING);
  v1::Candidate waiting = Candidate(16, v1::CANDIDATE_QUEUED);
  waiting.set_waiting_reason(
      "needs 2 workers of 8 x h100-80gb (16 GPUs) with backend sim; live workers: 1 x 8 "
      "a100-40gb (sim); they can host 0 of its 2 node shares");
  *search.add_candidates() = waiting;
  // As the server counts it.
  *search.mutable_progress() = ProgressOf(search);
  return search;
}

const std::vector<std::string> kEvents = {
    "search created by alice: 96 candidates, policy ADAPTIVE",
    "queued candidates/0 dp8 tp2 pp2 cp1 mbs2 vp4 recompute=selective: predicted 433.2 "
    "(optimistic 470.1)",
    "candidates/0 leased to workers/1 + workers/2 (attempt 1 of 2)",
};

TEST(FormatLiveViewTest, EveryWidthFrom40To200KeepsTheMeasuredColumn) {
  const v1::Search search = Running();
  for (size_t columns = 40; columns <= 200; ++columns) {
    const std::string view = FormatLiveView(search, kEvents, 12, columns);
    for (absl::string_view line : absl::StrSplit(view, '\n', absl::SkipEmpty())) {
      EXPECT_LT(VisibleWidth(line), columns) << "at " << columns << " columns: " << line;
    }
    EXPECT_THAT(view, HasSubstr("probed TFLOP/s/GPU")) << columns;
    for (const char* measured : {"1412.3 (sim)", "398.7 (sim)", "351.0 (sim)"}) {
      EXPECT_THAT(view, HasSubstr(measured)) << "at " << columns << " columns:\n" << view;
    }
  }
}

TEST(FormatLiveViewTest, At80ColumnsTheLeastNeededColumnsGoFirst) {
  const std::string view = FormatLiveView(Running(), kEvents, 12, 80);
  EXPECT_THAT(view, Not(HasSubstr("mem GiB est/cal/meas")));
  EXPECT_THAT(view, Not(HasSubstr("step s")));
  EXPECT_THAT(view, HasSubstr("rank  config"));
  EXPECT_THAT(view, HasSubstr("probed TFLOP/s/GPU"));
  EXPECT_THAT(view, HasSubstr("result"));
}

TEST(FormatLiveViewTest, AWideTerminalShowsEveryColumn) {
  const std::string view = FormatLiveView(Running(), kEvents, 12, 200);
  EXPECT_THAT(view, HasSubstr("mem GiB est/cal/meas"));
  EXPECT_THAT(view, HasSubstr("step s"));
  EXPECT_THAT(view, HasSubstr("dp8 tp2 pp2 cp1 mbs2 vp4 recompute=selective"));
}

TEST(FormatLiveViewTest, ShowsProgressEventsAndWhyACandidateWaits) {
  const std::string view = FormatLiveView(Running(), kEvents, 12, 200);
  EXPECT_THAT(view, HasSubstr("searches/12 PROBING: probed 4 of 96 candidates (3 ok, 1 failed), "
                              "9 could still win; 1 running, 1 waiting; best 1412.3 TFLOP/s per "
                              "GPU simulated"));
  EXPECT_THAT(view, HasSubstr("\n  search created by alice: 96 candidates, policy ADAPTIVE\n"));
  EXPECT_THAT(view, HasSubstr("  waiting\n"));
  EXPECT_THAT(view, HasSubstr("waiting: dp1 tp16 pp2 cp1 mbs2 vp4 recompute=selective needs 2 "
                              "workers of 8 x h100-80gb"));
  EXPECT_THAT(view, HasSubstr("(sim) = simulated\n"));
}

TEST(FormatLiveViewTest, WaitingReasonsWrapRatherThanVanish) {
  const std::string view = FormatLiveView(Running(), kEvents, 12, 80);
  EXPECT_THAT(view, HasSubstr("they can host 0 of its 2"));
}

TEST(FormatLiveViewTest, ShowsTheFirstRowsAndCountsTheRest) {
  v1::Search search = Running();
  const std::string view = FormatLiveView(search, {}, 3, 120);
  EXPECT_THAT(view, HasSubstr("351.0 (sim)"));
  EXPECT_THAT(view, Not(HasSubstr("out of memory")));
  EXPECT_THAT(view, HasSubstr("(3 more)\n"));
}

}  // namespace
}  // namespace paratune
