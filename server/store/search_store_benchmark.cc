// The cost of recording one probe result in the SQLite store against the search's size
// (docs/storage.md): Apply of a batch updating a search of N candidates, one of them changed,
// with the lease it ends and an event, as the scheduler writes it.
//
//   bazel run -c opt //server/store:search_store_benchmark
//
// Counters: bytes_written is what the process passed to write(2) per result (/proc/self/io
// wchar: SQLite's WAL appends and checkpoints).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "benchmark/benchmark.h"
#include "server/store/sqlite_search_store.h"

namespace paratune {
namespace {

// Bytes this process has passed to write(2) so far; 0 where /proc is absent.
int64_t WrittenBytes() {
  std::ifstream io("/proc/self/io");
  std::string key;
  int64_t value = 0;
  while (io >> key >> value) {
    if (key == "wchar:") return value;
  }
  return 0;
}

// A candidate the size of the scheduler's: a config, estimates and a selection note.
v1::Candidate MakeCandidate(int64_t search_id, int64_t n) {
  v1::Candidate candidate;
  candidate.set_name(absl::StrCat("searches/", search_id, "/candidates/", n));
  v1::ParallelConfig& config = *candidate.mutable_config();
  config.set_data_parallel(1 + n % 64);
  config.set_tensor_parallel(1 + n % 8);
  config.set_pipeline_parallel(1 + n % 4);
  config.set_context_parallel(1);
  config.set_micro_batch_size(1 + n % 4);
  v1::MemoryEstimate& memory = *candidate.mutable_memory();
  memory.set_peak_bytes(40'000'000'000 + n);
  memory.set_capacity_bytes(80'000'000'000);
  memory.set_fraction_of_capacity(0.5);
  memory.set_safe_threshold(0.9);
  memory.set_verdict(v1::SAFE);
  v1::PerformanceEstimate& predicted = *candidate.mutable_predicted();
  predicted.set_step_time_seconds(1.0 + n * 1e-4);
  predicted.set_compute_seconds(0.8);
  predicted.set_pipeline_bubble_seconds(0.05);
  predicted.set_tp_communication_seconds(0.05);
  predicted.set_dp_communication_seconds(0.05);
  predicted.set_tokens_per_second(1e5);
  predicted.set_model_tflops_per_gpu(300);
  predicted.set_mfu(0.4);
  candidate.set_state(v1::CANDIDATE_QUEUED);
  candidate.set_selection_note(
      absl::StrCat("rank ", n, " by predicted step time; within 3% of the best prediction"));
  return candidate;
}

void BM_ApplyOneResult(benchmark::State& state) {
  const int64_t candidates = state.range(0);
  const std::string path =
      absl::StrCat(std::getenv("TEST_TMPDIR") != nullptr ? std::getenv("TEST_TMPDIR") : "/tmp",
                   "/search_store_benchmark_", candidates, ".db");
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  std::unique_ptr<SqliteSearchStore> store = *SqliteSearchStore::Open(path);
  StoreBatch create;
  SearchUpdate& search = create.searches[1];
  search.fields.set_name("searches/1");
  search.fields.set_state(v1::PROBING);
  for (int64_t n = 0; n < candidates; ++n) search.candidates[n] = MakeCandidate(1, n);
  if (!store->Apply(create).ok()) state.SkipWithError("creating the search failed");

  int64_t results = 0;
  // Outside the loop, so destroying the previous batch is not timed.
  StoreBatch batch;
  const int64_t written_before = WrittenBytes();
  for (auto _ : state) {
    state.PauseTiming();
    const int64_t n = results % candidates;
    v1::Candidate& candidate = search.candidates[n];
    candidate.set_state(v1::CANDIDATE_PROBED);
    candidate.set_attempts(candidate.attempts() + 1);
    v1::ProbeResult& result = *candidate.mutable_probe_result();
    result.set_outcome(v1::PROBE_OK);
    result.set_mean_step_time_seconds(1.0 + results * 1e-6);
    result.set_tokens_per_second(1e5);
    result.set_wall_seconds(30);
    search.fields.mutable_counts()->set_probed(results + 1);
    batch = StoreBatch();
    batch.searches[1].fields = search.fields;
    batch.searches[1].candidates[n] = candidate;
    batch.ended_leases.insert(absl::StrCat(candidate.name(), "/probes/", results));
    // The event of a probe's result, as the scheduler logs it.
    StoredEvent& probed =
        batch.events.emplace_back(StoredEvent{1, 0, absl::FromUnixSeconds(results), {}});
    probed.event.set_kind(v1::EVENT_PROBED);
    probed.event.set_candidate(candidate.name());
    probed.event.set_probe(absl::StrCat(candidate.name(), "/probes/", results));
    v1::ProbeHost& host = *probed.event.add_workers();
    host.set_worker("workers/1");
    host.set_hostname("node-1");
    host.set_num_ranks(8);
    probed.event.set_outcome(v1::PROBE_OK);
    probed.event.set_tflops_per_gpu(result.model_tflops_per_gpu());
    probed.event.set_result_source("measured");
    state.ResumeTiming();
    if (!store->Apply(batch).ok()) state.SkipWithError("Apply failed");
    ++results;
  }
  state.counters["bytes_written"] =
      benchmark::Counter(static_cast<double>(WrittenBytes() - written_before) / results);
  store.reset();
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
}
BENCHMARK(BM_ApplyOneResult)->Arg(20)->Arg(2'000)->Arg(20'000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace paratune
