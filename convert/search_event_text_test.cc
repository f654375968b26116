#include "convert/search_event_text.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

v1::ProbeHost Host(const std::string& worker, int64_t first_rank, int64_t num_ranks) {
  v1::ProbeHost host;
  host.set_worker(worker);
  host.set_first_rank(first_rank);
  host.set_num_ranks(num_ranks);
  return host;
}

v1::SearchEvent OfKind(v1::SearchEventKind kind) {
  v1::SearchEvent event;
  event.set_kind(kind);
  event.set_candidate("searches/1/candidates/3");
  event.set_probe("searches/1/candidates/3/probes/2");
  return event;
}

v1::ParallelConfig Config(int64_t dp, int64_t tp) {
  v1::ParallelConfig config;
  config.set_data_parallel(dp);
  config.set_tensor_parallel(tp);
  config.set_pipeline_parallel(1);
  config.set_context_parallel(1);
  config.set_micro_batch_size(1);
  config.set_sequence_parallel(true);
  return config;
}

TEST(SearchEventTextTest, CreatedNamesWhoAndWhatMemoryAllows) {
  v1::SearchEvent event = OfKind(v1::EVENT_CREATED);
  event.set_policy(v1::ADAPTIVE);
  event.mutable_counts()->set_memory_safe(45);
  event.mutable_counts()->set_memory_risky(4);
  event.set_probes_risky(true);
  EXPECT_EQ(RenderSearchEvent(event),
            "search created: 45 SAFE or RISKY (4 RISKY) candidates, ADAPTIVE");
  event.set_principal("alice");
  event.set_probes_risky(false);
  EXPECT_EQ(RenderSearchEvent(event),
            "search created by alice: 45 memory-safe candidates, ADAPTIVE");
}

TEST(SearchEventTextTest, PicksNameTheConfigurationAndWhy) {
  v1::SearchEvent event = OfKind(v1::EVENT_PLANNED);
  *event.mutable_config() = Config(4, 2);
  event.set_reason("predicted 402.1");
  EXPECT_EQ(RenderSearchEvent(event),
            "queued searches/1/candidates/3 dp4 tp2 pp1 cp1 mbs1: predicted 402.1");
  event.set_kind(v1::EVENT_CONFIRMING);
  EXPECT_EQ(RenderSearchEvent(event),
            "confirming searches/1/candidates/3 dp4 tp2 pp1 cp1 mbs1: predicted 402.1");
}

TEST(SearchEventTextTest, LeaseAndSharesNameTheWorkersAndRanks) {
  v1::SearchEvent event = OfKind(v1::EVENT_LEASED);
  *event.add_workers() = Host("workers/1", 0, 8);
  *event.add_workers() = Host("workers/2", 8, 8);
  event.set_attempt(1);
  event.set_max_attempts(2);
  event.set_scope(v1::PROBE_SCOPE_FULL);
  event.set_gpus(16);
  EXPECT_EQ(RenderSearchEvent(event),
            "searches/1/candidates/3 leased to workers/1 (ranks 0-7) + workers/2 (ranks 8-15) "
            "(attempt 1 of 2, full scope, 16 GPUs)");
  event.set_kind(v1::EVENT_SHARE_FINISHED);
  event.mutable_workers()->DeleteSubrange(0, 1);
  EXPECT_EQ(RenderSearchEvent(event),
            "searches/1/candidates/3: workers/2 (ranks 8-15) finished its share of "
            "searches/1/candidates/3/probes/2");
}

TEST(SearchEventTextTest, AConfirmationIsLeasedAsConfirmingNotAsARetry) {
  v1::SearchEvent event = OfKind(v1::EVENT_LEASED);
  *event.add_workers() = Host("workers/1", 0, 8);
  event.set_attempt(2);
  event.set_max_attempts(2);
  event.set_scope(v1::PROBE_SCOPE_FULL);
  event.set_gpus(8);
  event.set_confirmation(true);
  event.set_tflops_per_gpu(620.94);
  event.set_result_source("simulated");
  event.set_attempt(1);
  EXPECT_EQ(RenderSearchEvent(event),
            "searches/1/candidates/3 leased to workers/1 (ranks 0-7) (confirming its first "
            "measurement, 620.9 TFLOP/s per GPU simulated, full scope, 8 GPUs)");
  // Retried, it counts its own attempts.
  event.set_attempt(2);
  EXPECT_EQ(RenderSearchEvent(event),
            "searches/1/candidates/3 leased to workers/1 (ranks 0-7) (confirming its first "
            "measurement, 620.9 TFLOP/s per GPU simulated, confirmation attempt 2 of 2, full "
            "scope, 8 GPUs)");
  event.set_kind(v1::EVENT_REQUEUED);
  event.set_attempt(1);
  event.set_reason("workers/1 lost");
  EXPECT_EQ(RenderSearchEvent(event),
            "searches/1/candidates/3's confirmation re-queued after attempt 1 of 2: workers/1 "
            "lost");
  event.set_kind(v1::EVENT_GAVE_UP);
  event.set_attempt(2);
  event.set_screening_result_stands(true);
  EXPECT_EQ(RenderSearchEvent(event),
            "searches/1/candidates/3's confirmation failed: gave up after 2 of 2 attempts; "
            "last: workers/1 lost; its screening result stands");
}

