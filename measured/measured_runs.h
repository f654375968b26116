// The measured training runs of data/measured/, as estimator inputs with their measured step
// time, for fitting and validating the estimator.
#ifndef PARATUNE_MEASURED_MEASURED_RUNS_H_
#define PARATUNE_MEASURED_MEASURED_RUNS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "estimator/cluster_spec.h"
#include "estimator/model_spec.h"
#include "estimator/parallel_config.h"
#include "estimator/performance_fit.h"
#include "estimator/performance_parameters.h"
#include "estimator/training_spec.h"
#include "measured/csv_table.h"

namespace paratune {

// One row of a measured table. A row that did not complete (the held-out table's "dash"
// cells) has completed = false and no step time.
struct MeasuredRun {
  std::string dataset;  // file name, e.g. "nvidia_dgxc_h100.csv"
  std::string group;    // rows compared with each other, e.g. "TSUBAME 4.0 s=8192 32 GPUs"
  std::string model_name;
  // The stack and release that ran it where the table names one ("NeMo 25.11"); else empty.
  std::string software;
  int64_t line = 0;  // line in the file
  ModelSpec model;
  TrainingSpec training;
  ClusterSpec cluster;
  ParallelConfig config;
  bool completed = true;
  double step_seconds = 0;  // measured (or derived by the source from measured throughput)
  // Why the MoE fit and its error figures leave this row out, with the source that says so
  // (an MoE table's `excluded` cell: e.g. a regression its publisher reported); empty for a
  // row they count. A report still shows the row and the reason.
  std::string excluded_reason;
  // Peak memory per GPU the source measured, GiB (2^30 bytes); 0 where it gives none.
  double measured_memory_gib = 0;
};

// A table of data/measured/, which of its rows, and whether it calibrates the performance
// model.
struct MeasuredDataset {
  std::string file;
  bool in_fit = false;  // false for a held-out table
  // The table's fp8 rows (training with TrainingSpec::fp8) rather than its bf16 ones.
  bool fp8 = false;
};

// The five tables with throughput the bf16 parameters are fitted to and validated on, fit
// tables first, held-out table last. bf16 rows only.
std::vector<MeasuredDataset> MeasuredDatasets();

// The fp8 rows of nvidia_h100_fp8.csv: its Llama rows (precision FP8 or FP8-CS, FSDP rows
// left out), with fp8 training, bf16 gradients and the distributed optimizer. Held out: the
// fp8 parameters are fitted to FP8 rows of nvidia_dgxc_h100.csv (Fp8Datasets); the fp8
// throughput and memory verdicts of docs/estimator.md read it.
MeasuredDataset Fp8Dataset();

// The tables of fp8 runs: the FP8 rows of nvidia_dgxc_h100.csv (fit: the fp8 parameters of
// Hopper, with the bf16 ones fixed) and Fp8Dataset() (held out), in that order.
std::vector<MeasuredDataset> Fp8Datasets();

// The mixture-of-experts runs the MoE performance parameters are fitted to and validated on,
// all on DGX-H100: the fp8 rows of megatron_bridge_moe_h100.csv (NVIDIA's Megatron-Bridge
// performance summaries; every row of a paratune preset is fp8), then the fp8 and the bf16 rows
// of nvidia_dgxc_moe_h100.csv (NVIDIA's dgxc-benchmarking recipes: Llama 4 Maverick on 512
// H100), in the same column format. Apart from MeasuredDatasets(), so that the dense fit and its
// error do not move. A row whose `excluded` cell gives a reason is read with it
// (MeasuredRun::excluded_reason) and left out of the fit.
std::vector<MeasuredDataset> MoeDatasets();

// TorchTitan's own H100 benchmark (torchtitan_h100_202412.csv): Llama 3.1 with FSDP2 and TP,
// PP, CP, torch.compile and Float8, each row with measured tokens/s and peak memory, read with
// training.framework torchtitan and full data-parallel sharding. Its memory is held out
// (nothing in the memory model is fitted to it); its tokens/s fit the one TorchTitan
// performance field (TorchTitanFittedFields), docs/estimator.md giving each row's
// leave-one-series-out error.
MeasuredDataset TorchTitanDataset();

// Every selection of data/measured/ the readers above make, each once, in that order: a table
// whose bf16 and fp8 rows are read apart (nvidia_dgxc_h100.csv, nvidia_dgxc_moe_h100.csv) is
// two. What a replay of a published table loads.
std::vector<MeasuredDataset> AllMeasuredDatasets();

// A row of a measured table that its reader leaves out, and why.
struct SkippedRow {
  int64_t line = 0;  // line in the file
  std::string model_name;
  std::string reason;
};

// The rows of the MoE table of `dataset` (one of MoeDatasets()) in `directory` that
// LoadMeasuredRuns leaves out, in file order: models that are not presets, rows whose precision
// the source does not state, and rows of the other precision.
absl::StatusOr<std::vector<SkippedRow>> SkippedMoeRows(const std::string& directory,
                                                       const MeasuredDataset& dataset);

// The rows of `dataset` read from `directory`/`dataset.file`. Errors name the file, line and
// column (see CsvTable), or the row's line when its configuration breaks a validity rule.
absl::StatusOr<std::vector<MeasuredRun>> LoadMeasuredRuns(const std::string& directory,
                                                          const MeasuredDataset& dataset);

// The recompute of a table's "recompute" cell: none, selective or full (the run tables of the
// replay backend share the spelling).
absl::StatusOr<Recompute> RecomputeCell(const CsvTable& table, size_t row);

// Measured TFLOP/s per GPU of a completed run, with the estimator's model FLOPs.
double MeasuredTflopsPerGpu(const MeasuredRun& run);

// log(predicted / measured step time) of a completed run with `params`.
double LogResidual(const MeasuredRun& run, const PerformanceParameters& params);

// The completed runs as fit observations, each weighing 1 / (completed runs of its dataset
// and group), so that every series (e.g. one configuration weak-scaled over 8 sizes) counts
// as one observation.
std::vector<PerformanceObservation> FitObservations(const std::vector<MeasuredRun>& runs);

}  // namespace paratune

#endif  // PARATUNE_MEASURED_MEASURED_RUNS_H_
