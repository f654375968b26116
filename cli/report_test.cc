#include "cli/report.h"

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1::ParallelConfig Config(int64_t dp, int64_t tp) {
  v1::ParallelConfig config;
  config.set_data_parallel(dp);
  config.set_tensor_parallel(tp);
  config.set_pipeline_parallel(1);
  config.set_context_parallel(1);
  config.set_micro_batch_size(1);
  return config;
}

v1::Candidate Probed(int64_t dp, int64_t tp, double tflops, bool simulated) {
  v1::Candidate candidate;
  *candidate.mutable_config() = Config(dp, tp);
  candidate.set_state(v1::CANDIDATE_PROBED);
  candidate.mutable_memory()->set_peak_bytes(int64_t{40} << 30);
  candidate.mutable_memory()->set_fraction_of_capacity(0.5);
  candidate.mutable_probe_result()->set_outcome(v1::PROBE_OK);
  candidate.mutable_probe_result()->set_model_tflops_per_gpu(tflops);
  candidate.mutable_probe_result()->set_mean_step_time_seconds(1.5);
  candidate.mutable_probe_result()->set_simulated(simulated);
  return candidate;
}

TEST(FormatPlanAdviceTest, NamesEachChangeWithItsFlags) {
  v1::PlanResponse plan;
  EXPECT_EQ(FormatPlanAdvice(plan), "");
  v1::PlanAdvice& nodes = *plan.add_advice();
  nodes.set_kind(v1::ADVICE_NODES);
  nodes.set_num_nodes(4);
  nodes.set_candidates(3);
  v1::PlanAdvice& fp8 = *plan.add_advice();
  fp8.set_kind(v1::ADVICE_FP8_PARAMETERS);
  fp8.set_candidates(1);
  v1::PlanAdvice& micro_batches = *plan.add_advice();
  micro_batches.set_kind(v1::ADVICE_MICRO_BATCH_SIZES);
  micro_batches.add_micro_batch_sizes(1);
  micro_batches.add_micro_batch_sizes(2);
  micro_batches.set_candidates(3);
  const std::string text = FormatPlanAdvice(plan);
  EXPECT_THAT(text, HasSubstr("Nothing fits. Each of these changes alone gives candidates:\n"));
  EXPECT_THAT(text, HasSubstr("4 nodes: 3 candidates                                 --nodes=4\n"));
  EXPECT_THAT(text, HasSubstr("fp8 with fp8 weights (fp8_param_gather): 1 candidate  --fp8 "
                              "--fp8_param_gather\n"));
  EXPECT_THAT(text, HasSubstr("--micro_batches=1,2\n"));

  plan.set_recompute_added(true);
  EXPECT_THAT(FormatPlanAdvice(plan),
              HasSubstr("Nothing fits as requested, without activation recompute"));
  EXPECT_THAT(FormatPlanAdvice(plan), HasSubstr("(the first is what this plan did)"));
}

TEST(FormatSearchTest, MarksSimulatedResultsAndRanksOnlySuccessfulProbes) {
  v1::Search search;
  search.set_name("searches/7");
  search.set_state(v1::SUCCEEDED);
  *search.add_candidates() = Probed(4, 1, 450.0, /*simulated=*/true);
  v1::Candidate oom = Probed(2, 2, 0, /*simulated=*/true);
  oom.mutable_probe_result()->set_outcome(v1::PROBE_OUT_OF_MEMORY);
  *search.add_candidates() = oom;

  const std::string text = FormatSearch(search);
  EXPECT_THAT(text, HasSubstr("450.0 (sim)"));
  EXPECT_THAT(text, HasSubstr("SIMULATED by the sim backend"));
  EXPECT_THAT(text, HasSubstr("out of memory"));
  EXPECT_THAT(text, HasSubstr("   1  dp4 tp1 pp1 cp1 mbs1"));
  EXPECT_THAT(text, HasSubstr("   -  dp2 tp2 pp1 cp1 mbs1"));
}

TEST(FormatSearchTest, ReplayedResultsAreLabelled) {
  v1::Search search;
  v1::Candidate replayed = Probed(4, 1, 439.9, /*simulated=*/false);
  replayed.mutable_probe_result()->set_backend("replay");
  *search.add_candidates() = replayed;
  const std::string text = FormatSearch(search);
  EXPECT_THAT(text, HasSubstr("439.9 (replay)"));
  EXPECT_THAT(text, HasSubstr("(replay) = a published measurement replayed"));
  EXPECT_THAT(text, Not(HasSubstr("(sim)")));
}

