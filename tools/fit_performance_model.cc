// Fits the performance model's parameters per GPU architecture to the measured tables of
// data/measured/ (the held-out tables excluded) and prints them as C++, or writes them into
// estimator/performance_parameters.cc between its FITTED-PARAMETERS markers. The bf16 fields
// are fitted to the bf16 tables (MeasuredDatasets), then Hopper's fp8 fields to the fp8 fit
// table (Fp8Datasets) with the bf16 fields fixed, so that no bf16 prediction depends on fp8
// data, then Hopper's mixture-of-experts fields to the MoE table (MoeDatasets) with all the
// others fixed, so that no dense prediction depends on MoE data, then Hopper's TorchTitan
// fields to TorchTitan's benchmark (TorchTitanDataset) with all the others fixed:
//
//   bazel run //tools:fit_performance_model --
//       --update=$PWD/estimator/performance_parameters.cc
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "common/command_line.h"
#include "common/status_macros.h"
#include "estimator/performance_fit.h"
#include "estimator/performance_parameters.h"
#include "measured/measured_runs.h"
#include "tools/validation_stats.h"

ABSL_FLAG(std::string, data_dir, "data/measured", "Directory of the measured CSV tables.");
ABSL_FLAG(std::string, update, "",
          "If set, the performance_parameters.cc whose fitted block is replaced.");

