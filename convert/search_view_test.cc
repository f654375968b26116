#include "convert/search_view.h"

#include <string>
#include <vector>

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
  EXPECT_EQ(view.best_candidate().name(), "replay");
}

// A candidate queued in selection order `n` of searches/1.
v1::Candidate Queued(int n) {
  v1::Candidate candidate;
  candidate.set_name("searches/1/candidates/" + std::to_string(n));
  candidate.set_state(v1::CANDIDATE_QUEUED);
  candidate.mutable_memory()->set_peak_bytes(int64_t{40} << 30);
  candidate.mutable_memory()->set_capacity_bytes(int64_t{80} << 30);
  return candidate;
}

// The server's side of a watch: the whole search first, then for each change its fields and
// the candidates it changed. Applied in turn, the client's view equals ClientView of the
// server's search after every change: the one thing a watcher must get right.
TEST(WatchedSearchTest, ChangesAppliedInTurnGiveWhatGetSearchGives) {
  v1::Search server;
  server.set_name("searches/1");
  server.set_state(v1::PROBING);
  for (int n = 0; n < 3; ++n) *server.add_candidates() = Queued(n);
  WatchedSearch watched;
  v1::WatchSearchResponse first;
  *first.mutable_search() = server;
  ASSERT_TRUE(watched.Apply(first).ok());
  EXPECT_EQ(watched.View().SerializeAsString(), ClientView(server).SerializeAsString());

  // Each change: the server changes some candidates (and adds one), then sends them.
  auto change = [&](const std::vector<int>& changed) {
    v1::WatchSearchResponse response;
    *response.mutable_search() = server;
    response.mutable_search()->clear_candidates();
    for (int n : changed) *response.add_changed_candidates() = server.candidates(n);
    ASSERT_TRUE(watched.Apply(response).ok());
    EXPECT_EQ(watched.View().SerializeAsString(), ClientView(server).SerializeAsString());
  };
  server.mutable_candidates(1)->set_state(v1::CANDIDATE_RUNNING);
  change({1});
  v1::Candidate& probed = *server.mutable_candidates(1);
  probed.set_state(v1::CANDIDATE_PROBED);
  probed.mutable_probe_result()->set_outcome(v1::PROBE_OK);
  probed.mutable_probe_result()->set_model_tflops_per_gpu(400);
  probed.mutable_probe_result()->set_simulated(true);
  probed.mutable_probe_result()->set_peak_memory_bytes(int64_t{44} << 30);
  server.mutable_memory_calibration()->set_measurements(1);
  server.mutable_memory_calibration()->set_ratio(1.1);
  *server.add_candidates() = Queued(3);
  server.mutable_counts()->set_probed(1);
  change({1, 3});
  // A change of the search's fields alone: the calibration moves every candidate's calibrated
  // memory, which the client derives without being sent a candidate.
  server.mutable_memory_calibration()->set_ratio(1.3);
  server.set_state(v1::SUCCEEDED);
  change({});
  const v1::Search view = watched.View();
  EXPECT_EQ(view.state(), v1::SUCCEEDED);
  EXPECT_EQ(view.candidates(0).name(), "searches/1/candidates/1");
  EXPECT_EQ(view.candidates(0).probe_result_source(), "simulated");
  EXPECT_EQ(view.candidates_size(), 4);
  EXPECT_EQ(watched.stored().candidates(3).name(), "searches/1/candidates/3");
}

TEST(WatchedSearchTest, AChangeBeforeTheWholeSearchIsRefused) {
  WatchedSearch watched;
  v1::WatchSearchResponse change;
  *change.add_changed_candidates() = Queued(0);
  EXPECT_EQ(watched.Apply(change).code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace paratune