TEST(FormatSearchTest, MeasuredResultsCarryNoSimulationLegend) {
  v1::Search search;
  *search.add_candidates() = Probed(4, 1, 450.0, /*simulated=*/false);
  const std::string text = FormatSearch(search);
  EXPECT_THAT(text, Not(HasSubstr("(sim)")));
  EXPECT_THAT(text, Not(HasSubstr("SIMULATED")));
}

TEST(FormatSearchTest, ASimsGpuHoursAreLabelledRealEquivalent) {
  v1::Search search;
  search.mutable_counts()->set_gpu_seconds(7200);
  EXPECT_THAT(FormatSearch(search),
              HasSubstr("2.00 GPU-hours (simulated: the real-equivalent cost)"));
  search.mutable_spec()->mutable_probe()->set_backend("cuda");
  const std::string measured = FormatSearch(search);
  EXPECT_THAT(measured, HasSubstr("2.00 GPU-hours\n"));
  EXPECT_THAT(measured, Not(HasSubstr("real-equivalent")));
}

TEST(FormatSearchTest, ShowsWhatIsLeftAndItsProjectedCost) {
  v1::Search search;
  search.set_state(v1::PROBING);
  search.mutable_counts()->set_still_contending(5);
  search.mutable_counts()->set_projected_remaining_gpu_seconds(7200);
  search.mutable_counts()->set_projected_remaining_wall_seconds(900);
  search.mutable_progress()->set_candidates(40);
  search.mutable_progress()->set_could_still_win(5);
  EXPECT_THAT(FormatSearch(search),
              HasSubstr("  probed 0 of 40 candidates (0 ok, 0 failed), 5 could still win\n"
                        "  ~2.00 GPU-hours, ~0.25 h left (projected from predictions)\n"));
}

TEST(FormatSearchTest, CountsCandidatesAsTheServerDidThenTheProbes) {
  v1::Search search;
  search.set_state(v1::SUCCEEDED);
  v1::SearchCounts& counts = *search.mutable_counts();
  counts.set_probed(8);
  counts.set_confirmations(2);
  (*counts.mutable_failed_by_outcome())["PROBE_OUT_OF_MEMORY"] = 1;
  counts.set_gpu_seconds(3600);
  v1::SearchProgress& progress = *search.mutable_progress();
  progress.set_candidates(40);
  progress.set_probed(6);
  progress.set_ok(5);
  progress.set_failed(1);
  progress.set_probes(8);
  EXPECT_THAT(FormatSearch(search),
              HasSubstr("  probed 6 of 40 candidates (5 ok, 1 failed), 0 could still win\n"
                        "  8 probes (2 confirmations; 1 out of memory), 1.00 GPU-hours"));
}

TEST(FormatSearchTest, SaysWhyACandidateWaits) {
  v1::Search search;
  v1::Candidate waiting = Probed(2, 2, 0, /*simulated=*/false);
  waiting.set_state(v1::CANDIDATE_QUEUED);
  waiting.clear_probe_result();
  waiting.set_waiting_reason("needs 8 GPUs; the live workers hold 4");
  *search.add_candidates() = waiting;
  EXPECT_THAT(FormatSearch(search),
              HasSubstr("waiting: dp2 tp2 pp1 cp1 mbs1 needs 8 GPUs; the live workers hold 4\n"));
}

TEST(FormatSearchTest, ALeaderBeingConfirmedShowsItsFirstMeasurement) {
  v1::Search search;
  v1::Candidate confirming = Probed(4, 1, 599.7, /*simulated=*/true);
  confirming.set_state(v1::CANDIDATE_RUNNING);
  *confirming.mutable_screening_result() = confirming.probe_result();
  confirming.clear_probe_result();
  *search.add_candidates() = confirming;
  EXPECT_THAT(FormatSearch(search), HasSubstr("   -  dp4 tp1 pp1 cp1 mbs1"));
  EXPECT_THAT(FormatSearch(search), HasSubstr("599.7 (sim)   1.500  confirming\n"));
}

