// End to end: a real paratune-server and a paratune-worker with the command backend search
// one node, each probe a real process (worker/testdata/fake_training.sh) that behaves like a
// training run; the worker's template (tests/testdata/command_worker.textproto) steers it so
// that every outcome a run can have appears on known candidates, and each must come back
// classified as such in the search's result.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/autotuner_service.grpc.pb.h"
#include "proto/worker.pb.h"
#include "tests/test_cluster.h"

namespace paratune {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;

constexpr absl::Duration kSearchTimeout = absl::Seconds(120);

// What the template makes of a configuration, and how it must be reported.
struct Expected {
  v1::ProbeOutcome outcome;
  std::string message;
};

Expected ExpectedFor(const v1::ParallelConfig& config) {
  if (config.tensor_parallel() == 8) {
    return {v1::PROBE_OUT_OF_MEMORY, "out of memory: \"[rank0]: torch.OutOfMemoryError: CUDA"};
  }
  if (config.pipeline_parallel() == 8) {
    // Told to stop the kill grace (1 s) before the deadline (3 s).
    return {v1::PROBE_TIMEOUT,
            "deadline of 3 s and was stopped 1s before it: template \"fake-megatron\", ranks 0-7 "
            "of 8 on node 0 of 1: the run was stopped, after logging 2 of 4 step times"};
  }
  if (config.context_parallel() == 8) {
    return {v1::PROBE_CRASH, "NCCL error: \"torch.distributed.DistBackendError: NCCL error in"};
  }
  if (config.data_parallel() == 8) {
    return {v1::PROBE_CRASH,
            "the run was killed by signal 11 (Segmentation fault) after logging 1 of 4"};
  }
  if (config.tensor_parallel() == 4) {
    return {v1::PROBE_CRASH, "exited with code 0 but logged only 1 of the 4 step times"};
  }
  return {v1::PROBE_OK,
          "measured: template \"fake-megatron\", ranks 0-7 of 8 on node 0 of 1: mean step time"};
}

// Micro-batches per step of the search's global batch of 64.
int64_t FullMicroBatches(const v1::ParallelConfig& config) {
  return 64 / (config.data_parallel() * config.micro_batch_size());
}

std::string Describe(const v1::ParallelConfig& config) {
  return absl::StrCat("dp", config.data_parallel(), " tp", config.tensor_parallel(), " pp",
                      config.pipeline_parallel(), " cp", config.context_parallel(), " mbs",
                      config.micro_batch_size());
}

// What an OK result of a probe of `config` says of its steps: full steps, or (where the
// server sent micro-batch counts) short steps of 2 pp and 4 pp micro-batches, one launch
// each, and the full step extrapolated from them. Iteration i of the script logs
// 100 + 10 tp + 20 pp + 30 cp + 5 mbs + 2 m + i ms for m micro-batches per step, so the
// extrapolated full step is exactly the one a launch of full steps logs; iterations
// warmup_steps + 1 .. warmup_steps + timed_steps of each launch are timed.
void ExpectSteps(const v1::ParallelConfig& config, const v1::ProbeResult& result,
                 int64_t warmup_steps, int64_t timed_steps) {
  const double base_ms = 100 + 10 * config.tensor_parallel() + 20 * config.pipeline_parallel() +
                         30 * config.context_parallel() + 5 * config.micro_batch_size();
  const double first_timed = static_cast<double>(warmup_steps + 1);
  const double mean_index = first_timed + static_cast<double>(timed_steps - 1) / 2;
  const int64_t full = FullMicroBatches(config);
  EXPECT_NEAR(result.mean_step_time_seconds(), (base_ms + 2 * full + mean_index) / 1000, 1e-9)
      << Describe(config);
  EXPECT_EQ(result.step_times_seconds_size(), timed_steps) << Describe(config);
  if (result.short_steps().empty()) {
    EXPECT_TRUE(result.extrapolated().empty()) << Describe(config);
    EXPECT_THAT(result.message(), HasSubstr(absl::StrCat("over ", timed_steps, " timed steps")));
    return;
  }
  const int64_t pp = config.pipeline_parallel();
  EXPECT_GT(full, 4 * pp) << Describe(config);
  ASSERT_EQ(result.short_steps_size(), 2) << Describe(config);
  for (int k = 0; k < 2; ++k) {
    const v1::ShortSteps& series = result.short_steps(k);
    EXPECT_EQ(series.micro_batches(), 2 * (k + 1) * pp) << Describe(config);
    ASSERT_EQ(series.step_times_seconds_size(), timed_steps) << Describe(config);
    EXPECT_NEAR(series.step_times_seconds(0),
                (base_ms + 2 * series.micro_batches() + first_timed) / 1000, 1e-9)
        << Describe(config);
  }
  EXPECT_EQ(result.extrapolation().full_micro_batches(), full) << Describe(config);
  EXPECT_THAT(result.extrapolated(), Contains("full_step"));
  EXPECT_THAT(
      result.message(),
      AllOf(HasSubstr(absl::StrCat("the full step of ", full, " micro-batches extrapolated from ",
                                   timed_steps, " timed steps at each of ", 2 * pp, " and ", 4 * pp,
                                   " micro-batches per step")),
            HasSubstr(" over 2 launches (wall time less logged steps)")));
}

TEST(E2eCommandTest, EveryOutcomeOfARealRunIsClassified) {
  absl::StatusOr<std::unique_ptr<TestCluster>> cluster =
      TestCluster::Start({{"--backend=command", "--config=tests/testdata/command_worker.textproto",
                           "--sim_gpus=8", "--sim_gpu_type=h100-80gb"}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();

  v1::CreateSearchRequest request = SmallSimSearch(0);
  request.set_display_name("command backend e2e");
  v1::SearchSpec& spec = *request.mutable_spec();
  spec.mutable_space()->add_micro_batch_sizes(1);
  spec.set_policy(v1::EXHAUSTIVE);
  v1::ProbeSettings& probe = *spec.mutable_probe();
  probe.set_backend("command");
  probe.set_command_template("fake-megatron");
  probe.set_warmup_steps(1);
  probe.set_timed_steps(3);
  // The hanging candidate is stopped a kill grace (1 s) before this.
  probe.set_deadline_seconds(3);
  probe.set_max_attempts(1);
  // The script starts at once: the server may plan short steps, a launch per count, for
  // candidates of many micro-batches.
  probe.set_startup_seconds(1);

  absl::StatusOr<v1::Search> search = (*cluster)->RunSearch(request, kSearchTimeout);
  ASSERT_TRUE(search.ok()) << search.status();
  EXPECT_EQ(search->state(), v1::SUCCEEDED) << search->stop_reason();
  EXPECT_EQ(search->counts().probed(), search->counts().selected());

  std::vector<v1::ProbeOutcome> seen;
  int ok = 0;
  double previous_tflops = 1e300;
  for (const v1::Candidate& candidate : search->candidates()) {
    const v1::ParallelConfig& config = candidate.config();
    const v1::ProbeResult& result = candidate.probe_result();
    const Expected expected = ExpectedFor(config);
    // The table the test log shows: each candidate, its outcome and its message's first line.
    const std::string first_line = result.message().substr(0, result.message().find('\n'));
    std::printf("%-22s %-20s %s\n", Describe(config).c_str(),
                v1::ProbeOutcome_Name(result.outcome()).c_str(), first_line.c_str());
    EXPECT_EQ(candidate.state(), v1::CANDIDATE_PROBED) << Describe(config);
    EXPECT_EQ(result.outcome(), expected.outcome) << Describe(config) << ": " << result.message();
    EXPECT_THAT(result.message(), HasSubstr(expected.message)) << Describe(config);
    EXPECT_THAT(result.message(), HasSubstr("template \"fake-megatron\", ranks 0-7 of 8"));
    EXPECT_EQ(result.backend(), "command");
    EXPECT_FALSE(result.simulated());
    seen.push_back(result.outcome());
    if (result.outcome() != v1::PROBE_OK) continue;
    ++ok;
    ExpectSteps(config, result, probe.warmup_steps(), probe.timed_steps());
    EXPECT_GT(result.peak_memory_bytes(), 0);
    EXPECT_THAT(result.measured(), AllOf(Contains("gemm"), Contains("peak_memory")));
    // Measured results come first, best first.
    EXPECT_LE(result.model_tflops_per_gpu(), previous_tflops) << Describe(config);
    previous_tflops = result.model_tflops_per_gpu();
  }
  EXPECT_EQ(search->counts().succeeded(), ok);
  EXPECT_GT(ok, 0);
  for (v1::ProbeOutcome outcome :
       {v1::PROBE_OK, v1::PROBE_OUT_OF_MEMORY, v1::PROBE_TIMEOUT, v1::PROBE_CRASH}) {
    EXPECT_THAT(seen, Contains(outcome)) << v1::ProbeOutcome_Name(outcome);
  }
}

// Full-scope probes of a 2 x 4 cluster on two 4-GPU workers: each probe runs as a gang, each
// worker launching its node's ranks after gang[0]'s master ports (one per launch) came
// through the scheduler, and the probe's timing coming from the last node, the only one that
// logs it. Each launch of the template starts up for 3 s, longer than the steps it logs, so
// that the start-up measured (wall time less logged steps) is more than nothing.
TEST(E2eCommandTest, GangMembersEachLaunchTheirNodesRanks) {
  const std::vector<std::string> flags = {"--backend=command",
                                          "--config=tests/testdata/command_worker.textproto",
                                          "--sim_gpus=4", "--sim_gpu_type=h100-80gb"};
  absl::StatusOr<std::unique_ptr<TestCluster>> cluster = TestCluster::Start({flags, flags});
  ASSERT_TRUE(cluster.ok()) << cluster.status();

  v1::CreateSearchRequest request = SmallSimSearch(2, /*nodes=*/2, /*gpus_per_node=*/4);
  request.set_display_name("command backend gang e2e");
  v1::SearchSpec& spec = *request.mutable_spec();
  v1::ProbeSettings& probe = *spec.mutable_probe();
  probe.set_backend("command");
  probe.set_command_template("fake-megatron-plain");
  probe.set_scope(v1::PROBE_SCOPE_FULL);
  probe.set_deadline_seconds(30);
  probe.set_warmup_steps(1);
  probe.set_timed_steps(3);
  // Micro-batches of 1 and a start-up predicted as next to nothing (the template's is 3 s), so
  // that the server plans short steps: a launch per count, each with the master port gang[0]
  // sent for it.
  spec.mutable_space()->add_micro_batch_sizes(1);
  probe.set_startup_seconds(0.01);

  absl::StatusOr<v1::Search> search = (*cluster)->RunSearch(request, kSearchTimeout);
  ASSERT_TRUE(search.ok()) << search.status();
  EXPECT_EQ(search->state(), v1::SUCCEEDED) << search->stop_reason();
  ASSERT_EQ(search->candidates_size(), 2);
  for (const v1::Candidate& candidate : search->candidates()) {
    const v1::ProbeResult& result = candidate.probe_result();
    // What each probe measured, for the test log.
    std::printf("%-22s %s\n", Describe(candidate.config()).c_str(), result.message().c_str());
    EXPECT_EQ(result.outcome(), v1::PROBE_OK) << result.message();
    // Only the last node logs iteration times, as Megatron-LM does: the probe's timing is
    // that node's, the first node's run counting as finished without timing.
    EXPECT_THAT(result.message(),
                HasSubstr("measured: template \"fake-megatron-plain\", ranks 4-7 of 8 on node 1 of "
                          "2: mean step time"));
    ExpectSteps(candidate.config(), result, probe.warmup_steps(), probe.timed_steps());
    EXPECT_GT(result.startup_seconds(), 0) << result.message();
  }
  v1::ListWorkersResponse workers;
  ASSERT_TRUE((*cluster)
                  ->autotuner()
                  .ListWorkers(ContextWithTimeout(absl::Seconds(30)).get(),
                               v1::ListWorkersRequest(), &workers)
                  .ok());
  ASSERT_EQ(workers.workers_size(), 2);
  for (const v1::Worker& worker : workers.workers()) {
    EXPECT_EQ(worker.probes_completed(), 2) << worker.name();
    EXPECT_THAT(worker.command_templates(), Contains("fake-megatron-plain"));
    EXPECT_THAT(worker.gpus(0).name(), HasSubstr("H100-80GB (declared)"));
  }
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!paratune::SetTestBinaries(argc, argv)) {
    std::fprintf(stderr, "usage: e2e_command_test PARATUNE_SERVER PARATUNE_WORKER\n");
    return 2;
  }
  return RUN_ALL_TESTS();
}
