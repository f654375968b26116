#include "worker/replay_table.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "measured/csv_table.h"
#include "measured/measured_runs.h"

namespace paratune {
namespace {

constexpr int kMaxTablesPerKind = 16;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Every value a replay matches on. Sequence parallelism only exists with tp > 1, so tp = 1
// runs match whatever the flag says. The experts (dimensions, routing switches, ep and the
// resolved etp) are part of it: a mixture-of-experts run never answers for a dense model of
// the same attention and width, nor for another expert layout.
std::string Key(const ResolvedConfiguration& configuration) {
  const ModelDimensions& m = configuration.model.dims();
  const GpuSpec& g = configuration.cluster.gpu();
  const TrainingOptions& t = configuration.training.options();
  const ParallelDims& p = configuration.config.dims();
  const MoeDimensions& e = m.moe;
  return absl::StrCat(
      "h", m.hidden_size, " f", m.ffn_hidden_size, " L", m.num_layers, " a", m.num_attention_heads,
      " k", m.num_kv_heads, " V", m.vocab_size, " tied", m.tied_embeddings, " gated", m.gated_mlp,
      " d", configuration.model.head_dim(), " E", e.num_experts, " topk", e.router_top_k, " fe",
      e.expert_ffn_hidden_size, " S", e.num_shared_experts, " fs", e.shared_expert_ffn_hidden_size,
      " step", e.layer_step, " dense", e.first_dense_layers, " score",
      static_cast<int>(e.router_score), "|", g.name, " ", g.memory_bytes, " ", g.peak_bf16_tflops,
      " ", g.hbm_bandwidth_gbps, " ", g.nvlink_bandwidth_gbps, " ", g.network_bandwidth_gbps, "|",
      configuration.cluster.num_nodes(), "x", configuration.cluster.gpus_per_node(), "|gbs",
      t.global_batch_size, " s", t.seq_len, " fp8", t.fp8, " distopt", t.distributed_optimizer,
      " fp32grad", t.fp32_gradients, " fa", t.flash_attention, " capacity", t.moe_capacity_factor,
      " dispatcher", static_cast<int>(t.moe_token_dispatcher), " grouped", t.moe_grouped_gemm,
      " epoverlap", t.moe_expert_parallel_overlap, " sharedoverlap", t.moe_shared_expert_overlap,
      "|dp", p.dp, " tp", p.tp, " pp", p.pp, " cp", p.cp, " mbs", p.micro_batch, " vp",
      p.virtual_pipeline, " sp", p.sequence_parallel && p.tp > 1, " rc",
      static_cast<int>(p.recompute), " ep", p.ep, " etp", configuration.config.etp(), " sharding",
      static_cast<int>(p.dp_sharding), " group", p.dp_shard_group, " framework",
      static_cast<int>(t.framework));
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string Directory(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

absl::Status WithField(const std::string& field, const std::string& value,
                       const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(field, " (\"", value, "\"): ", status.message()));
}

// One row of a run table (docs/backends.md, "Run tables").
absl::StatusOr<std::pair<ResolvedConfiguration, ReplayedRun>> ParseRunRow(const CsvTable& table,
                                                                          size_t row) {
  const std::string where = absl::StrCat(table.path(), ":", table.line(row), ": ");
  PT_ASSIGN_OR_RETURN(const std::string model_name, table.String(row, "model"));
  absl::StatusOr<ModelSpec> model = FindModelPreset(model_name);
  if (!model.ok()) return table.InvalidCell(row, "model", model.status().message());
  PT_ASSIGN_OR_RETURN(const std::string gpu_name, table.String(row, "gpu"));
  absl::StatusOr<GpuSpec> gpu = FindGpuPreset(gpu_name);
  if (!gpu.ok()) return table.InvalidCell(row, "gpu", gpu.status().message());
  PT_ASSIGN_OR_RETURN(const int64_t nodes, table.Int(row, "num_nodes"));
  PT_ASSIGN_OR_RETURN(const int64_t per_node, table.Int(row, "gpus_per_node"));
  absl::StatusOr<ClusterSpec> cluster = ClusterSpec::Create(*gpu, nodes, per_node);
  if (!cluster.ok())
    return absl::InvalidArgumentError(absl::StrCat(where, cluster.status().message()));
  TrainingOptions training_options;
  PT_ASSIGN_OR_RETURN(training_options.global_batch_size, table.Int(row, "global_batch_size"));
  PT_ASSIGN_OR_RETURN(training_options.seq_len, table.Int(row, "seq_len"));
  absl::StatusOr<TrainingSpec> training = TrainingSpec::Create(training_options);
  if (!training.ok())
    return absl::InvalidArgumentError(absl::StrCat(where, training.status().message()));
  ParallelDims dims;
  PT_ASSIGN_OR_RETURN(dims.dp, table.Int(row, "dp"));
  PT_ASSIGN_OR_RETURN(dims.tp, table.Int(row, "tp"));
  PT_ASSIGN_OR_RETURN(dims.pp, table.Int(row, "pp"));
  PT_ASSIGN_OR_RETURN(dims.cp, table.Int(row, "cp"));
  PT_ASSIGN_OR_RETURN(dims.micro_batch, table.Int(row, "micro_batch_size"));
  PT_ASSIGN_OR_RETURN(dims.virtual_pipeline, table.Int(row, "virtual_pipeline"));
  PT_ASSIGN_OR_RETURN(dims.sequence_parallel, table.Bool(row, "sequence_parallel"));
  PT_ASSIGN_OR_RETURN(dims.recompute, RecomputeCell(table, row));
  // The run happened, so whatever placement and split it used was possible.
  PlacementRules rules;
  rules.allow_tp_cp_across_nodes = true;
  rules.allow_uneven_pipeline = true;
  absl::StatusOr<ParallelConfig> config =
      ParallelConfig::Create(*model, *training, *cluster, rules, dims);
  if (!config.ok())
    return absl::InvalidArgumentError(absl::StrCat(where, config.status().message()));

  ReplayedRun run;
  PT_ASSIGN_OR_RETURN(const std::string outcome, table.String(row, "outcome"));
  PT_ASSIGN_OR_RETURN(const std::string step_time, table.String(row, "step_time_s"));
  if (outcome == "ok") {
    run.outcome = ReplayedRun::Outcome::kCompleted;
    PT_ASSIGN_OR_RETURN(run.step_seconds, table.Double(row, "step_time_s"));
    if (!std::isfinite(run.step_seconds) || run.step_seconds <= 0) {
      return table.InvalidCell(row, "step_time_s",
                               absl::StrCat(run.step_seconds, " must be > 0 for an ok run"));
    }
  } else if (outcome == "out_of_memory") {
    run.outcome = ReplayedRun::Outcome::kOutOfMemory;
    if (!step_time.empty()) {
      return table.InvalidCell(
          row, "step_time_s",
          absl::StrCat("\"", step_time, "\" must be empty for an out_of_memory run"));
    }
  } else {
    return table.InvalidCell(row, "outcome",
                             absl::StrCat("\"", outcome, "\" is not ok or out_of_memory"));
  }
  PT_ASSIGN_OR_RETURN(const std::string peak, table.String(row, "peak_memory_gib"));
  if (!peak.empty()) {
    PT_ASSIGN_OR_RETURN(const double peak_gib, table.Double(row, "peak_memory_gib"));
    if (!std::isfinite(peak_gib) || peak_gib <= 0) {
      return table.InvalidCell(row, "peak_memory_gib",
                               absl::StrCat(peak_gib, " must be > 0, or empty when not measured"));
    }
    run.peak_memory_bytes = static_cast<int64_t>(peak_gib * kGiB);
  }
  PT_ASSIGN_OR_RETURN(const std::string source, table.String(row, "source"));
  if (source.empty()) {
    return table.InvalidCell(row, "source", "empty; say where the measurement comes from");
  }
  run.source = absl::StrCat(BaseName(table.path()), ":", table.line(row), " (", source, ")");
  return std::make_pair(ResolvedConfiguration{*model, *training, *cluster, *config},
                        std::move(run));
}

// The selections measured/measured_runs reads of the table at `path` (its bf16 and fp8 rows
// may be two).
absl::StatusOr<std::vector<MeasuredDataset>> PublishedDatasets(const std::string& path) {
  std::vector<MeasuredDataset> found;
  std::vector<std::string> known;
  for (const MeasuredDataset& dataset : AllMeasuredDatasets()) {
    if (dataset.file == BaseName(path)) found.push_back(dataset);
    if (known.empty() || known.back() != dataset.file) known.push_back(dataset.file);
  }
  if (!found.empty()) return found;
  return absl::InvalidArgumentError(absl::StrCat(
      "not a table measured/measured_runs reads; known file names: ", absl::StrJoin(known, ", ")));
}

}  // namespace

absl::StatusOr<ReplayTable> ReplayTable::Load(const v1::ReplayConfig& config) {
  if (config.published_tables_size() + config.run_tables_size() == 0) {
    return absl::InvalidArgumentError(
        "replay (no tables) must list published_tables or run_tables for the replay backend");
  }
  if (config.published_tables_size() > kMaxTablesPerKind ||
      config.run_tables_size() > kMaxTablesPerKind) {
    return absl::InvalidArgumentError(absl::StrCat(
        "replay (", config.published_tables_size(), " published_tables, ", config.run_tables_size(),
        " run_tables) may list at most ", kMaxTablesPerKind, " of each"));
  }
  ReplayTable table;
  std::vector<std::string> names;
  int64_t count = 0;
  for (int i = 0; i < config.published_tables_size(); ++i) {
    const std::string& path = config.published_tables(i);
    const std::string field = absl::StrCat("replay.published_tables[", i, "]");
    absl::StatusOr<std::vector<MeasuredDataset>> datasets = PublishedDatasets(path);
    if (!datasets.ok()) return WithField(field, path, datasets.status());
    for (const MeasuredDataset& dataset : *datasets) {
      absl::StatusOr<std::vector<MeasuredRun>> runs = LoadMeasuredRuns(Directory(path), dataset);
      if (!runs.ok()) return WithField(field, path, runs.status());
      for (const MeasuredRun& measured : *runs) {
        ReplayedRun run;
        run.outcome =
            measured.completed ? ReplayedRun::Outcome::kCompleted : ReplayedRun::Outcome::kNoResult;
        run.step_seconds = measured.step_seconds;
        // The row, and the release that ran it where the table names one.
        const std::string run_by = measured.software.empty()
                                       ? measured.group
                                       : absl::StrCat(measured.model_name, " ", measured.software);
        run.source = absl::StrCat(dataset.file, ":", measured.line, " (", run_by, ")");
        table.Add(ResolvedConfiguration{measured.model, measured.training, measured.cluster,
                                        measured.config},
                  std::move(run));
        ++count;
      }
    }
    names.push_back(BaseName(path));
  }
  for (int i = 0; i < config.run_tables_size(); ++i) {
    const std::string& path = config.run_tables(i);
    const std::string field = absl::StrCat("replay.run_tables[", i, "]");
    absl::StatusOr<CsvTable> csv = CsvTable::Load(path);
    if (!csv.ok()) return WithField(field, path, csv.status());
    for (size_t row = 0; row < csv->num_rows(); ++row) {
      absl::StatusOr<std::pair<ResolvedConfiguration, ReplayedRun>> run = ParseRunRow(*csv, row);
      if (!run.ok()) return WithField(field, path, run.status());
      table.Add(run->first, std::move(run->second));
      ++count;
    }
    names.push_back(BaseName(path));
  }
  table.summary_ =
      absl::StrCat(count, " runs in ", names.size(), names.size() == 1 ? " table (" : " tables (",
                   absl::StrJoin(names, ", "), ")");
  return table;
}

void ReplayTable::Add(const ResolvedConfiguration& configuration, ReplayedRun run) {
  runs_[Key(configuration)].push_back(std::move(run));
}

const std::vector<ReplayedRun>& ReplayTable::Find(
    const ResolvedConfiguration& configuration) const {
  static const std::vector<ReplayedRun>* const kNone = new std::vector<ReplayedRun>();
  auto it = runs_.find(Key(configuration));
  return it == runs_.end() ? *kNone : it->second;
}

}  // namespace paratune