v1::ProbeHost Host(const std::string& worker, const std::string& hostname, int64_t first_rank) {
  v1::ProbeHost host;
  host.set_worker(worker);
  host.set_hostname(hostname);
  host.set_first_rank(first_rank);
  host.set_num_ranks(8);
  host.set_gpu_name("simulated h100-80gb");
  host.set_gpu_type("h100-80gb");
  return host;
}

TEST(FormatSearchTest, SaysWhereEachProbedCandidateRanBelowTheTable) {
  v1::Search search;
  v1::Candidate gang = Probed(16, 1, 450.0, /*simulated=*/true);
  *gang.mutable_probe_result()->add_ran_on() = Host("workers/3", "sim-node-1", 0);
  *gang.mutable_probe_result()->add_ran_on() = Host("workers/4", "sim-node-2", 8);
  *search.add_candidates() = gang;
  v1::Candidate oom = Probed(8, 2, 0, /*simulated=*/true);
  oom.mutable_probe_result()->set_outcome(v1::PROBE_OUT_OF_MEMORY);
  *oom.mutable_probe_result()->add_ran_on() = Host("workers/3", "sim-node-1", 0);
  *search.add_candidates() = oom;
  // Recorded before the server filled ran_on in: no line.
  *search.add_candidates() = Probed(4, 4, 300.0, /*simulated=*/true);

  const std::string text = FormatSearch(search);
  EXPECT_THAT(text, HasSubstr("  ok\n"
                              "dp16 tp1 pp1 cp1 mbs1 ran on workers/3 (sim-node-1, 8 x h100-80gb, "
                              "ranks 0-7) + workers/4 (sim-node-2, 8 x h100-80gb, ranks 8-15)\n"
                              "dp8 tp2 pp1 cp1 mbs1 ran on workers/3 (sim-node-1, 8 x h100-80gb, "
                              "ranks 0-7)\n"
                              "best dp16 tp1 pp1 cp1 mbs1: peak memory not measured (estimated "
                              "40.00 GiB"));
  EXPECT_THAT(text, HasSubstr("\n(sim) = SIMULATED"));
  EXPECT_THAT(text, Not(HasSubstr("dp4 tp4 pp1 cp1 mbs1 ran on")));
  // The table has no column for it.
  EXPECT_THAT(text, HasSubstr("step s  result\n"));
}

v1::Search Listed(const std::string& name, v1::SearchState state, absl::Time created,
                  absl::Time updated) {
  v1::Search search;
  search.set_name(name);
  search.set_state(state);
  search.mutable_create_time()->set_seconds(absl::ToUnixSeconds(created));
  search.mutable_update_time()->set_seconds(absl::ToUnixSeconds(updated));
  search.mutable_counts()->set_memory_safe(45);
  search.mutable_progress()->set_candidates(45);
  return search;
}

TEST(FormatSearchListTest, BestConfigurationHumanTimesAndACutStopReason) {
  const absl::Time now = absl::FromUnixSeconds(1800000000);
  v1::ListSearchesResponse response;
  v1::Search& running = *response.add_searches() =
      Listed("searches/2", v1::PROBING, now - absl::Minutes(3), now - absl::Seconds(5));
  running.mutable_progress()->set_probed(1);
  v1::Search& done = *response.add_searches() =
      Listed("searches/1", v1::SUCCEEDED, now - absl::Hours(2), now - absl::Minutes(50));
  done.set_display_name("demo");
  // Listed as ListSearches sends it: its best candidate, no candidates.
  *done.mutable_best_candidate() = Probed(4, 1, 450.0, /*simulated=*/true);
  done.mutable_progress()->set_probed(2);
  done.set_stop_reason(
      "no unprobed candidate's optimistic prediction beats the best measured 450.0 TFLOP/s per "
      "GPU by more than 2%; 2 leaders confirmed with 20-step probes");
  // Both searches show the progress the server sent; searches/2 has no best yet. The best
  // configuration is told apart from its search's others: dp follows from the rest.
  EXPECT_EQ(FormatSearchList(response, now, 0),
            "search      name  state      probed  best config       TFLOP/s/GPU    created    "
            "ran  stop reason\n"
            "----------  ----  ---------  ------  ----------------  -----------  ---------  "
            "-----  ------------------------------------------------\n"
            "searches/2  -     PROBING      1/45  -                           -     3m ago     "
            "3m  -\n"
            "searches/1  demo  SUCCEEDED    2/45  tp1 pp1 cp1 mbs1  450.0 (sim)  2h00m ago  "
            "1h10m  no unprobed candidate's optimistic prediction...\n");
}

