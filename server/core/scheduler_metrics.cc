#include "server/core/scheduler_metrics.h"

#include <string>

#include "metrics/enum_label.h"

namespace paratune {
namespace {

using metrics::EnumLabel;
using metrics::MetricDescriptor;
using metrics::MetricFamily;
using metrics::MetricType;
using metrics::Sample;

constexpr double kFlopsPerTflop = 1e12;

// Describe() and Collect() index the same list.
enum Family {
  kSearches,
  kSearchesCreated,
  kSearchesEnded,
  kCandidatesEnumerated,
  kCandidatesSelected,
  kCandidatesPruned,
  kProbeResults,
  kProbeGpuSeconds,
  kProbesQueued,
  kProbesRunning,
  kWorkers,
  kGpus,
  kSearchCandidates,
  kSearchProjectedSeconds,
  kSearchProjectedGpuSeconds,
  kSearchGpuSeconds,
  kBestThroughput,
  kBestInfo,
};

const std::vector<MetricDescriptor>& Descriptors() {
  static const auto* const descriptors = new std::vector<MetricDescriptor>{
      {"paratune_searches",
       "Searches that have not ended, by state.",
       MetricType::kGauge,
       {"state"}},
      {"paratune_searches_created_total", "Searches created.", MetricType::kCounter, {}},
      {"paratune_searches_ended_total",
       "Searches ended, by final state.",
       MetricType::kCounter,
       {"state"}},
      {"paratune_candidates_enumerated_total",
       "Parallel configurations enumerated by planning searches.",
       MetricType::kCounter,
       {}},
      {"paratune_candidates_selected_total",
       "Configurations selected for probing.",
       MetricType::kCounter,
       {}},
      {"paratune_candidates_pruned_total",
       "Enumerated configurations not probed, by reason: invalid (validity rules), "
       "out_of_memory and risky (memory estimate), not_selected (search policy).",
       MetricType::kCounter,
       {"reason"}},
      {"paratune_probe_results_total",
       "Final probe results recorded for candidates, by backend and outcome. A probe retried "
       "after an infrastructure error counts once, with its last outcome.",
       MetricType::kCounter,
       {"backend", "outcome"}},
      {"paratune_probe_gpu_seconds_total",
       "Wall seconds x GPUs of the probes that finished, as their workers reported them.",
       MetricType::kCounter,
       {}},
      {"paratune_probes_queued", "Probes waiting for a worker.", MetricType::kGauge, {}},
      {"paratune_probes_running", "Probes leased to a worker.", MetricType::kGauge, {}},
      {"paratune_workers", "Registered workers, by state.", MetricType::kGauge, {"state"}},
      {"paratune_gpus",
       "GPUs of registered workers, by worker state.",
       MetricType::kGauge,
       {"state"}},
      // The per-search families cover the searches that have not ended and the last
      // kEndedSearchSummariesKept that ended (server/core/search_summary.h).
      {"paratune_search_candidates",
       "Progress of each search (Search.progress, as paratune get, list and watch and the "
       "console show it): candidates probed, of those ok and failed, those that could still "
       "win (waiting, running or still eligible to be picked; 0 once ended), those waiting for "
       "workers, and the total memory lets it probe.",
       MetricType::kGauge,
       {"search", "progress"}},
      {"paratune_search_projected_remaining_seconds",
       "Predicted probe durations of the candidates each running search may still pick, one "
       "after another; queued and running probes not included. A projection, not a bound.",
       MetricType::kGauge,
       {"search"}},
      {"paratune_search_projected_remaining_gpu_seconds",
       "The same projection in seconds x GPUs: what finishing the search is predicted to cost.",
       MetricType::kGauge,
       {"search"}},
      {"paratune_search_probe_gpu_seconds_total",
       "Wall seconds x GPUs of each search's finished probes (for the sim, the "
       "real-equivalent cost).",
       MetricType::kCounter,
       {"search"}},
      {"paratune_search_best_flops_per_second_per_gpu",
       "Best model FLOP/s per GPU of each search (DESIGN.md 5.3 convention), by where the "
       "number comes from: simulated, replayed, extrapolated or measured; absent until a "
       "probe of the search succeeded.",
       MetricType::kGauge,
       {"search", "source"}},
      {"paratune_search_best_info",
       "Always 1: the configuration with the best model FLOP/s per GPU of each search, and "
       "where its number comes from.",
       MetricType::kGauge,
       {"search", "config", "source"}},
  };
  return *descriptors;
}

}  // namespace

std::vector<MetricDescriptor> SchedulerMetrics::Describe() const { return Descriptors(); }

std::vector<MetricFamily> SchedulerMetrics::Collect() const {
  const SchedulerStats stats = stats_();
  std::vector<MetricFamily> families;
  for (const MetricDescriptor& descriptor : Descriptors()) families.push_back({descriptor, {}});
  auto add = [&](Family family, std::vector<std::string> labels, double value) {
    families[family].samples.push_back(Sample{std::move(labels), value});
  };
  auto count = [](const auto& map, const auto& key) {
    auto it = map.find(key);
    return it == map.end() ? 0.0 : static_cast<double>(it->second);
  };
  // Every state and reason is exported, at zero too: alerts and rates need the series.
  for (v1::SearchState state : {v1::PENDING, v1::PLANNING, v1::PROBING}) {
    add(kSearches, {EnumLabel(v1::SearchState_Name(state))}, count(stats.active_searches, state));
  }
  const SearchTotals& totals = stats.totals;
  add(kSearchesCreated, {}, totals.searches_created);
  for (v1::SearchState state : {v1::SUCCEEDED, v1::FAILED, v1::CANCELLED}) {
    add(kSearchesEnded, {EnumLabel(v1::SearchState_Name(state))},
        count(totals.searches_ended, state));
  }
  add(kCandidatesEnumerated, {}, totals.candidates_enumerated);
  add(kCandidatesSelected, {}, totals.candidates_selected);
  for (const char* reason :
       {kPrunedInvalid, kPrunedOutOfMemory, kPrunedRisky, kPrunedNotSelected}) {
    add(kCandidatesPruned, {reason}, count(totals.candidates_pruned, reason));
  }
  for (const auto& [key, results] : totals.probe_results) {
    add(kProbeResults, {key.first, EnumLabel(v1::ProbeOutcome_Name(key.second), "PROBE_")},
        results);
  }
  add(kProbeGpuSeconds, {}, totals.probe_gpu_seconds);
  add(kProbesQueued, {}, stats.queued_probes);
  add(kProbesRunning, {}, stats.running_probes);
  for (v1::WorkerState state : {v1::WORKER_IDLE, v1::WORKER_BUSY, v1::WORKER_LOST}) {
    const std::string label = EnumLabel(v1::WorkerState_Name(state), "WORKER_");
    add(kWorkers, {label}, count(stats.workers, state));
    add(kGpus, {label}, count(stats.worker_gpus, state));
  }
  for (const SearchSummary& search : stats.searches) {
    const v1::SearchProgress& progress = search.progress;
    add(kSearchCandidates, {search.name, "probed"}, progress.probed());
    add(kSearchCandidates, {search.name, "ok"}, progress.ok());
    add(kSearchCandidates, {search.name, "failed"}, progress.failed());
    add(kSearchCandidates, {search.name, "could_still_win"}, progress.could_still_win());
    add(kSearchCandidates, {search.name, "waiting"}, progress.waiting());
    add(kSearchCandidates, {search.name, "total"}, progress.candidates());
    if (search.projected_remaining_seconds.has_value()) {
      add(kSearchProjectedSeconds, {search.name}, *search.projected_remaining_seconds);
    }
    if (search.projected_remaining_gpu_seconds.has_value()) {
      add(kSearchProjectedGpuSeconds, {search.name}, *search.projected_remaining_gpu_seconds);
    }
    add(kSearchGpuSeconds, {search.name}, search.gpu_seconds);
    if (search.best.has_value()) {
      add(kBestThroughput, {search.name, search.best->source},
          search.best->tflops_per_gpu * kFlopsPerTflop);
      add(kBestInfo, {search.name, search.best->config, search.best->source}, 1);
    }
  }
  return families;
}

}  // namespace paratune