namespace paratune {
namespace {

constexpr char kBegin[] = "  // FITTED-PARAMETERS-BEGIN\n";
constexpr char kEnd[] = "  // FITTED-PARAMETERS-END\n";

// The fields of one stage fitted after those before it, which stay fixed: fitted to `runs` runs
// (Hopper), or their priors with Hopper's spread as the error bar (fitted = false).
struct StageFit {
  FitResult fit;
  bool fitted = false;
  double spread = 0;
  size_t runs = 0;
};

struct ArchitectureFit {
  const char* enumerator;
  FitResult fit;
  double relative_error;
  // The fp8 fields: fitted (Hopper), or set from the bf16 ones (Ampere, fitted = false).
  FitResult fp8_fit;
  bool fp8_fitted = false;
  double fp8_cross_validated_spread = 0;
  // The alternative not taken: fp8_cast_hbm_efficiency fitted too.
  FitResult fp8_cast_fit;
  double fp8_cast_cross_validated_spread = 0;
  // The mixture-of-experts fields, the flex dispatcher's and TorchTitan's (StageFit).
  StageFit moe;
  StageFit flex;
  StageFit torchtitan;
};

// The error bar of PerformanceParameters::relative_error, by leave-one-series-out
// cross-validation so that it measures how the model generalises, not how well it fits: each
// series (one configuration of one table, weak-scaled or not) is predicted by the parameters
// fitted to all the others, reduced to its mean log residual, and the spread of those about
// their own table's mean is pooled over the tables. Removing each table's mean is what a refit
// on a search's own probes does to a new cluster's common bias; what remains is the error in
// comparing configurations with each other.
absl::StatusOr<double> RelativeError(const std::vector<MeasuredRun>& runs,
                                     const PerformanceParameters& start,
                                     const FitOptions& options) {
  std::map<std::pair<std::string, std::string>, std::vector<const MeasuredRun*>> series;
  for (const MeasuredRun& run : runs) {
    if (run.completed) series[{run.dataset, run.group}].push_back(&run);
  }
  std::map<std::string, std::vector<double>> series_means_by_table;
  for (const auto& [key, members] : series) {
    std::vector<MeasuredRun> others;
    for (const MeasuredRun& run : runs) {
      if (!(run.dataset == key.first && run.group == key.second)) others.push_back(run);
    }
    PT_ASSIGN_OR_RETURN(const FitResult fit,
                        FitPerformanceParameters(FitObservations(others), start, options));
    double sum = 0;
    for (const MeasuredRun* run : members) sum += LogResidual(*run, fit.params);
    series_means_by_table[key.first].push_back(sum / members.size());
  }
  std::vector<std::vector<double>> groups;
  for (auto& [table, means] : series_means_by_table) groups.push_back(std::move(means));
  return PooledStandardDeviation(groups);
}

// A fit of `options.fields` to `runs` from `start`, and the fit's leave-one-series-out spread
// (RelativeError): every fit the block reports is both.
struct CrossValidatedFit {
  FitResult fit;
  double spread = 0;
};

absl::StatusOr<CrossValidatedFit> FitAndCrossValidate(const std::vector<MeasuredRun>& runs,
                                                      const PerformanceParameters& start,
                                                      const FitOptions& options) {
  CrossValidatedFit result;
  PT_ASSIGN_OR_RETURN(result.fit, FitPerformanceParameters(FitObservations(runs), start, options));
  PT_ASSIGN_OR_RETURN(result.spread, RelativeError(runs, start, options));
  return result;
}

// A stage's lines of the block: what it was fitted to (`fitted_to`) with its fit's figures, or
// that it keeps its priors (`unfitted`, "... as the error bar" follows), then its fields and its
// error bar, `spread_field`.
void AppendStage(const StageFit& stage, const std::string& fitted_to, absl::string_view unfitted,
                 const std::vector<FittedField>& fields, absl::string_view spread_field,
                 std::string* out) {
  if (stage.fitted) {
    absl::StrAppendFormat(out,
                          "      // %s\n"
                          "      // with the fields above fixed: RMS log error %.4f -> %.4f in %d "
                          "sweeps;\n"
                          "      // leave-one-series-out spread %.4f.\n",
                          fitted_to, std::sqrt(stage.fit.objective_start), stage.fit.rms_log_error,
                          stage.fit.sweeps, stage.spread);
  } else {
    absl::StrAppend(out, "      // ", unfitted, "\n      // as the error bar.\n");
  }
  for (const FittedField& field : fields) {
    absl::StrAppendFormat(out, "      params.%s = %.6g;\n", field.name,
                          stage.fit.params.*field.field);
  }
  absl::StrAppendFormat(out, "      params.%s = %.4f;\n", spread_field, stage.spread);
}

std::string FittedBlock(const std::vector<ArchitectureFit>& fits) {
  std::string out = kBegin;
  absl::StrAppend(&out,
                  "  // Produced by `bazel run //tools:fit_performance_model --\n"
                  "  //     --update=$PWD/estimator/performance_parameters.cc` from\n"
                  "  // data/measured/ (held-out llama31_8b_4d_abci_tsubame.csv and\n"
                  "  // nvidia_h100_fp8.csv excluded).\n"
                  "  switch (architecture) {\n");
  for (const ArchitectureFit& fit : fits) {
    absl::StrAppend(&out, "    case GpuArchitecture::", fit.enumerator, ":\n");
    absl::StrAppendFormat(&out, "      // RMS log error %.4f -> %.4f in %d sweeps.\n",
                          std::sqrt(fit.fit.objective_start), fit.fit.rms_log_error,
                          fit.fit.sweeps);
    for (const FittedField& field : FittedFields()) {
      absl::StrAppendFormat(&out, "      params.%s = %.6g;\n", field.name,
                            fit.fit.params.*field.field);
    }
    absl::StrAppendFormat(&out, "      params.relative_error = %.4f;\n", fit.relative_error);
    if (fit.fp8_fitted) {
      absl::StrAppendFormat(
          &out,
          "      // fp8, the FP8 rows of nvidia_dgxc_h100.csv with the fields above fixed: RMS\n"
          "      // log error %.4f -> %.4f in %d sweeps; leave-one-series-out spread %.4f\n"
          "      // (fitting fp8_cast_hbm_efficiency too: %.4g, RMS %.4f, spread %.4f).\n",
          std::sqrt(fit.fp8_fit.objective_start), fit.fp8_fit.rms_log_error, fit.fp8_fit.sweeps,
          fit.fp8_cross_validated_spread, fit.fp8_cast_fit.params.fp8_cast_hbm_efficiency,
          fit.fp8_cast_fit.rms_log_error, fit.fp8_cast_cross_validated_spread);
    } else {
      absl::StrAppend(
          &out,
          "      // No fp8 tensor cores: the fp8 linears run as bf16 GEMMs (fp8 peak =\n"
          "      // bf16 peak, the bf16 GEMM efficiency) plus the casts. Not fitted.\n");
    }
    for (const FittedField& field : Fp8FittedFields()) {
      absl::StrAppendFormat(&out, "      params.%s = %.6g;\n", field.name,
                            fit.fp8_fit.params.*field.field);
    }
    AppendStage(fit.moe,
                absl::StrCat("Mixture-of-experts, the ", fit.moe.runs,
                             " all-to-all runs of the MoE tables (MoeDatasets)"),
                "No mixture-of-experts runs on this architecture: the priors, and Hopper's "
                "spread",
                MoeFittedFields(), "moe_relative_error", &out);
    AppendStage(fit.flex,
                absl::StrCat("The flex dispatcher, the ", fit.flex.runs,
                             " flex runs of the MoE tables (two layouts)"),
                "No flex-dispatcher runs on this architecture: the prior, and Hopper's spread",
                FlexFittedFields(), "flex_relative_error", &out);
    AppendStage(fit.torchtitan,
                absl::StrCat("TorchTitan, the ", fit.torchtitan.runs,
                             " runs of torchtitan_h100_202412.csv"),
                "No TorchTitan runs on this architecture: the prior, and Hopper's spread",
                TorchTitanFittedFields(), "torchtitan_relative_error", &out);
    absl::StrAppend(&out, "      break;\n");
  }
  absl::StrAppend(&out, "  }\n", kEnd);
  return out;
}

absl::Status Update(const std::string& path, const std::string& block) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open the file"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  const size_t begin = text.find(kBegin);
  const size_t end = text.find(kEnd);
  if (begin == std::string::npos || end == std::string::npos || end < begin) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": no FITTED-PARAMETERS-BEGIN / -END markers"));
  }
  text.replace(begin, end + sizeof(kEnd) - 1 - begin, block);
  std::ofstream out(path);
  out << text;
  if (!out) return absl::InternalError(absl::StrCat(path, ": cannot write the file"));
  return absl::OkStatus();
}