TEST(FormatSearchListTest, AFailedSearchSaysWhyBelowTheTableAtAnyWidth) {
  const absl::Time now = absl::FromUnixSeconds(1800000000);
  v1::ListSearchesResponse response;
  v1::Search& failed = *response.add_searches() =
      Listed("searches/2", v1::FAILED, now - absl::Minutes(3), now - absl::Minutes(3));
  failed.set_stop_reason(
      "no memory-safe configuration to probe: 0 memory-safe, 0 risky, 150 out of memory; add "
      "GPUs, use GPUs with more memory or shorten the sequence");
  EXPECT_THAT(FormatSearchList(response, now, 0),
              HasSubstr("\nsearches/2 failed: no memory-safe configuration to probe: 0 "
                        "memory-safe, 0 risky, 150 out of memory; add GPUs, use GPUs with more "
                        "memory or shorten the sequence\n"));
  // On a terminal, wrapped to its width.
  EXPECT_THAT(FormatSearchList(response, now, 80),
              HasSubstr("\nsearches/2 failed: no memory-safe configuration to probe: 0 "
                        "memory-safe, 0\n  risky, 150 out of memory; add GPUs, use GPUs with "
                        "more memory or shorten the\n  sequence\n"));
}

TEST(FormatSearchListTest, SaysWhyASearchsCandidatesWaitBelowTheTable) {
  const absl::Time now = absl::FromUnixSeconds(1800000000);
  v1::ListSearchesResponse response;
  v1::Search& waiting = *response.add_searches() =
      Listed("searches/3", v1::PROBING, now - absl::Minutes(3), now - absl::Minutes(1));
  waiting.mutable_progress()->set_waiting(2);
  waiting.mutable_progress()->set_waiting_reason(
      "needs 16 GPUs on workers offering backend sim; the live workers have 8");
  EXPECT_THAT(FormatSearchList(response, now, 0),
              HasSubstr("\nsearches/3 waiting: needs 16 GPUs on workers offering backend sim; "
                        "the live workers have 8\n"));
}

TEST(FormatSearchListTest, At80ColumnsKeepsWhatTellsTheBestApart) {
  const absl::Time now = absl::FromUnixSeconds(1800000000);
  v1::ListSearchesResponse response;
  v1::Search& done = *response.add_searches() =
      Listed("searches/11", v1::SUCCEEDED, now - absl::Hours(2), now - absl::Minutes(50));
  done.set_display_name("llama 8b");
  done.mutable_progress()->set_probed(12);
  done.mutable_progress()->set_candidates(225);
  v1::SearchSpace& space = *done.mutable_spec()->mutable_space();
  space.add_virtual_pipeline_sizes(1);
  space.add_virtual_pipeline_sizes(2);
  space.add_recompute_modes(v1::RECOMPUTE_NONE);
  space.add_recompute_modes(v1::RECOMPUTE_FULL);
  v1::Candidate best = Probed(2, 1, 580.8, /*simulated=*/true);
  best.mutable_config()->set_pipeline_parallel(2);
  best.mutable_config()->set_context_parallel(2);
  best.mutable_config()->set_micro_batch_size(2);
  best.mutable_config()->set_virtual_pipeline(2);
  best.mutable_config()->set_recompute(v1::RECOMPUTE_FULL);
  *done.mutable_best_candidate() = best;
  done.set_stop_reason("no unprobed candidate can beat the best measured");
  const std::string at80 = FormatSearchList(response, now, 80);
  EXPECT_THAT(at80, HasSubstr("  12/225  tp1 pp2 cp2 mbs2 vp2 recompute=full  580.8 (sim)\n"));
}