TEST(SearchEventTextTest, ResultsSayWhereTheirNumberComesFrom) {
  v1::SearchEvent event = OfKind(v1::EVENT_PROBED);
  *event.add_workers() = Host("workers/1", 0, 8);
  *event.add_workers() = Host("workers/2", 8, 8);
  event.set_outcome(v1::PROBE_OK);
  event.set_tflops_per_gpu(402.14);
  event.set_result_source("extrapolated");
  EXPECT_EQ(RenderSearchEvent(event),
            "searches/1/candidates/3 probed on workers/1 + workers/2: 402.1 TFLOP/s per GPU "
            "(extrapolated)");

  v1::SearchEvent failed = OfKind(v1::EVENT_PROBED);
  *failed.add_workers() = Host("workers/2", 8, 8);
  failed.set_outcome(v1::PROBE_OUT_OF_MEMORY);
  failed.set_reason("cudaMalloc of activations (9.00 GiB)");
  failed.set_result_source("measured");
  failed.set_screening_result_stands(true);
  EXPECT_EQ(RenderSearchEvent(failed),
            "searches/1/candidates/3 probed on workers/2: out of memory: cudaMalloc of "
            "activations (9.00 GiB) (measured); its screening result stands");
}

TEST(SearchEventTextTest, RetriesAndGiveUpsCountAttempts) {
  v1::SearchEvent event = OfKind(v1::EVENT_REQUEUED);
  event.set_attempt(1);
  event.set_max_attempts(2);
  event.set_reason("workers/4 lost: no heartbeat for 6s");
  EXPECT_EQ(RenderSearchEvent(event),
            "searches/1/candidates/3 re-queued after attempt 1 of 2: workers/4 lost: no "
            "heartbeat for 6s");
  event.set_kind(v1::EVENT_GAVE_UP);
  event.set_attempt(2);
  EXPECT_EQ(RenderSearchEvent(event),
            "searches/1/candidates/3 failed: gave up after 2 of 2 attempts; last: workers/4 "
            "lost: no heartbeat for 6s");
  event.set_kind(v1::EVENT_WORKER_LOST);
  *event.add_workers() = Host("workers/4", 0, 8);
  event.set_reason("no heartbeat for 6s");
  EXPECT_EQ(RenderSearchEvent(event),
            "workers/4 (ranks 0-7) lost while running searches/1/candidates/3/probes/2: no "
            "heartbeat for 6s");
}

TEST(SearchEventTextTest, SkipsAndWaitsAndTheSearchsEnd) {
  v1::SearchEvent skipped = OfKind(v1::EVENT_SKIPPED);
  *skipped.add_ruled_out() = Config(2, 1);
  *skipped.add_ruled_out() = Config(1, 2);
  skipped.set_reason("not fitting in memory (calibrated estimate)");
  EXPECT_EQ(RenderSearchEvent(skipped),
            "ruled out as not fitting in memory (calibrated estimate): dp2 tp1 pp1 cp1 mbs1, dp1 "
            "tp2 pp1 cp1 mbs1");

  v1::SearchEvent waiting = OfKind(v1::EVENT_WAITING);
  waiting.set_reason("needs 16 GPUs of backend sim");
  EXPECT_EQ(RenderSearchEvent(waiting), "searches/1/candidates/3 needs 16 GPUs of backend sim");
  waiting.clear_reason();
  EXPECT_EQ(RenderSearchEvent(waiting), "searches/1/candidates/3 can be placed again");

  EXPECT_EQ(RenderSearchEvent(OfKind(v1::EVENT_RESUMED)), "server restarted; search resumed");
  v1::SearchEvent stopped = OfKind(v1::EVENT_STOPPED);
  stopped.set_state(v1::FAILED);
  stopped.set_reason("all 3 selected candidates failed");
  EXPECT_EQ(RenderSearchEvent(stopped), "search failed: all 3 selected candidates failed");
  stopped.set_state(v1::SUCCEEDED);
  stopped.set_reason("probed all 3");
  EXPECT_EQ(RenderSearchEvent(stopped), "search succeeded: probed all 3");

  v1::SearchEvent cancelled = OfKind(v1::EVENT_CANCELLED);
  cancelled.set_principal("bob");
  cancelled.set_stopped_probes(2);
  EXPECT_EQ(RenderSearchEvent(cancelled), "search cancelled by bob; 2 running probes told to stop");
}

// Events logged before they had kinds are their text, whatever else they hold.
TEST(SearchEventTextTest, AnEventWithoutAKindIsItsStoredText) {
  v1::SearchEvent event;
  event.set_text("candidates/0 probed on workers/1: 402.1 TFLOP/s per GPU (simulated)");
  EXPECT_EQ(RenderSearchEvent(event), event.text());
}

}  // namespace
}  // namespace paratune
