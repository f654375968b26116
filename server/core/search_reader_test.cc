#include "server/core/search_reader.h"

#include <string>

#include "gtest/gtest.h"

namespace paratune {
namespace {

// A probed candidate whose result `backend` produced, with `tflops` per GPU.
v1::Candidate Probed(const char* name, const char* backend, double tflops) {
  v1::Candidate candidate;
  candidate.set_name(name);
  candidate.set_state(v1::CANDIDATE_PROBED);
  v1::ProbeResult& result = *candidate.mutable_probe_result();
  result.set_outcome(v1::PROBE_OK);
  result.set_backend(backend);
  result.set_simulated(std::string(backend) == "sim");
  result.set_model_tflops_per_gpu(tflops);
  return candidate;
}

TEST(ClientViewTest, EveryProbedCandidateSaysWhereItsResultComesFrom) {
  v1::Search search;
  *search.add_candidates() = Probed("sim", "sim", 400);
  *search.add_candidates() = Probed("replay", "replay", 500);
  v1::Candidate extrapolated = Probed("extrapolated", "cuda", 300);
  extrapolated.mutable_probe_result()->add_extrapolated("full_step");
  *search.add_candidates() = extrapolated;
  *search.add_candidates() = Probed("measured", "command", 200);
  v1::Candidate queued;
  queued.set_name("queued");
  queued.set_state(v1::CANDIDATE_QUEUED);
  *search.add_candidates() = queued;

  const v1::Search view = ClientView(search);
  ASSERT_EQ(view.candidates_size(), 5);
  // Ranked by measured TFLOP/s, the unprobed one last.
  EXPECT_EQ(view.candidates(0).name(), "replay");
  EXPECT_EQ(view.candidates(0).probe_result_source(), "replayed");
  EXPECT_EQ(view.candidates(1).probe_result_source(), "simulated");
  EXPECT_EQ(view.candidates(2).probe_result_source(), "extrapolated");
  EXPECT_EQ(view.candidates(3).probe_result_source(), "measured");
  EXPECT_EQ(view.candidates(4).name(), "queued");
  EXPECT_EQ(view.candidates(4).probe_result_source(), "");
}

}  // namespace
}  // namespace paratune