TEST(FormatSearchListTest, FitsATerminalKeepingTheBestTflops) {
  const absl::Time now = absl::FromUnixSeconds(1800000000);
  v1::ListSearchesResponse response;
  v1::Search& done = *response.add_searches() =
      Listed("searches/1", v1::SUCCEEDED, now - absl::Hours(2), now - absl::Minutes(50));
  done.set_display_name("a long display name");
  *done.mutable_best_candidate() = Probed(4, 1, 450.0, /*simulated=*/true);
  done.set_stop_reason("a stop reason that goes on and on");
  for (size_t width = 40; width <= 200; ++width) {
    const std::string table = FormatSearchList(response, now, width);
    EXPECT_THAT(table, HasSubstr("450.0 (sim)")) << width;
    EXPECT_THAT(table, HasSubstr("searches/1")) << width;
  }
  const std::string at80 = FormatSearchList(response, now, 80);
  EXPECT_THAT(at80, Not(HasSubstr("ran")));
  EXPECT_THAT(at80, HasSubstr("0/45"));
  EXPECT_THAT(at80, HasSubstr("tp1 pp1 cp1 mbs1"));
}

TEST(FormatWorkersTest, ShowsWhoRegisteredEachWorker) {
  v1::ListWorkersResponse response;
  v1::Worker& bound = *response.add_workers();
  bound.set_name("workers/1");
  bound.set_registered_by("pool-a");
  response.add_workers()->set_name("workers/2");  // a server without tokens
  const std::string table = FormatWorkers(response);
  EXPECT_THAT(table, HasSubstr("registered by"));
  EXPECT_THAT(table, HasSubstr("pool-a"));
}

TEST(FormatSearchTest, NamesItsCreatorWhenTheServerHasPrincipals) {
  v1::Search search;
  search.set_name("searches/4");
  search.set_state(v1::PROBING);
  EXPECT_THAT(FormatSearch(search), Not(HasSubstr("created by")));
  search.set_creator("alice");
  EXPECT_THAT(FormatSearch(search), HasSubstr("state PROBING, created by alice\n"));
}

TEST(FormatWorkersTest, ShowsTheLabelsInKeyOrder) {
  v1::ListWorkersResponse response;
  v1::Worker& worker = *response.add_workers();
  worker.set_name("workers/3");
  worker.set_hostname("gpu-017");
  worker.add_backends("sim");
  worker.set_state(v1::WORKER_BUSY);
  (*worker.mutable_labels())["slurm_job_id"] = "4242";
  (*worker.mutable_labels())["paratune.probe"] = "searches/1/candidates/0/probes/1";
  const std::string table = FormatWorkers(response);
  EXPECT_THAT(table, HasSubstr("labels"));
  EXPECT_THAT(table,
              HasSubstr("paratune.probe=searches/1/candidates/0/probes/1,slurm_job_id=4242"));
}

TEST(FormatWorkersTest, ShowsTheMatchedGpuTypeOrTheUnknownName) {
  v1::ListWorkersResponse response;
  v1::Worker& matched = *response.add_workers();
  matched.set_name("workers/1");
  matched.set_hostname("gpu-001");
  for (int i = 0; i < 8; ++i) matched.add_gpus()->set_name("NVIDIA H100 80GB HBM3");
  matched.set_gpu_type("h100-80gb");
  matched.add_backends("cuda");
  matched.set_state(v1::WORKER_IDLE);
  v1::Worker& unknown = *response.add_workers();
  unknown.set_name("workers/2");
  unknown.set_hostname("gh-001");
  for (int i = 0; i < 4; ++i) unknown.add_gpus()->set_name("NVIDIA GH200 480GB");
  unknown.add_backends("cuda");
  unknown.set_state(v1::WORKER_IDLE);
  v1::Worker& none = *response.add_workers();
  none.set_name("workers/3");
  none.set_hostname("cpu-001");
  none.add_backends("sim");
  none.set_state(v1::WORKER_LOST);
  EXPECT_EQ(FormatWorkers(response),
            "worker     host     GPUs                                backends  state        "
            "probes done  registered by  labels\n"
            "---------  -------  ----------------------------------  --------  -----------  "
            "-----------  -------------  ------\n"
            "workers/1  gpu-001  8 x h100-80gb                       cuda      WORKER_IDLE  "
            "          0  -\n"
            "workers/2  gh-001   4 x unknown GPU NVIDIA GH200 480GB  cuda      WORKER_IDLE  "
            "          0  -\n"
            "workers/3  cpu-001  none                                sim       WORKER_LOST  "
            "          0  -\n");
}

