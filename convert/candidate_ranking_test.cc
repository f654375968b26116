#include "convert/candidate_ranking.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace paratune {
namespace {

v1::Candidate Probed(const std::string& name, v1::ProbeOutcome outcome, double tflops) {
  v1::Candidate candidate;
  candidate.set_name(name);
  candidate.set_state(v1::CANDIDATE_PROBED);
  candidate.mutable_probe_result()->set_outcome(outcome);
  candidate.mutable_probe_result()->set_model_tflops_per_gpu(tflops);
  return candidate;
}

v1::Candidate Queued(const std::string& name) {
  v1::Candidate candidate;
  candidate.set_name(name);
  candidate.set_state(v1::CANDIDATE_QUEUED);
  return candidate;
}

std::vector<std::string> Names(
    const google::protobuf::RepeatedPtrField<v1::Candidate>& candidates) {
  std::vector<std::string> names;
  for (const v1::Candidate& candidate : candidates) names.push_back(candidate.name());
  return names;
}

TEST(RankCandidatesTest, MeasuredBestFirstThenTheRestInPredictedOrder) {
  google::protobuf::RepeatedPtrField<v1::Candidate> ranked;
  for (v1::Candidate candidate : {
           Probed("0", v1::PROBE_OK, 300),
           Queued("1"),
           Probed("2", v1::PROBE_OUT_OF_MEMORY, 0),
           Probed("3", v1::PROBE_OK, 450),
           Probed("4", v1::PROBE_OK, 300),
           Queued("5"),
       }) {
    *ranked.Add() = std::move(candidate);
  }
  RankCandidates(ranked);
  EXPECT_EQ(Names(ranked), (std::vector<std::string>{"3", "0", "4", "1", "2", "5"}));
}

}  // namespace
}  // namespace paratune
