// The scheduler's CPU per probe against the size of its search (docs/storage.md): the
// workers of a two-node cluster lease the next candidate (TryAcquireProbe, a gang of both) and
// report its result (ReportProbe), each operation committed to a SQLite database file as
// paratune-server stores it. The search is EXHAUSTIVE; the argument picks its space (about
// 20, 2,000 or 20,000 candidates). A search that ends is replaced by a new one, untimed.
//
//   bazel run -c opt //server/core:scheduler_benchmark
//
// BM_ProbeWatched adds WatchSearch observers (one, or ten on the largest search), each sent
// what changed after every change and serializing it as the stream would (counter
// watch_bytes_per_probe: one watcher's); BM_CheckLeases times the periodic check of a search whose
// candidates are all queued, on the two nodes' workers alone and among 126 more that cannot
// host them (a fleet the size of scripts/load_test.sh's). Counter: candidates is the search's
// size.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "proto/autotuner_service.pb.h"
#include "proto/worker_service.pb.h"
#include "server/core/scheduler.h"
#include "server/core/search_observer.h"
#include "server/store/sqlite_search_store.h"

namespace paratune {
namespace {

// Nodes of the searched cluster, one worker each: every probe runs on all of them (FULL).
constexpr int kNodes = 2;

// Node `node`'s worker: `gpus` simulated H100-80GB.
v1::RegisterWorkerRequest NodeWorker(int node, int gpus = 64) {
  v1::RegisterWorkerRequest request;
  request.set_hostname(absl::StrCat("node", node));
  for (int i = 0; i < gpus; ++i) {
    v1::Gpu& gpu = *request.add_gpus();
    gpu.set_index(i);
    gpu.set_name("simulated H100-80GB");
    gpu.set_memory_bytes(85'520'809'984);
  }
  request.add_backends("sim");
  return request;
}

// An EXHAUSTIVE search of Llama-3.1-8B (levels 0 and 1) or of a 96-layer model of 64 heads,
// which more pipeline and tensor-parallel sizes divide (level 2), on kNodes nodes of 64
// H100-80GB, its space widened with `level` to select about 20, 2,000 and 20,000 candidates.
v1::CreateSearchRequest ExhaustiveSearch(int level) {
  v1::CreateSearchRequest request;
  v1::SearchSpec& spec = *request.mutable_spec();
  spec.mutable_cluster()->mutable_gpu()->set_type("h100-80gb");
  spec.mutable_cluster()->set_num_nodes(kNodes);
  spec.mutable_cluster()->set_gpus_per_node(64);
  spec.set_policy(v1::EXHAUSTIVE);
  spec.mutable_probe()->set_backend("sim");
  spec.mutable_probe()->set_scope(v1::PROBE_SCOPE_FULL);
  v1::SearchSpace& space = *spec.mutable_space();
  space.set_memory_policy(v1::MEASURE_RISKY);
  v1::TrainingSpec& training = *spec.mutable_training();
  switch (level) {
    case 0:
      spec.mutable_model()->set_preset("llama3.1-8b");
      training.set_global_batch_size(1);
      training.set_seq_len(4096);
      space.add_micro_batch_sizes(1);
      break;
    case 1:
      spec.mutable_model()->set_preset("llama3.1-8b");
      training.set_global_batch_size(3840);
      training.set_seq_len(4096);
      for (int64_t size : {1, 2, 3, 4, 5, 6, 8}) space.add_micro_batch_sizes(size);
      for (v1::Recompute mode : {v1::RECOMPUTE_NONE, v1::RECOMPUTE_SELECTIVE, v1::RECOMPUTE_FULL}) {
        space.add_recompute_modes(mode);
      }
      break;
    default: {
      v1::ModelSpec& model = *spec.mutable_model();
      model.set_hidden_size(2048);
      model.set_ffn_hidden_size(8192);
      model.set_num_layers(96);
      model.set_num_attention_heads(64);
      model.set_num_kv_heads(64);
      model.set_vocab_size(128256);
      training.set_global_batch_size(221760);
      training.set_seq_len(1024);
      for (int64_t size : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 15, 16, 18}) {
        space.add_micro_batch_sizes(size);
      }
      for (v1::Recompute mode : {v1::RECOMPUTE_NONE, v1::RECOMPUTE_SELECTIVE, v1::RECOMPUTE_FULL}) {
        space.add_recompute_modes(mode);
      }
      for (int64_t size : {1, 2, 3, 4, 6, 8, 12}) space.add_virtual_pipeline_sizes(size);
      space.set_allow_uneven_pipeline_stages(true);
    }
  }
  return request;
}

v1::ProbeResult SimResult() {
  v1::ProbeResult result;
  result.set_outcome(v1::PROBE_OK);
  result.set_backend("sim");
  result.set_simulated(true);
  result.add_step_times_seconds(1.0);
  result.set_mean_step_time_seconds(1.0);
  result.set_tokens_per_second(1000);
  result.set_model_tflops_per_gpu(300);
  result.set_wall_seconds(30);
  return result;
}

// A scheduler over the SQLite database at `path` (":memory:" for one in memory), without a cap
// on enumerated candidates, with a worker per node registered and `bystanders` more workers of
// 8 GPUs (too few for a node share); `workers` receives the names of the nodes' workers.
// Null after SkipWithError.
std::unique_ptr<Scheduler> StartScheduler(benchmark::State& state, const std::string& path,
                                          std::vector<std::string>& workers, int bystanders = 0) {
  absl::StatusOr<std::unique_ptr<SqliteSearchStore>> store = SqliteSearchStore::Open(path);
  if (!store.ok()) {
    state.SkipWithError(store.status().ToString().c_str());
    return nullptr;
  }
  Scheduler::Options options;
  options.limits.max_enumerated_candidates = 0;
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
      Scheduler::Create(options, *std::move(store));
  if (!scheduler.ok()) {
    state.SkipWithError(scheduler.status().ToString().c_str());
    return nullptr;
  }
  for (int node = 0; node < kNodes; ++node) {
    absl::StatusOr<v1::RegisterWorkerResponse> registered =
        (*scheduler)->fleet().RegisterWorker(NodeWorker(node));
    if (!registered.ok()) {
      state.SkipWithError(registered.status().ToString().c_str());
      return nullptr;
    }
    workers.push_back(registered->name());
  }
  for (int bystander = 0; bystander < bystanders; ++bystander) {
    absl::Status registered =
        (*scheduler)->fleet().RegisterWorker(NodeWorker(kNodes + bystander, 8)).status();
    if (!registered.ok()) {
      state.SkipWithError(registered.ToString().c_str());
      return nullptr;
    }
  }
  return *std::move(scheduler);
}

// A watcher that serializes each change as WatchSearch's stream would send it.
class SerializingObserver : public SearchObserver {
 public:
  void OnSearchChanged(const v1::WatchSearchResponse& change) override {
    bytes += static_cast<int64_t>(change.SerializeAsString().size());
  }
  void OnSchedulerShutdown() override {}
  int64_t bytes = 0;
};

// Probes of searches of size state.range(0), each watched by `watchers` observers.
void RunProbes(benchmark::State& state, int watchers) {
  const int level = static_cast<int>(state.range(0));
  const std::string path =
      absl::StrCat(std::getenv("TEST_TMPDIR") != nullptr ? std::getenv("TEST_TMPDIR") : "/tmp",
                   "/scheduler_benchmark_", level, ".db");
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  std::vector<std::string> workers;
  std::unique_ptr<Scheduler> scheduler = StartScheduler(state, path, workers);
  if (scheduler == nullptr) return;
  std::vector<v1::AcquireProbeRequest> acquires(kNodes);
  std::vector<v1::ReportProbeRequest> reports(kNodes);
  for (int node = 0; node < kNodes; ++node) {
    acquires[node].set_worker(workers[node]);
    reports[node].set_worker(workers[node]);
    *reports[node].mutable_result() = SimResult();
  }
  std::vector<SerializingObserver> observers(watchers);
  int64_t candidates = 0;
  auto create = [&] {
    absl::StatusOr<v1::Search> search = scheduler->CreateSearch(ExhaustiveSearch(level));
    if (!search.ok()) {
      state.SkipWithError(search.status().ToString().c_str());
      return;
    }
    candidates = search->candidates_size();
    for (SerializingObserver& observer : observers) {
      scheduler->Watch(search->name(), &observer).IgnoreError();
    }
  };
  create();
  for (auto _ : state) {
    // The first node's call leases the probe to the gang; the others' receive their shares.
    for (int node = 0; node < kNodes; ++node) {
      absl::StatusOr<std::optional<v1::ProbeAssignment>> assignment =
          scheduler->fleet().TryAcquireProbe(acquires[node]);
      if (node == 0 && assignment.ok() && !assignment->has_value()) {
        state.PauseTiming();
        create();
        state.ResumeTiming();
        assignment = scheduler->fleet().TryAcquireProbe(acquires[node]);
      }
      if (!assignment.ok() || !assignment->has_value()) {
        state.SkipWithError("no probe to lease");
        return;
      }
      acquires[node].set_last_probe((*assignment)->name());
      reports[node].set_probe((*assignment)->name());
    }
    for (int node = 0; node < kNodes; ++node) {
      if (!scheduler->fleet().ReportProbe(reports[node]).ok()) {
        state.SkipWithError("ReportProbe failed");
        return;
      }
    }
  }
  state.counters["candidates"] = benchmark::Counter(static_cast<double>(candidates));
  if (watchers > 0) {
    state.counters["watch_bytes_per_probe"] = benchmark::Counter(
        static_cast<double>(observers[0].bytes), benchmark::Counter::kAvgIterations);
  }
  scheduler->Shutdown();
  scheduler.reset();
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
}

// The periodic check (paratune-server runs it twice per heartbeat interval) of a search whose
// candidates are all queued, with `bystanders` workers that cannot host them besides.
void BM_CheckLeases(benchmark::State& state) {
  std::vector<std::string> workers;
  std::unique_ptr<Scheduler> scheduler =
      StartScheduler(state, ":memory:", workers, static_cast<int>(state.range(1)));
  if (scheduler == nullptr) return;
  absl::StatusOr<v1::Search> search =
      scheduler->CreateSearch(ExhaustiveSearch(static_cast<int>(state.range(0))));
  if (!search.ok()) {
    state.SkipWithError(search.status().ToString().c_str());
    return;
  }
  // The first check after creating the largest search costs about a second of CPU (malloc
  // dominates the profile); the loop times the periodic steady state.
  scheduler->CheckLeases();
  for (auto _ : state) scheduler->CheckLeases();
  state.counters["candidates"] = benchmark::Counter(static_cast<double>(search->candidates_size()));
}
BENCHMARK(BM_CheckLeases)
    ->ArgNames({"size", "bystanders"})
    ->ArgsProduct({{0, 1, 2}, {0, 126}})
    ->Unit(benchmark::kMicrosecond);

void BM_Probe(benchmark::State& state) { RunProbes(state, /*watchers=*/0); }
void BM_ProbeWatched(benchmark::State& state) {
  RunProbes(state, static_cast<int>(state.range(1)));
}
BENCHMARK(BM_Probe)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);
// Searches of each size with one watcher, and the largest with ten.
BENCHMARK(BM_ProbeWatched)
    ->ArgNames({"size", "watchers"})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Args({2, 1})
    ->Args({2, 10})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace paratune
