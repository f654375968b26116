#include "server/core/stop_reasons.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(RiskAndFailureNoteTest, SaysWhatTheRiskyBandAndFailuresCost) {
  v1::SearchCounts counts;
  EXPECT_EQ(RiskAndFailureNote(counts), "");
  counts.set_risky_probed(5);
  counts.set_risky_out_of_memory(1);
  counts.set_failed_gpu_seconds(1512);
  EXPECT_EQ(RiskAndFailureNote(counts),
            "; 5 RISKY candidates probed, 1 ran out of memory; failed probes cost 0.42 GPU-hours");
}

TEST(NothingToProbeReasonTest, NamesTheMemoryPolicyThatLeftRiskyOnesOut) {
  v1::SearchCounts counts;
  counts.set_enumerated(10);
  counts.set_valid(4);
  counts.set_memory_risky(4);
  EXPECT_NE(NothingToProbeReason(counts, false, {}).find("its memory policy is SAFE_ONLY"),
            std::string::npos);
  EXPECT_EQ(NothingToProbeReason(counts, true, {}).find("SAFE_ONLY"), std::string::npos);
}

TEST(NothingToProbeReasonTest, NamesTheChangesThatGiveCandidates) {
  v1::SearchCounts counts;
  counts.set_enumerated(150);
  counts.set_valid(150);
  counts.set_memory_out_of_memory(150);
  std::vector<v1::PlanAdvice> advice(2);
  advice[0].set_kind(v1::ADVICE_RECOMPUTE);
  for (v1::Recompute mode : {v1::RECOMPUTE_NONE, v1::RECOMPUTE_SELECTIVE, v1::RECOMPUTE_FULL}) {
    advice[0].add_recompute_modes(mode);
  }
  advice[0].set_candidates(2);
  advice[1].set_kind(v1::ADVICE_NODES);
  advice[1].set_num_nodes(4);
  advice[1].set_candidates(3);
  EXPECT_EQ(NothingToProbeReason(counts, true, advice),
            "no memory-safe configuration to probe: 150 enumerated, 150 valid, 0 memory-safe, 0 "
            "risky, 150 out of memory; each of these changes gives candidates: recompute modes "
            "none, selective, full: 2 candidates; 4 nodes: 3 candidates");
  EXPECT_EQ(NothingToProbeReason(counts, true, {}),
            "no memory-safe configuration to probe: 150 enumerated, 150 valid, 0 memory-safe, 0 "
            "risky, 150 out of memory; add GPUs, use GPUs with more memory or shorten the "
            "sequence");
}

}  // namespace
}  // namespace paratune
