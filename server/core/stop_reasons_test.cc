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
  EXPECT_NE(NothingToProbeReason(counts, false).find("its memory policy is SAFE_ONLY"),
            std::string::npos);
  EXPECT_EQ(NothingToProbeReason(counts, true).find("SAFE_ONLY"), std::string::npos);
}

}  // namespace
}  // namespace paratune
