#include "convert/search_text.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(DescribeConfigTest, NamesEveryDimension) {
  v1::ParallelConfig config;
  config.set_data_parallel(4);
  config.set_tensor_parallel(2);
  config.set_pipeline_parallel(1);
  config.set_context_parallel(2);
  config.set_micro_batch_size(1);
  EXPECT_EQ(DescribeConfig(config), "dp4 tp2 pp1 cp2 mbs1");
  config.set_virtual_pipeline(2);
  config.set_sequence_parallel(false);
  config.set_recompute(v1::RECOMPUTE_FULL);
  EXPECT_EQ(DescribeConfig(config), "dp4 tp2 pp1 cp2 mbs1 vp2 sp=off recompute=full");
  config.set_tensor_parallel(1);
  EXPECT_EQ(DescribeConfig(config), "dp4 tp1 pp1 cp2 mbs1 vp2 recompute=full");
}

TEST(DescribeResultTest, SaysWhatHappened) {
  v1::ProbeResult ok;
  ok.set_outcome(v1::PROBE_OK);
  ok.set_model_tflops_per_gpu(402.14);
  ok.set_simulated(true);
  EXPECT_EQ(DescribeResult(ok), "402.1 TFLOP/s per GPU (simulated)");
  ok.set_simulated(false);
  EXPECT_EQ(DescribeResult(ok), "402.1 TFLOP/s per GPU");

  v1::ProbeResult oom;
  oom.set_outcome(v1::PROBE_OUT_OF_MEMORY);
  oom.set_message("cudaMalloc failed");
  EXPECT_EQ(DescribeResult(oom), "out of memory: cudaMalloc failed");
  EXPECT_EQ(DescribeOutcome(v1::PROBE_INFRA_ERROR), "infrastructure error");
}

}  // namespace
}  // namespace paratune