TEST(FormatEstimateTest, PrintsEveryTermPerStageAndTheVerdict) {
  v1::EstimateResponse estimate;
  v1::MemoryEstimate& memory = *estimate.mutable_memory();
  for (int stage : {0, 3}) {
    v1::StageMemory& s = *memory.add_stages();
    s.set_stage(stage);
    v1::MemoryTerm& weights = *s.add_terms();
    weights.set_name("weights");
    weights.set_bytes(int64_t{2} << 30);
    s.set_total_bytes(int64_t{2} << 30);
  }
  memory.set_peak_bytes(int64_t{2} << 30);
  memory.set_capacity_bytes(int64_t{80} << 30);
  memory.set_fraction_of_capacity(0.025);
  memory.set_safe_threshold(0.8);
  memory.set_verdict(v1::SAFE);
  const std::string text = FormatEstimate(Config(8, 1), estimate);
  EXPECT_THAT(text, HasSubstr("stage 0  stage 3"));
  EXPECT_THAT(text, HasSubstr("weights                  2.00     2.00"));
  EXPECT_THAT(text, HasSubstr("= 2.5% of capacity -> SAFE (SAFE below 80.0%)"));
}

TEST(FormatEstimateTest, NamesThePeakTheMfuIsAgainst) {
  v1::EstimateResponse estimate;
  v1::PerformanceEstimate& perf = *estimate.mutable_performance();
  perf.set_model_tflops_per_gpu(951.6);
  perf.set_mfu(951.6 / 1978);
  perf.set_mfu_peak_tflops(1978);
  perf.set_mfu_peak_precision("fp8");
  EXPECT_THAT(FormatEstimate(Config(8, 1), estimate),
              HasSubstr("MFU 48.1% of the 1978 TFLOP/s dense fp8 peak"));
  perf.set_mfu(951.6 / 989 / 2);
  perf.set_mfu_peak_tflops(989);
  perf.set_mfu_peak_precision("bf16");
  perf.set_model_tflops_per_gpu(475.8);
  EXPECT_THAT(FormatEstimate(Config(8, 1), estimate),
              HasSubstr("MFU 48.1% of the 989 TFLOP/s dense bf16 peak"));
  // A server that does not report the peak.
  perf.clear_mfu_peak_tflops();
  perf.clear_mfu_peak_precision();
  EXPECT_THAT(FormatEstimate(Config(8, 1), estimate), HasSubstr("MFU 48.1% of the dense peak"));
}

// The expert-parallel line is a mixture-of-experts configuration's, shown at 0 where the
// overlaps hide all of it; a dense configuration has none.
TEST(FormatEstimateTest, ExpertParallelCommunicationWhereTheConfigurationHasExperts) {
  v1::EstimateResponse estimate;
  estimate.mutable_performance()->set_ep_communication_seconds(0);
  EXPECT_THAT(FormatEstimate(Config(8, 1), estimate), Not(HasSubstr("EP communication")));
  v1::ParallelConfig experts = Config(8, 1);
  experts.set_expert_parallel(8);
  EXPECT_THAT(FormatEstimate(experts, estimate),
              HasSubstr("EP communication (exposed)          0.000"));
  estimate.mutable_performance()->set_ep_communication_seconds(0.25);
  EXPECT_THAT(FormatEstimate(Config(8, 1), estimate),
              HasSubstr("EP communication (exposed)          0.250"));
}

TEST(FormatPlanCandidatesTest, SaysWhichPeakTheMfuColumnIsAgainst) {
  v1::PlanResponse plan;
  v1::Candidate& candidate = *plan.add_candidates();
  *candidate.mutable_config() = Config(8, 1);
  candidate.mutable_predicted()->set_mfu(0.4);
  candidate.mutable_predicted()->set_mfu_peak_tflops(1978);
  candidate.mutable_predicted()->set_mfu_peak_precision("fp8");
  plan.mutable_counts()->set_memory_safe(1);
  EXPECT_THAT(FormatPlanCandidates(plan), HasSubstr("MFU of the 1978 TFLOP/s dense fp8 peak"));
}

}  // namespace
}  // namespace paratune
