#include "convert/search_text.h"

#include <string>

#include "absl/strings/str_cat.h"
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

TEST(DescribeConfigTest, ExpertSizesWhereNotTheDefault) {
  v1::ParallelConfig config;
  config.set_data_parallel(8);
  config.set_tensor_parallel(2);
  config.set_pipeline_parallel(1);
  config.set_context_parallel(1);
  config.set_micro_batch_size(1);
  config.set_expert_parallel(1);
  config.set_expert_tensor_parallel(2);  // tp's
  EXPECT_EQ(DescribeConfig(config), "dp8 tp2 pp1 cp1 mbs1");
  config.set_expert_parallel(8);
  EXPECT_EQ(DescribeConfig(config), "dp8 tp2 pp1 cp1 mbs1 ep8");
  config.set_expert_tensor_parallel(1);
  EXPECT_EQ(DescribeConfig(config), "dp8 tp2 pp1 cp1 mbs1 ep8 etp1");
  EXPECT_EQ(DescribeConfigApart(config, v1::SearchSpace()), "tp2 pp1 cp1 mbs1 ep8 etp1");
}

TEST(DescribeConfigApartTest, KeepsThePartsTheSearchVaries) {
  v1::ParallelConfig config;
  config.set_data_parallel(2);
  config.set_tensor_parallel(1);
  config.set_pipeline_parallel(2);
  config.set_context_parallel(2);
  config.set_micro_batch_size(2);
  config.set_virtual_pipeline(2);
  config.set_recompute(v1::RECOMPUTE_FULL);
  v1::SearchSpace space;
  space.add_virtual_pipeline_sizes(1);
  space.add_virtual_pipeline_sizes(2);
  space.add_recompute_modes(v1::RECOMPUTE_NONE);
  space.add_recompute_modes(v1::RECOMPUTE_FULL);
  EXPECT_EQ(DescribeConfigApart(config, space), "tp1 pp2 cp2 mbs2 vp2 recompute=full");
  // One value tried tells no candidate apart.
  space.add_micro_batch_sizes(2);
  space.clear_recompute_modes();
  space.add_recompute_modes(v1::RECOMPUTE_FULL);
  EXPECT_EQ(DescribeConfigApart(config, space), "tp1 pp2 cp2 vp2");
}

