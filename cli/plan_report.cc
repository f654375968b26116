#include "cli/plan_report.h"

#include <map>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/report.h"
#include "cli/table.h"
#include "convert/estimate_convert.h"
#include "convert/search_text.h"
#include "convert/spec_convert.h"
#include "estimator/memory_model.h"

namespace paratune {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string Percent(double fraction) { return absl::StrFormat("%.1f%%", 100.0 * fraction); }

std::string GiB(double bytes) { return absl::StrFormat("%.2f GiB", bytes / kGiB); }

// A row of the memory map: everything but the micro-batch size.
using MapRowKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int>;  // tp cp pp vp recompute

MapRowKey RowKey(const ParallelDims& dims) {
  return {dims.tp, dims.cp, dims.pp, dims.virtual_pipeline, static_cast<int>(dims.recompute)};
}

// "peak 93.12 GiB on stage 3 = 117.0% of the 79.65 GiB capacity".
std::string PeakSentence(const MemoryEstimate& memory) {
  return absl::StrCat("peak ", GiB(memory.peak_bytes), " on stage ", memory.peak_stage, " = ",
                      Percent(memory.fraction_of_capacity), " of the ", GiB(memory.capacity_bytes),
                      " capacity");
}

std::string OutsideSearchSpace(SearchDimension dimension, const ParallelDims& dims,
                               const PlanOptions& options) {
  switch (dimension) {
    case SearchDimension::kMicroBatch:
      return absl::StrCat(
          "micro-batch size ", dims.micro_batch, " is not among the searched sizes (",
          absl::StrJoin(SearchedMicroBatchSizes(options), ", "), "); --micro_batches sets them");
    case SearchDimension::kVirtualPipeline:
      return absl::StrCat("virtual pipeline size ", dims.virtual_pipeline,
                          " is not among the searched sizes (",
                          absl::StrJoin(SearchedVirtualPipelineSizes(options), ", "),
                          "); --virtual_pipeline_sizes sets them");
    case SearchDimension::kRecompute: {
      std::vector<std::string> modes;
      for (Recompute mode : SearchedRecomputeModes(options)) modes.push_back(RecomputeName(mode));
      return absl::StrCat("recompute ", RecomputeName(dims.recompute),
                          " is not among the searched modes (", absl::StrJoin(modes, ", "),
                          "); --recompute_modes sets them");
    }
    case SearchDimension::kSequenceParallel:
      return absl::StrCat("sequence parallelism ", dims.sequence_parallel ? "on" : "off",
                          " with tp ", dims.tp,
                          ": plans use sequence parallelism exactly when tp > 1");
  }
  return "not searched";
}

}  // namespace

std::string FormatMemoryMap(const Plan& plan, const PlanOptions& options,
                            const ClusterSpec& cluster) {
  const std::vector<int64_t> micro_batch_sizes = SearchedMicroBatchSizes(options);
  const bool show_vp = SearchedVirtualPipelineSizes(options).size() > 1;
  const bool show_recompute = SearchedRecomputeModes(options).size() > 1;
  std::vector<Table::Column> columns = {{"tp", true}, {"cp", true}, {"pp", true}, {"dp", true}};
  if (show_vp) columns.push_back({"vp", true});
  if (show_recompute) columns.push_back({"recompute", false});
  for (int64_t size : micro_batch_sizes) columns.push_back({absl::StrCat("mbs ", size), true});

  // The map is in enumeration order, so each row's entries are consecutive.
  std::map<MapRowKey, std::map<int64_t, const MemoryMapEntry*>> rows;
  std::vector<MapRowKey> order;
  for (const MemoryMapEntry& entry : plan.memory_map) {
    const MapRowKey key = RowKey(entry.dims);
    if (rows.find(key) == rows.end()) order.push_back(key);
    rows[key][entry.dims.micro_batch] = &entry;
  }
  Table table(columns);
  for (const MapRowKey& key : order) {
    const ParallelDims& dims = rows[key].begin()->second->dims;
    std::vector<std::string> row = {absl::StrCat(dims.tp), absl::StrCat(dims.cp),
                                    absl::StrCat(dims.pp), absl::StrCat(dims.dp)};
    if (show_vp) row.push_back(absl::StrCat(dims.virtual_pipeline));
    if (show_recompute) row.push_back(RecomputeName(dims.recompute));
    for (int64_t size : micro_batch_sizes) {
      const auto cell = rows[key].find(size);
      if (cell == rows[key].end()) {
        row.push_back("-");
        continue;
      }
      row.push_back(absl::StrFormat("%.0f%% %s", 100.0 * cell->second->fraction_of_capacity,
                                    MemoryVerdictName(cell->second->verdict)));
    }
    table.AddRow(std::move(row));
  }
  return absl::StrCat("Memory map: estimated peak memory per GPU as a share of ",
                      GiB(static_cast<double>(cluster.gpu().memory_bytes)), " (SAFE below ",
                      Percent(options.memory.safe_fraction),
                      ", RISKY up to 100%, OOM above; - breaks a rule)\n", table.Render());
}

std::string FormatExplanation(const ConfigurationExplanation& explanation, const ParallelDims& dims,
                              const ModelSpec& model, const TrainingSpec& training,
                              const ClusterSpec& cluster, const PlanOptions& options,
                              const Plan& plan, int64_t shown) {
  std::string verdict;
  switch (explanation.outcome) {
    case PlanOutcome::kCandidate:
      verdict = absl::StrFormat(
          "a candidate: #%d of %d in predicted order, %.1f TFLOP/s per GPU predicted",
          explanation.rank + 1, plan.candidates.size(), explanation.predicted.model_tflops_per_gpu);
      if (explanation.rank >= shown) {
        absl::StrAppend(&verdict, "; beyond the ", shown, " the plan table shows (--limit)");
      }
      break;
    case PlanOutcome::kRejected:
      verdict =
          absl::StrCat("rejected by a validity rule: ",
                       DescribeRejection(explanation.rejection, model, training, cluster, dims));
      break;
    case PlanOutcome::kOutsideSearchSpace:
      verdict =
          absl::StrCat("not enumerated: ", OutsideSearchSpace(explanation.outside, dims, options));
      break;
    case PlanOutcome::kOutOfMemory:
      verdict = absl::StrCat("pruned, out of memory: ", PeakSentence(explanation.memory),
                             " (OOM above 100%)");
      break;
    case PlanOutcome::kRisky:
      verdict = absl::StrCat("pruned, RISKY: ", PeakSentence(explanation.memory),
                             ", at or above the ", Percent(options.memory.safe_fraction),
                             " SAFE threshold; --memory_policy=measure_risky (the default) keeps "
                             "RISKY configurations");
      break;
  }
  const ParallelConfig config = ParallelConfig::FromCheckedDims(dims);
  const v1::ParallelConfig config_proto = ParallelConfigToProto(config);
  std::string out = absl::StrCat(DescribeConfig(config_proto), ": ", verdict, "\n");
  if (!explanation.has_memory) return out;
  v1::EstimateResponse estimate;
  *estimate.mutable_memory() =
      MemoryEstimateToProto(explanation.memory, config, options.memory.safe_fraction);
  *estimate.mutable_performance() = PerformanceEstimateToProto(explanation.predicted);
  absl::StrAppend(&out, "\n", FormatEstimate(config_proto, estimate));
  return out;
}

}  // namespace paratune
