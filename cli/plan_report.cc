#include "cli/plan_report.h"

#include <algorithm>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "cli/report.h"
#include "cli/table.h"
#include "cli/terminal.h"
#include "convert/estimate_convert.h"
#include "convert/search_text.h"
#include "convert/spec_convert.h"
#include "estimator/memory_model.h"

namespace paratune {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string Percent(double fraction) { return absl::StrFormat("%.1f%%", 100.0 * fraction); }

std::string GiB(double bytes) { return absl::StrFormat("%.2f GiB", bytes / kGiB); }

// The colour of a memory verdict in the map.
Color VerdictColor(v1::MemoryVerdict verdict) {
  switch (verdict) {
    case v1::SAFE:
      return Color::kGreen;
    case v1::RISKY:
      return Color::kYellow;
    default:
      return Color::kRed;
  }
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

std::string FormatMemoryMap(const v1::MemoryMap& map, bool color) {
  const bool show_vp = map.virtual_pipeline_sizes_size() > 1;
  const bool show_recompute = map.recompute_modes_size() > 1;
  std::vector<Table::Column> columns = {{"tp", true}, {"cp", true}, {"pp", true}, {"dp", true}};
  if (show_vp) columns.push_back({"vp", true});
  if (show_recompute) columns.push_back({"recompute", false});
  for (int64_t size : map.micro_batch_sizes()) {
    columns.push_back({absl::StrCat("mbs ", size), true});
  }
  Table table(columns);
  for (const v1::MemoryMapRow& map_row : map.rows()) {
    const v1::ParallelConfig& shape = map_row.shape();
    std::vector<std::string> row = {
        absl::StrCat(shape.tensor_parallel()), absl::StrCat(shape.context_parallel()),
        absl::StrCat(shape.pipeline_parallel()), absl::StrCat(shape.data_parallel())};
    if (show_vp) row.push_back(absl::StrCat(std::max<int64_t>(shape.virtual_pipeline(), 1)));
    if (show_recompute) {
      row.push_back(absl::AsciiStrToLower(
          absl::StripPrefix(v1::Recompute_Name(shape.recompute()), "RECOMPUTE_")));
    }
    // Cells are ascending by micro-batch size, as the columns.
    int cell = 0;
    for (int64_t size : map.micro_batch_sizes()) {
      if (cell >= map_row.cells_size() || map_row.cells(cell).micro_batch_size() != size) {
        row.push_back(Colored("-", Color::kDim, color));
        continue;
      }
      const v1::MemoryMapCell& entry = map_row.cells(cell++);
      row.push_back(Colored(absl::StrFormat("%.0f%% %s", 100.0 * entry.fraction_of_capacity(),
                                            VerdictName(entry.verdict())),
                            VerdictColor(entry.verdict()), color));
    }
    table.AddRow(std::move(row));
  }
  std::string out = absl::StrCat(
      "Memory map: estimated peak memory per GPU as a share of ",
      GiB(static_cast<double>(map.capacity_bytes())), " (", Colored("SAFE", Color::kGreen, color),
      " below ", Percent(map.safe_fraction()), ", ", Colored("RISKY", Color::kYellow, color),
      " up to 100%, ", Colored("OOM", Color::kRed, color), " above; - breaks a rule)\n",
      table.Render());
  if (map.rows_size() < map.total_rows()) {
    absl::StrAppendFormat(&out,
                          "(%d of %d rows shown: those holding the best predicted candidates; "
                          "--limit=0 shows all)\n",
                          map.rows_size(), map.total_rows());
  }
  return out;
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