// The runs of the fit tables of `datasets` that `keep` accepts, every one on a Hopper GPU
// (the fields they fit are Hopper's): INVALID_ARGUMENT naming a run on another GPU, `what`
// naming the fit.
template <typename Keep>
absl::StatusOr<std::vector<MeasuredRun>> HopperFitRuns(const std::vector<MeasuredDataset>& datasets,
                                                       const char* what, Keep keep) {
  std::vector<MeasuredRun> runs;
  for (const MeasuredDataset& dataset : datasets) {
    if (!dataset.in_fit) continue;
    PT_ASSIGN_OR_RETURN(std::vector<MeasuredRun> table,
                        LoadMeasuredRuns(absl::GetFlag(FLAGS_data_dir), dataset));
    for (MeasuredRun& run : table) {
      if (!keep(run)) continue;
      if (ArchitectureOf(run.cluster.gpu()) != GpuArchitecture::kHopper) {
        return absl::InvalidArgumentError(absl::StrCat(run.dataset, " line ", run.line, ": an ",
                                                       what, " fit run is not on a Hopper GPU"));
      }
      runs.push_back(std::move(run));
    }
  }
  return runs;
}

absl::Status Run() {
  std::map<GpuArchitecture, std::vector<MeasuredRun>> runs;
  for (const MeasuredDataset& dataset : MeasuredDatasets()) {
    if (!dataset.in_fit) continue;
    PT_ASSIGN_OR_RETURN(std::vector<MeasuredRun> table,
                        LoadMeasuredRuns(absl::GetFlag(FLAGS_data_dir), dataset));
    for (MeasuredRun& run : table) {
      runs[ArchitectureOf(run.cluster.gpu())].push_back(std::move(run));
    }
  }
  // A field that no run of an architecture depends on keeps its start value. No Ampere table
  // runs FlashAttention: its efficiency starts (and stays) at FlashAttention-2's on A100,
  // 50-73% of peak forward and backward (Dao 2023, arXiv 2307.08691), 0.6 on its count of
  // 3.5 forward FLOPs per forward + backward, 0.52 on ours of 3. No Hopper table runs without
  // FlashAttention: that efficiency starts (and stays) at Ampere's fitted share of peak.
  // The defaults of FitOptions, with sweeps enough to converge (milliseconds here).
  FitOptions options;
  options.max_sweeps = 10000;
  PerformanceParameters ampere_start;
  ampere_start.attention_efficiency = 0.52;
  PT_ASSIGN_OR_RETURN(const CrossValidatedFit ampere,
                      FitAndCrossValidate(runs[GpuArchitecture::kAmpere], ampere_start, options));
  PerformanceParameters hopper_start;
  hopper_start.unfused_attention_efficiency = ampere.fit.params.unfused_attention_efficiency;
  PT_ASSIGN_OR_RETURN(const CrossValidatedFit hopper,
                      FitAndCrossValidate(runs[GpuArchitecture::kHopper], hopper_start, options));
  // fp8: Hopper's fp8 GEMM efficiency and its half-efficiency size are fitted to the FP8
  // rows of nvidia_dgxc_h100.csv (Fp8Datasets' fit table) from the bf16 values just fitted,
  // which stay fixed. The casts' HBM efficiency keeps its start value (0.6, between the 39-46%
  // and 80% of HBM bandwidth Transformer Engine's cast-transpose kernels reach on H100, TE
  // pull requests #101 and #998): fitted as well, it falls to 0.24 and the leave-one-series-out
  // error of the fit rows grows (docs/estimator.md).
  PT_ASSIGN_OR_RETURN(const std::vector<MeasuredRun> fp8_runs,
                      HopperFitRuns(Fp8Datasets(), "fp8", [](const MeasuredRun&) { return true; }));
  FitOptions fp8_options = options;
  fp8_options.fields = {Fp8FittedFields()[0], Fp8FittedFields()[1]};
  PT_ASSIGN_OR_RETURN(const CrossValidatedFit hopper_fp8,
                      FitAndCrossValidate(fp8_runs, hopper.fit.params, fp8_options));
  FitOptions fp8_cast_options = options;
  fp8_cast_options.fields = Fp8FittedFields();
  PT_ASSIGN_OR_RETURN(const CrossValidatedFit hopper_fp8_cast,
                      FitAndCrossValidate(fp8_runs, hopper.fit.params, fp8_cast_options));
  // Ampere has no fp8 tensor cores (DensePeakTflops): its fp8 GEMMs are its bf16 GEMMs.
  FitResult ampere_fp8;
  ampere_fp8.params = ampere.fit.params;
  ampere_fp8.params.fp8_gemm_efficiency_max = ampere.fit.params.gemm_efficiency_max;
  ampere_fp8.params.fp8_gemm_half_efficiency_flops = ampere.fit.params.gemm_half_efficiency_flops;

  // Mixture-of-experts: Hopper's MoE fields, fitted to the all-to-all runs of the MoE table
  // from the dense and fp8 values just fitted, which stay fixed. Runs of Megatron-Bridge's
  // flex dispatcher (DeepEP, HybridEP) have their own fit below, and the rows the table
  // excludes with a cited reason (MeasuredRun::excluded_reason) are in neither.
  PT_ASSIGN_OR_RETURN(const std::vector<MeasuredRun> moe_runs,
                      HopperFitRuns(MoeDatasets(), "MoE", [](const MeasuredRun& run) {
                        return !IsFlexDispatcher(run.training.moe_token_dispatcher()) &&
                               run.excluded_reason.empty();
                      }));
  FitOptions moe_options = options;
  moe_options.fields = MoeFittedFields();
  PT_ASSIGN_OR_RETURN(const CrossValidatedFit hopper_moe,
                      FitAndCrossValidate(moe_runs, hopper_fp8.fit.params, moe_options));
  FitResult ampere_moe;
  ampere_moe.params = ampere_fp8.params;

  // The flex dispatcher: Hopper's flex field, fitted to the flex runs of the MoE table from
  // every value just fitted, which stay fixed, so that no all-to-all figure depends on them.
  PT_ASSIGN_OR_RETURN(const std::vector<MeasuredRun> flex_runs,
                      HopperFitRuns(MoeDatasets(), "flex", [](const MeasuredRun& run) {
                        return IsFlexDispatcher(run.training.moe_token_dispatcher()) &&
                               run.excluded_reason.empty();
                      }));
  FitOptions flex_options = options;
  flex_options.fields = FlexFittedFields();
  PT_ASSIGN_OR_RETURN(const CrossValidatedFit hopper_flex,
                      FitAndCrossValidate(flex_runs, hopper_moe.fit.params, flex_options));

  // TorchTitan: Hopper's TorchTitan fields, fitted to its own benchmark from every value just
  // fitted, which stay fixed.
  PT_ASSIGN_OR_RETURN(
      const std::vector<MeasuredRun> torchtitan_runs,
      HopperFitRuns({TorchTitanDataset()}, "TorchTitan", [](const MeasuredRun&) { return true; }));
  FitOptions torchtitan_options = options;
  torchtitan_options.fields = TorchTitanFittedFields();
  PT_ASSIGN_OR_RETURN(
      const CrossValidatedFit hopper_torchtitan,
      FitAndCrossValidate(torchtitan_runs, hopper_flex.fit.params, torchtitan_options));
  FitResult ampere_torchtitan;
  ampere_torchtitan.params = ampere_moe.params;

  ArchitectureFit ampere_fit{"kAmpere", ampere.fit, ampere.spread, ampere_fp8};
  ampere_fit.moe = StageFit{ampere_moe, false, hopper_moe.spread};
  ampere_fit.flex = StageFit{ampere_moe, false, hopper_flex.spread};
  ampere_fit.torchtitan = StageFit{ampere_torchtitan, false, hopper_torchtitan.spread};
  ArchitectureFit hopper_fit{"kHopper", hopper.fit, hopper.spread, hopper_fp8.fit};
  hopper_fit.fp8_fitted = true;
  hopper_fit.fp8_cross_validated_spread = hopper_fp8.spread;
  hopper_fit.fp8_cast_fit = hopper_fp8_cast.fit;
  hopper_fit.fp8_cast_cross_validated_spread = hopper_fp8_cast.spread;
  hopper_fit.moe = StageFit{hopper_moe.fit, true, hopper_moe.spread, moe_runs.size()};
  hopper_fit.flex = StageFit{hopper_flex.fit, true, hopper_flex.spread, flex_runs.size()};
  hopper_fit.torchtitan =
      StageFit{hopper_torchtitan.fit, true, hopper_torchtitan.spread, torchtitan_runs.size()};
  const std::vector<ArchitectureFit> fits = {ampere_fit, hopper_fit};
  const std::string block = FittedBlock(fits);
  std::cout << block;
  const std::string path = absl::GetFlag(FLAGS_update);
  if (!path.empty()) return Update(path, block);
  return absl::OkStatus();
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  const std::vector<char*> positional =
      paratune::ParseFlags(argc, argv,
                           "Fits the performance model's parameters per GPU architecture to "
                           "data/measured/ and prints them as C++, or writes them into "
                           "estimator/performance_parameters.cc with --update.",
                           "tools/fit_performance_model.cc");
  if (!paratune::NoPositionalArguments(positional, "fit_performance_model")) return 2;
  const absl::Status status = paratune::Run();
  if (!status.ok()) {
    std::cerr << "fit_performance_model: " << status << "\n";
    return 1;
  }
  return 0;
}