TEST(DescribePlanAdviceTest, NamesTheChangeAndItsCandidates) {
  v1::PlanAdvice advice;
  advice.set_kind(v1::ADVICE_RECOMPUTE);
  advice.add_recompute_modes(v1::RECOMPUTE_NONE);
  advice.add_recompute_modes(v1::RECOMPUTE_FULL);
  advice.set_candidates(2);
  EXPECT_EQ(DescribePlanAdvice(advice), "recompute modes none, full: 2 candidates");
  advice.Clear();
  advice.set_kind(v1::ADVICE_GPU_TYPE);
  advice.set_gpu_type("h200-141gb");
  advice.set_candidates(5);
  EXPECT_EQ(DescribePlanAdvice(advice), "h200-141gb GPUs: 5 candidates");
  advice.Clear();
  advice.set_kind(v1::ADVICE_FP8_PARAMETERS);
  advice.set_candidates(1);
  EXPECT_EQ(DescribePlanAdvice(advice), "fp8 with fp8 weights (fp8_param_gather): 1 candidate");
  advice.Clear();
  advice.set_kind(v1::ADVICE_SEQUENCE_LENGTH);
  advice.set_seq_len(1024);
  advice.set_candidates(1);
  EXPECT_EQ(DescribePlanAdvice(advice), "sequence 1024: 1 candidate");
  advice.Clear();
  advice.set_kind(v1::ADVICE_MICRO_BATCH_SIZES);
  advice.add_micro_batch_sizes(1);
  advice.add_micro_batch_sizes(2);
  advice.set_candidates(3);
  EXPECT_EQ(DescribePlanAdvice(advice), "micro-batch sizes 1, 2: 3 candidates");
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

TEST(DescribeGpusTest, TypeOrTheUnmatchedName) {
  EXPECT_EQ(DescribeGpus(8, "h100-80gb", "NVIDIA H100 80GB HBM3"), "8 x h100-80gb");
  EXPECT_EQ(DescribeGpus(4, "", "NVIDIA GH200 480GB"), "4 x unknown GPU NVIDIA GH200 480GB");
  EXPECT_EQ(DescribeGpus(1, "", ""), "1 x unknown GPU");
}

v1::ProbeHost Host(int worker, const std::string& hostname, int64_t first_rank, int64_t num_ranks) {
  v1::ProbeHost host;
  host.set_worker(absl::StrCat("workers/", worker));
  host.set_hostname(hostname);
  host.set_first_rank(first_rank);
  host.set_num_ranks(num_ranks);
  host.set_gpu_name("simulated h100-80gb");
  host.set_gpu_type("h100-80gb");
  return host;
}

TEST(DescribeRanOnTest, EmptyBeforeTheServerRecordsIt) {
  v1::ProbeResult result;
  result.set_outcome(v1::PROBE_OK);
  EXPECT_EQ(DescribeRanOn(result), "");
}

TEST(DescribeRanOnTest, OneWorker) {
  v1::ProbeResult result;
  *result.add_ran_on() = Host(3, "sim-node-1", 0, 8);
  EXPECT_EQ(DescribeRanOn(result), "ran on workers/3 (sim-node-1, 8 x h100-80gb, ranks 0-7)");
}

TEST(DescribeRanOnTest, AGangInRankOrder) {
  v1::ProbeResult result;
  *result.add_ran_on() = Host(3, "sim-node-1", 0, 8);
  *result.add_ran_on() = Host(4, "sim-node-2", 8, 8);
  EXPECT_EQ(DescribeRanOn(result),
            "ran on workers/3 (sim-node-1, 8 x h100-80gb, ranks 0-7) + workers/4 (sim-node-2, "
            "8 x h100-80gb, ranks 8-15)");
}

TEST(DescribeRanOnTest, OneRankNoHostnameAndAnUnmatchedGpu) {
  v1::ProbeResult result;
  v1::ProbeHost host = Host(9, "", 5, 1);
  host.clear_gpu_type();
  host.set_gpu_name("NVIDIA GH200 480GB");
  *result.add_ran_on() = host;
  EXPECT_EQ(DescribeRanOn(result), "ran on workers/9 (1 x unknown GPU NVIDIA GH200 480GB, rank 5)");
}

TEST(DescribeRanOnTest, ALargeGangIsSummarised) {
  v1::ProbeResult result;
  for (int i = 0; i < 4; ++i) *result.add_ran_on() = Host(i, absl::StrCat("n", i), 4 * i, 4);
  EXPECT_EQ(DescribeRanOn(result),
            "ran on workers/0 (n0, 4 x h100-80gb, ranks 0-3) + workers/1 (n1, 4 x h100-80gb, "
            "ranks 4-7) + workers/2 (n2, 4 x h100-80gb, ranks 8-11) + workers/3 (n3, 4 x "
            "h100-80gb, ranks 12-15)");
  for (int i = 4; i < 16; ++i) *result.add_ran_on() = Host(i, absl::StrCat("n", i), 4 * i, 4);
  EXPECT_EQ(DescribeRanOn(result),
            "ran on workers/0 (n0, 4 x h100-80gb, ranks 0-3) + workers/1 (n1, 4 x h100-80gb, "
            "ranks 4-7) + workers/2 (n2, 4 x h100-80gb, ranks 8-11) + 13 more workers (ranks "
            "12-63)");
}

TEST(DescribeMemoryHeadroomTest, MeasuredPeakAgainstCapacityNextToTheEstimate) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  v1::MemoryEstimate estimate;
  estimate.set_peak_bytes(76 * kGiB);
  estimate.set_capacity_bytes(80 * kGiB);
  estimate.set_fraction_of_capacity(0.95);
  estimate.set_verdict(v1::RISKY);
  v1::ProbeResult result;
  EXPECT_EQ(DescribeMemoryHeadroom(estimate, result),
            "peak memory not measured (estimated 76.00 GiB, 95% of capacity, RISKY)");
  result.set_peak_memory_bytes(71 * kGiB);
  EXPECT_EQ(DescribeMemoryHeadroom(estimate, result),
            "peak memory 71.00 of 80.00 GiB measured, 9.00 GiB to spare (estimated 76.00 GiB, "
            "95% of capacity, RISKY)");
  result.set_simulated(true);
  result.set_peak_memory_bytes(81 * kGiB);
  EXPECT_EQ(DescribeMemoryHeadroom(estimate, result),
            "peak memory 81.00 of 80.00 GiB modelled, 1.00 GiB over (estimated 76.00 GiB, 95% of "
            "capacity, RISKY)");
}

}  // namespace
}  // namespace paratune
