// Writes docs/estimator.md: the template tools/estimator_doc_template.md with its
// {{VALIDATION}} line replaced by the validation of the estimator against data/measured/
// (throughput error per table, rank correlation and regret on the held-out table, error bars,
// a replay of the adaptive search's refit on the held-out groups, memory verdicts of measured
// runs), {{FP8_THROUGHPUT}} by the throughput of the fp8 runs (fit and held-out tables, run
// by run), {{FP8_MEMORY}} by the memory verdicts of the fp8 runs before and after the fp8
// terms, {{MOE_VALIDATION}} by the throughput and memory verdicts of the mixture-of-experts
// runs (fitted, and each held out of its own fit), and {{PARAMETERS}}, {{FP8_PARAMETERS}} and
// {{MOE_PARAMETERS}} by the fitted parameters:
//
//   bazel run //tools:estimator_report -- --out=$PWD/docs/estimator.md
#include <algorithm>
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
#include "absl/strings/str_replace.h"
#include "common/command_line.h"
#include "common/status_macros.h"
#include "estimator/memory_model.h"
#include "estimator/moe_memory.h"
#include "estimator/moe_performance.h"
#include "estimator/performance_fit.h"
#include "estimator/performance_model.h"
#include "estimator/performance_parameters.h"
#include "measured/measured_runs.h"
#include "tools/validation_stats.h"

ABSL_FLAG(std::string, data_dir, "data/measured", "Directory of the measured CSV tables.");
ABSL_FLAG(std::string, doc_template, "tools/estimator_doc_template.md",
          "The document with {{VALIDATION}}, {{FP8_THROUGHPUT}}, {{FP8_MEMORY}}, "
          "{{MOE_VALIDATION}}, {{PARAMETERS}}, {{FP8_PARAMETERS}} and {{MOE_PARAMETERS}} lines.");
ABSL_FLAG(std::string, out, "", "Where to write the document; stdout when empty.");

namespace paratune {
namespace {

// Regret at or below this counts as finding the best configuration (the target).
constexpr double kRegretTarget = 0.05;
// The adaptive replay's stopping rule: no unprobed run's prediction, kSigmas relative errors
// optimistic, beats the best measured one by more than kTolerance.
constexpr double kSigmas = 2;
constexpr double kTolerance = 0.0;

double PredictedTflops(const MeasuredRun& run, const PerformanceParameters& params) {
  return PredictPerformance(run.model, run.training, run.cluster, run.config, params)
      .model_tflops_per_gpu;
}

double PredictedTflops(const MeasuredRun& run) {
  return PredictedTflops(run, DefaultPerformanceParameters(run.cluster.gpu()));
}

std::string Percent(double fraction) { return absl::StrFormat("%.1f%%", 100 * fraction); }

// The completed runs of `runs` by group, groups in order of first appearance.
std::vector<std::pair<std::string, std::vector<const MeasuredRun*>>> CompletedGroups(
    const std::vector<MeasuredRun>& runs) {
  std::vector<std::pair<std::string, std::vector<const MeasuredRun*>>> groups;
  std::map<std::string, size_t> index;
  for (const MeasuredRun& run : runs) {
    if (!run.completed) continue;
    const auto [it, added] = index.emplace(run.group, groups.size());
    if (added) groups.emplace_back(run.group, std::vector<const MeasuredRun*>());
    groups[it->second].second.push_back(&run);
  }
  return groups;
}

// One row of the throughput table over the completed runs that `keep` accepts.
template <typename Keep>
std::string ThroughputRow(const std::string& label, const char* role,
                          const std::vector<MeasuredRun>& runs, Keep keep) {
  std::vector<double> predicted, measured;
  double signed_error = 0, max_error = 0;
  for (const MeasuredRun& run : runs) {
    if (!run.completed || !keep(run)) continue;
    predicted.push_back(PredictedTflops(run));
    measured.push_back(MeasuredTflopsPerGpu(run));
    const double error = predicted.back() / measured.back() - 1;
    signed_error += error;
    max_error = std::max(max_error, std::fabs(error));
  }
  return absl::StrCat("| ", label, " | ", role, " | ", measured.size(), " | ",
                      Percent(MeanAbsolutePercentageError(predicted, measured)), " | ",
                      Percent(signed_error / std::max<size_t>(1, measured.size())), " | ",
                      Percent(max_error), " |\n");
}

// One row per table, and for the held-out table one per GPU type as well.
std::string ThroughputSection(const std::vector<std::vector<MeasuredRun>>& tables,
                              const std::vector<MeasuredDataset>& datasets) {
  std::string out =
      "| table | role | runs | MAPE TFLOP/s per GPU | mean signed error | max abs error |\n"
      "|---|---|---:|---:|---:|---:|\n";
  for (size_t i = 0; i < tables.size(); ++i) {
    const char* role = datasets[i].in_fit ? "fit" : "held out";
    absl::StrAppend(&out, ThroughputRow(datasets[i].file, role, tables[i],
                                        [](const MeasuredRun&) { return true; }));
    if (datasets[i].in_fit) continue;
    std::vector<std::string> gpus;
    for (const MeasuredRun& run : tables[i]) {
      if (std::find(gpus.begin(), gpus.end(), run.cluster.gpu().name) == gpus.end()) {
        gpus.push_back(run.cluster.gpu().name);
      }
    }
    for (const std::string& gpu : gpus) {
      absl::StrAppend(&out, ThroughputRow(absl::StrCat("&nbsp;&nbsp;", gpu, " runs"), role,
                                          tables[i], [&gpu](const MeasuredRun& run) {
                                            return run.cluster.gpu().name == gpu;
                                          }));
    }
  }
  return out;
}

std::string HeldOutSection(const std::vector<MeasuredRun>& runs) {
  std::string out =
      "| group | runs | Spearman | regret | predicted best | measured best |\n"
      "|---|---:|---:|---:|---|---|\n";
  double spearman_sum = 0;
  int spearman_groups = 0, regret_ok = 0, regret_groups = 0;
  for (const auto& [name, group] : CompletedGroups(runs)) {
    std::vector<double> predicted, measured;
    for (const MeasuredRun* run : group) {
      predicted.push_back(PredictedTflops(*run));
      measured.push_back(MeasuredTflopsPerGpu(*run));
    }
    const size_t chosen = std::max_element(predicted.begin(), predicted.end()) - predicted.begin();
    const size_t best = std::max_element(measured.begin(), measured.end()) - measured.begin();
    const double regret = PredictedBestRegret(predicted, measured);
    std::string spearman = "n/a";
    if (group.size() >= 3) {
      const double rho = SpearmanCorrelation(predicted, measured);
      spearman = absl::StrFormat("%.2f", rho);
      spearman_sum += rho;
      ++spearman_groups;
    }
    if (group.size() >= 2) {
      ++regret_groups;
      if (regret <= kRegretTarget) ++regret_ok;
    }
    absl::StrAppend(&out, "| ", name, " | ", group.size(), " | ", spearman, " | ", Percent(regret),
                    " | ", group[chosen]->config.ToString(), " | ", group[best]->config.ToString(),
                    " |\n");
  }
  absl::StrAppendFormat(
      &out,
      "\nMean Spearman over the %d groups with at least 3 runs: **%.2f**. Predicted-best regret "
      "<= %.0f%% in **%d of %d** groups with at least 2 runs (%s).\n",
      spearman_groups, spearman_groups > 0 ? spearman_sum / spearman_groups : 0,
      100 * kRegretTarget, regret_ok, regret_groups,
      Percent(regret_groups > 0 ? static_cast<double>(regret_ok) / regret_groups : 0));
  return out;
}

// The fitted one-sigma errors, and how the held-out runs scatter about their group's mean log
// residual (the common bias a refit on a search's own probes removes), per GPU type.
std::string ErrorBarSection(const std::vector<MeasuredRun>& held_out) {
  std::string out = absl::StrFormat(
      "| architecture | relative_error (one sigma) |\n|---|---:|\n| Ampere (A100) | %s |\n"
      "| Hopper (H100, H200) | %s |\n\n",
      Percent(FittedPerformanceParameters(GpuArchitecture::kAmpere).relative_error),
      Percent(FittedPerformanceParameters(GpuArchitecture::kHopper).relative_error));
  absl::StrAppend(&out,
                  "| held-out runs | runs | spread about group mean (pooled SD of log "
                  "residuals) | within 1 sigma | within 2 sigma |\n|---|---:|---:|---:|---:|\n");
  std::map<std::string, std::vector<std::vector<double>>> residuals_by_gpu;
  for (const auto& [name, group] : CompletedGroups(held_out)) {
    if (group.size() < 2) continue;
    std::vector<double> residuals;
    for (const MeasuredRun* run : group) {
      residuals.push_back(LogResidual(*run, DefaultPerformanceParameters(run->cluster.gpu())));
    }
    residuals_by_gpu[group.front()->cluster.gpu().name].push_back(std::move(residuals));
  }
  for (const auto& [gpu, groups] : residuals_by_gpu) {
    const double sigma = DefaultPerformanceParameters(*FindGpuPreset(gpu)).relative_error;
    int runs = 0, within_one = 0, within_two = 0;
    for (const std::vector<double>& group : groups) {
      double mean = 0;
      for (double r : group) mean += r / group.size();
      for (double r : group) {
        ++runs;
        within_one += std::fabs(r - mean) <= sigma;
        within_two += std::fabs(r - mean) <= 2 * sigma;
      }
    }
    absl::StrAppend(&out, "| ", gpu, " | ", runs, " | ", Percent(PooledStandardDeviation(groups)),
                    " | ", Percent(static_cast<double>(within_one) / runs), " | ",
                    Percent(static_cast<double>(within_two) / runs), " |\n");
  }
  return out;
}

struct ReplayOutcome {
  int probes = 0;
  double regret = 0;
  bool stopped_early = false;
};

// The ADAPTIVE policy on one held-out group, its measured runs standing in for probes: probe
// the best predicted unprobed run, refit from the calibrated parameters on everything probed
// (SearchRefitOptions), and stop when no unprobed run's optimistic prediction beats the best
// measured one.
absl::StatusOr<ReplayOutcome> ReplayAdaptiveSearch(const std::vector<const MeasuredRun*>& group) {
  const PerformanceParameters start = DefaultPerformanceParameters(group.front()->cluster.gpu());
  PerformanceParameters params = start;
  std::vector<bool> probed(group.size(), false);
  std::vector<PerformanceObservation> observations;
  double best_measured = 0, group_best = 0;
  for (const MeasuredRun* run : group)
    group_best = std::max(group_best, MeasuredTflopsPerGpu(*run));
  ReplayOutcome outcome;
  while (outcome.probes < static_cast<int>(group.size())) {
    size_t next = group.size();
    double next_optimistic = 0;
    for (size_t i = 0; i < group.size(); ++i) {
      if (probed[i]) continue;
      const PerformanceEstimate predicted = PredictPerformance(
          group[i]->model, group[i]->training, group[i]->cluster, group[i]->config, params);
      const double optimistic = OptimisticTflopsPerGpu(predicted, kSigmas);
      if (next == group.size() || optimistic > next_optimistic) {
        next = i;
        next_optimistic = optimistic;
      }
    }
    if (outcome.probes > 0 && next_optimistic <= best_measured * (1 + kTolerance)) {
      outcome.stopped_early = true;
      break;
    }
    const MeasuredRun& run = *group[next];
    probed[next] = true;
    ++outcome.probes;
    best_measured = std::max(best_measured, MeasuredTflopsPerGpu(run));
    observations.push_back({run.model, run.training, run.cluster, run.config, run.step_seconds, 1});
    PT_ASSIGN_OR_RETURN(FitResult fit,
                        FitPerformanceParameters(observations, start, SearchRefitOptions()));
    params = fit.params;
  }
  outcome.regret = 1 - best_measured / group_best;
  return outcome;
}

absl::StatusOr<std::string> AdaptiveReplaySection(const std::vector<MeasuredRun>& held_out) {
  std::string out =
      "| group | runs | probes | regret of the best probed | stop |\n|---|---:|---:|---:|---|\n";
  int groups = 0, probes = 0, runs = 0, regret_ok = 0;
  for (const auto& [name, group] : CompletedGroups(held_out)) {
    if (group.size() < 3) continue;
    PT_ASSIGN_OR_RETURN(const ReplayOutcome outcome, ReplayAdaptiveSearch(group));
    ++groups;
    probes += outcome.probes;
    runs += static_cast<int>(group.size());
    regret_ok += outcome.regret <= kRegretTarget;
    absl::StrAppend(&out, "| ", name, " | ", group.size(), " | ", outcome.probes, " | ",
                    Percent(outcome.regret), " | ",
                    outcome.stopped_early ? "no candidate can win" : "all probed", " |\n");
  }
  absl::StrAppendFormat(&out,
                        "\nOver the %d groups: %d probes of %d runs (%s); regret <= %.0f%% in "
                        "%d of %d groups.\n",
                        groups, probes, runs,
                        Percent(runs > 0 ? static_cast<double>(probes) / runs : 0),
                        100 * kRegretTarget, regret_ok, groups);
  return out;
}

std::string MemorySection(const std::vector<std::vector<MeasuredRun>>& tables,
                          const std::vector<MeasuredDataset>& datasets) {
  const MemoryOptions options;
  std::string out =
      "| table | completed runs | max estimate / capacity | SAFE | RISKY | OUT_OF_MEMORY | "
      "failed runs (dash) called OUT_OF_MEMORY | failed runs called SAFE |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|\n";
  std::string exceptions, failed_and_safe;
  for (size_t i = 0; i < tables.size(); ++i) {
    int counts[3] = {0, 0, 0};
    int failed = 0, failed_oom = 0, failed_safe = 0;
    double max_fraction = 0;
    for (const MeasuredRun& run : tables[i]) {
      const MemoryEstimate estimate =
          EstimateMemory(run.model, run.training, run.cluster, run.config, options);
      if (!run.completed) {
        ++failed;
        failed_oom += estimate.verdict == MemoryVerdict::kOutOfMemory;
        if (estimate.verdict == MemoryVerdict::kSafe) {
          ++failed_safe;
          absl::StrAppendFormat(&failed_and_safe, "- %s line %d (%s, %s, %s): %.3f of capacity\n",
                                run.dataset, run.line, run.group, run.config.ToString(),
                                run.cluster.gpu().name, estimate.fraction_of_capacity);
        }
        continue;
      }
      ++counts[static_cast<int>(estimate.verdict)];
      max_fraction = std::max(max_fraction, estimate.fraction_of_capacity);
      if (estimate.verdict == MemoryVerdict::kOutOfMemory) {
        absl::StrAppendFormat(&exceptions, "- %s line %d (%s, %s, %s): %.3f of capacity\n",
                              run.dataset, run.line, run.model_name, run.config.ToString(),
                              run.cluster.gpu().name, estimate.fraction_of_capacity);
      }
    }
    absl::StrAppend(&out, "| ", datasets[i].file, " | ", counts[0] + counts[1] + counts[2], " | ",
                    absl::StrFormat("%.3f", max_fraction), " | ", counts[0], " | ", counts[1],
                    " | ", counts[2], " | ",
                    failed > 0 ? absl::StrCat(failed_oom, " of ", failed) : "-", " | ",
                    failed > 0 ? absl::StrCat(failed_safe, " of ", failed) : "-", " |\n");
  }
  absl::StrAppend(&out, "\nCompleted runs called OUT_OF_MEMORY with the default options: ",
                  exceptions.empty() ? "none.\n" : "\n" + exceptions);
  absl::StrAppend(&out, "\nFailed runs called SAFE (the source does not say why a run failed): ",
                  failed_and_safe.empty() ? "none.\n" : "\n" + failed_and_safe);
  return out;
}

// Whether `run` is a NeMo 25.11 or 26.02 row of nvidia_h100_fp8.csv: the H100 fp8 performance
// recipes of Megatron-Bridge 0.2.0 and 0.3.0, the versions those containers ship
// (NVIDIA-NeMo/Megatron-Bridge docs/releases/software-versions.md). The table names neither
// recipe nor settings; the recipes themselves set what WithRecipeSettings and
// RecipeMemoryOptions add.
bool IsMegatronBridgePerfRecipeRun(const MeasuredRun& run) {
  if (run.dataset != Fp8Dataset().file || !run.training.fp8()) return false;
  return run.software == "NeMo 25.11" || run.software == "NeMo 26.02";
}

// `run` with fp8 model weights where its recipe keeps them. Megatron-Bridge's H100 presets of
// Llama 3 70B and 3.1 405B exist only for fp8_cs (v0.2.0, commit 7af9601c:
// scripts/performance/configs/llama3/workload_base_configs.py LLAMA3_70B_H100_FP8_CS_BASE_CONFIG,
// configs/llama31/ likewise; v0.3.0, commit 21b02e0c: configs/llama/llama3_workload_base_configs.py
// LLAMA3_70B_PRETRAIN_CONFIG_H100_FP8_CS_V2, GBS 256, the 26.02 table's "FP8" row), and
// get_precision_config("fp8_cs") (v0.2.0 scripts/performance/utils/helpers.py, v0.3.0
// scripts/performance/utils/precision.py) returns bf16_with_fp8_current_scaling_mixed()
// (src/megatron/bridge/training/mixed_precision.py, both tags: fp8_recipe "tensorwise",
// fp8_param_gather = True, which sets fp8_param) with first_last_layers_bf16 = False. No
// H100 override of these recipes turns it off.
absl::StatusOr<MeasuredRun> WithRecipeSettings(MeasuredRun run) {
  if (!IsMegatronBridgePerfRecipeRun(run)) return run;
  TrainingOptions options = run.training.options();
  options.fp8_param_gather = true;
  PT_ASSIGN_OR_RETURN(run.training, TrainingSpec::Create(options));
  return run;
}

// The memory options of `run`'s recipe. The Megatron-Bridge rows scale fp8 tensors by current
// scaling (Transformer Engine's Float8CurrentScaling, which Megatron-Core's get_fp8_recipe
// builds for fp8_recipe "tensorwise"): Float8CurrentScalingRecipeState keeps no amax history,
// and each Float8CurrentScalingQuantizer holds one fp32 scale and one amax
// (transformer_engine/pytorch/quantization.py and tensor/float8_tensor.py, TE v2.9 and v2.12,
// the versions NeMo 25.11 and 26.02 ship): no history entries.
MemoryOptions RecipeMemoryOptions(const MeasuredRun& run) {
  MemoryOptions options;
  if (IsMegatronBridgePerfRecipeRun(run)) options.fp8_amax_history_len = 0;
  return options;
}

// `runs` with WithRecipeSettings applied to each.
absl::StatusOr<std::vector<MeasuredRun>> WithRecipeSettings(std::vector<MeasuredRun> runs) {
  for (MeasuredRun& run : runs) {
    PT_ASSIGN_OR_RETURN(run, WithRecipeSettings(std::move(run)));
  }
  return runs;
}

// Each fp8 run's peak estimate and verdict without the fp8 terms (the memory model before
// it had them, which read an fp8 run as bf16) and with them.
absl::StatusOr<std::string> Fp8MemorySection(const std::vector<MeasuredRun>& runs) {
  std::string out =
      "| line | model | software | GPUs | tp pp cp vp mbs | bf16 terms: GiB, verdict | fp8 "
      "terms: GiB, verdict | peak stage |\n|---:|---|---|---:|---|---:|---:|---:|\n";
  for (const MeasuredRun& run : runs) {
    TrainingOptions bf16_options = run.training.options();
    bf16_options.fp8 = false;
    bf16_options.fp8_param_gather = false;
    PT_ASSIGN_OR_RETURN(const TrainingSpec bf16, TrainingSpec::Create(bf16_options));
    const MemoryOptions options = RecipeMemoryOptions(run);
    const MemoryEstimate before = EstimateMemory(run.model, bf16, run.cluster, run.config, options);
    const MemoryEstimate after =
        EstimateMemory(run.model, run.training, run.cluster, run.config, options);
    const double gib = 1024.0 * 1024 * 1024;
    absl::StrAppendFormat(
        &out, "| %d | %s | %s | %d | %d %d %d %d %d | %.1f, %s | %.1f, %s | %d |\n", run.line,
        run.model_name, run.software, run.cluster.world_size(), run.config.tp(), run.config.pp(),
        run.config.cp(), run.config.virtual_pipeline(), run.config.micro_batch(),
        before.peak_bytes / gib, MemoryVerdictName(before.verdict), after.peak_bytes / gib,
        MemoryVerdictName(after.verdict), after.peak_stage);
  }
  return out;
}

// The fp8 throughput of every fp8 run, fit table and held-out table: one row per run with
// its measured and predicted TFLOP/s per GPU, and the MAPE of each table.
std::string Fp8ThroughputSection(const std::vector<std::vector<MeasuredRun>>& tables,
                                 const std::vector<MeasuredDataset>& datasets) {
  std::string summary =
      "| table | role | runs | MAPE TFLOP/s per GPU | mean signed error | max abs error |\n"
      "|---|---|---:|---:|---:|---:|\n";
  std::string rows;
  for (size_t i = 0; i < tables.size(); ++i) {
    const char* role = datasets[i].in_fit ? "fit" : "held out";
    absl::StrAppend(&summary, ThroughputRow(absl::StrCat(datasets[i].file, " (fp8 rows)"), role,
                                            tables[i], [](const MeasuredRun&) { return true; }));
    absl::StrAppend(
        &rows, "\n", datasets[i].in_fit ? "Fit" : "Held-out", " runs, ", datasets[i].file, ":\n\n",
        "| line | model | release | GPUs | tp pp cp vp mbs | measured TFLOP/s per GPU | "
        "predicted | error | predicted MFU (fp8 peak) |\n"
        "|---:|---|---|---:|---|---:|---:|---:|---:|\n");
    for (const MeasuredRun& run : tables[i]) {
      if (!run.completed) continue;
      const PerformanceEstimate estimate =
          PredictPerformance(run.model, run.training, run.cluster, run.config,
                             DefaultPerformanceParameters(run.cluster.gpu()));
      const double measured = MeasuredTflopsPerGpu(run);
      absl::StrAppendFormat(
          &rows, "| %d | %s | %s | %d | %d %d %d %d %d | %.0f | %.0f | %+.1f%% | %s |\n", run.line,
          run.model_name, run.software, run.cluster.world_size(), run.config.tp(), run.config.pp(),
          run.config.cp(), run.config.virtual_pipeline(), run.config.micro_batch(), measured,
          estimate.model_tflops_per_gpu, 100 * (estimate.model_tflops_per_gpu / measured - 1),
          Percent(estimate.mfu));
    }
  }
  return summary + rows;
}

// Tokens per second per GPU of a run: measured, or as `params` predict it.
double MeasuredTokensPerGpu(const MeasuredRun& run) {
  return static_cast<double>(run.training.global_batch_size() * run.training.seq_len()) /
         (run.step_seconds * static_cast<double>(run.cluster.world_size()));
}
double PredictedTokensPerGpu(const MeasuredRun& run, const PerformanceParameters& params) {
  return PredictPerformance(run.model, run.training, run.cluster, run.config, params)
             .tokens_per_second /
         static_cast<double>(run.cluster.world_size());
}

// Tokens/s per GPU of `run` as predicted by `options.fields` fitted from `start` to the runs of
// `fit_runs` that `keep` accepts: a row held out of its own fit.
template <typename Keep>
absl::StatusOr<double> HeldOutTokensPerGpu(const MeasuredRun& run,
                                           const std::vector<const MeasuredRun*>& fit_runs,
                                           const PerformanceParameters& start,
                                           const FitOptions& options, Keep keep) {
  std::vector<MeasuredRun> others;
  for (const MeasuredRun* other : fit_runs) {
    if (keep(*other)) others.push_back(*other);
  }
  PT_ASSIGN_OR_RETURN(const FitResult fit,
                      FitPerformanceParameters(FitObservations(others), start, options));
  return PredictedTokensPerGpu(run, fit.params);
}

// Every TorchTitan run: measured peak memory (TorchTitan reports the caching allocator's
// maximum reserved memory, the maximum over GPUs) against the estimate's peak (held out:
// nothing in the memory model is fitted to it), and measured tokens/s per GPU against the
// fitted parameters' prediction and against the prediction of the TorchTitan fields fitted to
// the other groups alone (each row's group held out).
absl::StatusOr<std::string> TorchTitanSection(const std::vector<MeasuredRun>& runs) {
  const double gib = 1024.0 * 1024 * 1024;
  const PerformanceParameters fitted = FittedPerformanceParameters(GpuArchitecture::kHopper);
  // The start of the TorchTitan fit: every other fitted field with the TorchTitan prior.
  PerformanceParameters start = fitted;
  const PerformanceParameters priors;
  for (const FittedField& field : TorchTitanFittedFields()) {
    start.*field.field = priors.*field.field;
  }
  FitOptions options;
  options.max_sweeps = 10000;
  options.fields = TorchTitanFittedFields();
  std::vector<const MeasuredRun*> fit_runs;
  for (const MeasuredRun& run : runs) fit_runs.push_back(&run);
  std::string rows =
      "| line | run | GPUs | fsdp tp pp cp vp mbs | checkpointing | float8 | measured GiB | "
      "estimated | error | measured tok/s/GPU | predicted (fit) | error | held out: predicted | "
      "error |\n"
      "|---:|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  double memory_errors = 0;
  double largest_memory_error = 0;
  std::vector<double> measured, predicted_fit, predicted_held, predicted_prior;
  for (const MeasuredRun& run : runs) {
    const MemoryEstimate memory =
        EstimateMemory(run.model, run.training, run.cluster, run.config, MemoryOptions());
    const double memory_error = memory.peak_bytes / gib / run.measured_memory_gib - 1;
    measured.push_back(MeasuredTokensPerGpu(run));
    predicted_fit.push_back(PredictedTokensPerGpu(run, fitted));
    PT_ASSIGN_OR_RETURN(const double held, HeldOutTokensPerGpu(run, fit_runs, start, options,
                                                               [&run](const MeasuredRun& other) {
                                                                 return other.group != run.group;
                                                               }));
    predicted_held.push_back(held);
    predicted_prior.push_back(PredictedTokensPerGpu(run, start));
    memory_errors += std::abs(memory_error);
    largest_memory_error = std::max(largest_memory_error, std::abs(memory_error));
    absl::StrAppendFormat(
        &rows,
        "| %d | %s %s | %d | %d %d %d %d %d %d | %s | %s | %.1f | %.1f | %+.1f%% | %.0f | "
        "%.0f | %+.1f%% | %.0f | %+.1f%% |\n",
        run.line, run.model_name, run.group, run.cluster.world_size(), run.config.dp(),
        run.config.tp(), run.config.pp(), run.config.cp(), run.config.virtual_pipeline(),
        run.config.micro_batch(), RecomputeName(run.config.recompute()),
        run.training.fp8() ? "yes" : "no", run.measured_memory_gib, memory.peak_bytes / gib,
        100 * memory_error, measured.back(), predicted_fit.back(),
        100 * (predicted_fit.back() / measured.back() - 1), predicted_held.back(),
        100 * (predicted_held.back() / measured.back() - 1));
  }
  const double n = static_cast<double>(runs.size());
  return absl::StrCat(
      absl::StrFormat(
          "Peak memory: mean absolute error %s, largest %s. Tokens/s per GPU: MAPE %s with "
          "the fitted torchtitan_eager_compute_efficiency (%.3f), "
          "torchtitan_compiled_compute_efficiency (%.3f) and torchtitan_attention_efficiency "
          "(%.3f), %s with each row's group held out of the fit, %s with Megatron-LM's compute "
          "(the priors, 1). %d runs.\n\n",
          Percent(memory_errors / n), Percent(largest_memory_error),
          Percent(MeanAbsolutePercentageError(predicted_fit, measured)),
          fitted.torchtitan_eager_compute_efficiency, fitted.torchtitan_compiled_compute_efficiency,
          fitted.torchtitan_attention_efficiency,
          Percent(MeanAbsolutePercentageError(predicted_held, measured)),
          Percent(MeanAbsolutePercentageError(predicted_prior, measured)), runs.size()),
      rows);
}

// A run's model and parallel layout (tp pp cp vp ep etp mbs), whatever its release, precision or
// global batch: the runs one MoE configuration measured more than once.
std::string LayoutOf(const MeasuredRun& run) {
  return absl::StrFormat("%s %d %d %d %d %d %d %d", run.model_name, run.config.tp(),
                         run.config.pp(), run.config.cp(), run.config.virtual_pipeline(),
                         run.config.ep(), run.config.etp(), run.config.micro_batch());
}

// Every MoE run: measured tokens/s per GPU against the fitted parameters' prediction and,
// for the runs of the fit, the prediction of the parameters fitted to the other runs alone
// (their held-out error) and to the runs of other layouts alone (the same configuration
// measured in other releases held out too), with the memory verdict of each configuration
// (which ran). Rows the
// table excludes (MeasuredRun::excluded_reason) are shown, counted apart and listed with their
// reasons.
absl::StatusOr<std::string> MoeSection(const std::vector<MeasuredRun>& runs) {
  const PerformanceParameters fitted = FittedPerformanceParameters(GpuArchitecture::kHopper);
  // The start of the MoE fit: the fitted dense and fp8 fields with the MoE priors; of the
  // flex fit, every fitted field but the flex one, at its prior.
  const PerformanceParameters priors;
  PerformanceParameters start = fitted;
  for (const FittedField& field : MoeFittedFields()) start.*field.field = priors.*field.field;
  PerformanceParameters flex_start = fitted;
  for (const FittedField& field : FlexFittedFields()) {
    flex_start.*field.field = priors.*field.field;
  }
  FitOptions options;
  options.max_sweeps = 10000;
  options.fields = MoeFittedFields();
  FitOptions flex_options = options;
  flex_options.fields = FlexFittedFields();
  std::vector<const MeasuredRun*> fit_runs, flex_fit_runs;
  for (const MeasuredRun& run : runs) {
    if (!run.excluded_reason.empty()) continue;
    (IsFlexDispatcher(run.training.moe_token_dispatcher()) ? flex_fit_runs : fit_runs)
        .push_back(&run);
  }
  std::string rows =
      "| row | model | release | routing | GPUs | tp pp cp vp ep etp mbs | GBS | measured "
      "tokens/s/GPU | predicted (fit) | error | held out: predicted | error | layout held out: "
      "predicted | error | memory |\n"
      "|---:|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
  // Per kind of run (0 all-to-all, 1 flex): measured and predicted by the fit, held out of it,
  // and held out with its layout.
  std::vector<double> measured_by[2], fit_by[2], held_by[2], layout_held_by[2];
  std::vector<double> measured_excluded, predicted_excluded;
  std::string excluded;
  for (const MeasuredRun& run : runs) {
    const double measured = MeasuredTokensPerGpu(run);
    const double predicted = PredictedTokensPerGpu(run, fitted);
    const bool flex = IsFlexDispatcher(run.training.moe_token_dispatcher());
    std::string held_out;
    if (!run.excluded_reason.empty()) {
      held_out = "excluded (reason below) | | | ";
      measured_excluded.push_back(measured);
      predicted_excluded.push_back(predicted);
      absl::StrAppendFormat(&excluded, "- %s:%d (%s, %s): %s\n", run.dataset, run.line,
                            run.model_name, run.software, run.excluded_reason);
    } else {
      const std::vector<const MeasuredRun*>& kind_runs = flex ? flex_fit_runs : fit_runs;
      const PerformanceParameters& kind_start = flex ? flex_start : start;
      const FitOptions& kind_options = flex ? flex_options : options;
      PT_ASSIGN_OR_RETURN(
          const double held,
          HeldOutTokensPerGpu(run, kind_runs, kind_start, kind_options,
                              [&run](const MeasuredRun& other) { return &other != &run; }));
      PT_ASSIGN_OR_RETURN(const double layout_held,
                          HeldOutTokensPerGpu(run, kind_runs, kind_start, kind_options,
                                              [&run](const MeasuredRun& other) {
                                                return LayoutOf(other) != LayoutOf(run);
                                              }));
      held_out =
          absl::StrFormat("%.0f | %+.1f%% | %.0f | %+.1f%%", held, 100 * (held / measured - 1),
                          layout_held, 100 * (layout_held / measured - 1));
      measured_by[flex].push_back(measured);
      fit_by[flex].push_back(predicted);
      held_by[flex].push_back(held);
      layout_held_by[flex].push_back(layout_held);
    }
    const MemoryEstimate memory =
        EstimateMemory(run.model, run.training, run.cluster, run.config, MemoryOptions());
    const std::string routing = absl::StrCat(
        run.training.moe_capacity_factor() > 0
            ? absl::StrFormat("capacity %.2g", run.training.moe_capacity_factor())
            : std::string("dropless"),
        flex ? absl::StrCat(", flex ",
                            FlexDispatcherBackendName(run.training.moe_token_dispatcher()))
             : std::string(", all-to-all"),
        run.training.fp8() ? ", fp8" : ", bf16");
    absl::StrAppendFormat(
        &rows,
        "| %s:%d | %s | %s | %s | %d | %d %d %d %d %d %d %d | %d | %.0f | %.0f | %+.1f%% | %s | %s "
        "%s |\n",
        run.dataset, run.line, run.model_name, run.software, routing, run.cluster.world_size(),
        run.config.tp(), run.config.pp(), run.config.cp(), run.config.virtual_pipeline(),
        run.config.ep(), run.config.etp(), run.config.micro_batch(),
        run.training.global_batch_size(), measured, predicted, 100 * (predicted / measured - 1),
        held_out, Percent(memory.fraction_of_capacity), MemoryVerdictName(memory.verdict));
  }
  std::string summary =
      "| runs | count | MAPE tokens/s per GPU | median APE |\n|---|---:|---:|---:|\n";
  const auto add = [&summary](const std::string& what, const std::vector<double>& predicted,
                              const std::vector<double>& measured) {
    absl::StrAppendFormat(&summary, "| %s | %d | %s | %s |\n", what, measured.size(),
                          Percent(MeanAbsolutePercentageError(predicted, measured)),
                          Percent(MedianAbsolutePercentageError(predicted, measured)));
  };
  const char* const kinds[2] = {"all-to-all", "flex-dispatcher"};
  for (int flex = 0; flex < 2; ++flex) {
    const std::string kind = kinds[flex];
    add(absl::StrCat(kind, " runs, fitted parameters (in the fit)"), fit_by[flex],
        measured_by[flex]);
    add(absl::StrCat(kind, " runs, each held out of its own fit"), held_by[flex],
        measured_by[flex]);
    add(absl::StrCat(kind, " runs, each held out with every run of its layout"),
        layout_held_by[flex], measured_by[flex]);
  }
  add("excluded runs, fitted parameters (never in the fit; reasons below)", predicted_excluded,
      measured_excluded);
  return absl::StrCat(summary, "\n", rows,
                      "\nExcluded rows, each with the reason its table's `excluded` cell "
                      "gives:\n\n",
                      excluded);
}

// Where each MoE run's predicted step goes with `params`: per MoE layer and micro-batch on one
// GPU, forward and backward, the terms of PredictMoeLayerSeconds (moe_performance.h) in
// milliseconds, the tokens each local expert receives and the grouped GEMM's efficiency there;
// then the step: the MoE blocks' compute over the micro-batches of one pipeline stage
// (m MoE layers per stage), their exposed dispatch and combine, and the whole predicted step
// against the measured one.
std::string MoeBreakdownSection(const std::vector<MeasuredRun>& runs,
                                const PerformanceParameters& params) {
  std::string rows =
      "| row | model | release | tokens per expert | grouped GEMM eff. | router | permutation | "
      "routed experts | shared experts | fp8 casts | dispatch + combine | exposed | MoE compute "
      "per step | exposed per step | predicted step | measured step |\n"
      "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  constexpr double kMilli = 1e3;
  for (const MeasuredRun& run : runs) {
    const GpuSpec& gpu = run.cluster.gpu();
    const ExpertParallelism expert = ExpertParallelismOf(run.config);
    const MoeRouting routing = MoeRoutingOf(run.training, /*dropless_load_margin=*/1.0);
    const ParallelDims dims = run.config.dims();
    const MoeLayerSeconds block = PredictMoeLayerSeconds(
        run.model, run.training, dims, expert, routing, run.cluster, gpu.peak_bf16_tflops * 1e12,
        DensePeakTflops(gpu, run.training) * 1e12, params);
    const PerformanceEstimate estimate =
        PredictPerformance(run.model, run.training, run.cluster, run.config, params);
    const double tokens = TokensPerLocalExpert(run.model, run.training, dims, expert, routing);
    const double micro_batches = static_cast<double>(run.training.global_batch_size()) /
                                 static_cast<double>(run.config.micro_batch() * run.config.dp());
    const double moe_layers_per_stage =
        static_cast<double>(run.model.MoeLayerCount()) / static_cast<double>(run.config.pp());
    absl::StrAppendFormat(
        &rows,
        "| %s:%d | %s | %s | %.0f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | "
        "%.2f s | %.2f s | %.2f s | %.2f s |\n",
        run.dataset, run.line, run.model_name, run.software, tokens,
        GroupedGemmEfficiency(tokens, run.training, params), kMilli * block.router,
        kMilli * block.permutation, kMilli * block.routed_experts, kMilli * block.shared_experts,
        kMilli * block.fp8_casts, kMilli * block.communication,
        kMilli * block.exposed_communication,
        micro_batches * moe_layers_per_stage * block.Compute(), estimate.ep_communication_seconds,
        estimate.step_time_seconds, run.step_seconds);
  }
  return rows;
}

// The mixture-of-experts fields per architecture.
std::string MoeParametersSection() {
  std::string out = "| parameter | A100 (Ampere) | H100 / H200 (Hopper) |\n|---|---:|---:|\n";
  const PerformanceParameters ampere = FittedPerformanceParameters(GpuArchitecture::kAmpere);
  const PerformanceParameters hopper = FittedPerformanceParameters(GpuArchitecture::kHopper);
  for (const std::vector<FittedField>* fields : {&MoeFittedFields(), &FlexFittedFields()}) {
    for (const FittedField& field : *fields) {
      absl::StrAppendFormat(&out, "| %s | %.4g | %.4g |\n", field.name, ampere.*field.field,
                            hopper.*field.field);
    }
  }
  absl::StrAppendFormat(&out, "| moe_relative_error | %.4g | %.4g |\n", ampere.moe_relative_error,
                        hopper.moe_relative_error);
  absl::StrAppendFormat(&out, "| flex_relative_error | %.4g | %.4g |\n", ampere.flex_relative_error,
                        hopper.flex_relative_error);
  return out;
}

// The fp8 fields per architecture.
std::string Fp8ParametersSection() {
  std::string out = "| parameter | A100 (Ampere) | H100 / H200 (Hopper) |\n|---|---:|---:|\n";
  const PerformanceParameters ampere = FittedPerformanceParameters(GpuArchitecture::kAmpere);
  const PerformanceParameters hopper = FittedPerformanceParameters(GpuArchitecture::kHopper);
  for (const FittedField& field : Fp8FittedFields()) {
    absl::StrAppendFormat(&out, "| %s | %.4g | %.4g |\n", field.name, ampere.*field.field,
                          hopper.*field.field);
  }
  return out;
}

std::string ParametersSection() {
  std::string out = "| parameter | A100 (Ampere) | H100 / H200 (Hopper) |\n|---|---:|---:|\n";
  const PerformanceParameters ampere = FittedPerformanceParameters(GpuArchitecture::kAmpere);
  const PerformanceParameters hopper = FittedPerformanceParameters(GpuArchitecture::kHopper);
  for (const FittedField& field : FittedFields()) {
    absl::StrAppendFormat(&out, "| %s | %.4g | %.4g |\n", field.name, ampere.*field.field,
                          hopper.*field.field);
  }
  absl::StrAppendFormat(&out, "| relative_error | %.4g | %.4g |\n", ampere.relative_error,
                        hopper.relative_error);
  return out;
}

absl::Status Run() {
  const std::vector<MeasuredDataset> datasets = MeasuredDatasets();
  std::vector<std::vector<MeasuredRun>> tables;
  for (const MeasuredDataset& dataset : datasets) {
    PT_ASSIGN_OR_RETURN(std::vector<MeasuredRun> runs,
                        LoadMeasuredRuns(absl::GetFlag(FLAGS_data_dir), dataset));
    tables.push_back(std::move(runs));
  }
  const std::vector<MeasuredRun>& held_out = tables.back();
  PT_ASSIGN_OR_RETURN(const std::string replay, AdaptiveReplaySection(held_out));
  PT_ASSIGN_OR_RETURN(std::vector<MeasuredRun> loaded_fp8_runs,
                      LoadMeasuredRuns(absl::GetFlag(FLAGS_data_dir), Fp8Dataset()));
  PT_ASSIGN_OR_RETURN(const std::vector<MeasuredRun> fp8_runs,
                      WithRecipeSettings(std::move(loaded_fp8_runs)));
  PT_ASSIGN_OR_RETURN(const std::string fp8_memory, Fp8MemorySection(fp8_runs));
  const std::vector<MeasuredDataset> fp8_datasets = Fp8Datasets();
  std::vector<std::vector<MeasuredRun>> fp8_tables;
  for (const MeasuredDataset& dataset : fp8_datasets) {
    PT_ASSIGN_OR_RETURN(std::vector<MeasuredRun> runs,
                        LoadMeasuredRuns(absl::GetFlag(FLAGS_data_dir), dataset));
    PT_ASSIGN_OR_RETURN(runs, WithRecipeSettings(std::move(runs)));
    fp8_tables.push_back(std::move(runs));
  }
  std::vector<MeasuredRun> moe_runs;
  for (const MeasuredDataset& dataset : MoeDatasets()) {
    PT_ASSIGN_OR_RETURN(std::vector<MeasuredRun> runs,
                        LoadMeasuredRuns(absl::GetFlag(FLAGS_data_dir), dataset));
    moe_runs.insert(moe_runs.end(), runs.begin(), runs.end());
  }
  PT_ASSIGN_OR_RETURN(const std::string moe, MoeSection(moe_runs));
  const std::string moe_breakdown =
      MoeBreakdownSection(moe_runs, FittedPerformanceParameters(GpuArchitecture::kHopper));
  PT_ASSIGN_OR_RETURN(const std::vector<MeasuredRun> torchtitan_runs,
                      LoadMeasuredRuns(absl::GetFlag(FLAGS_data_dir), TorchTitanDataset()));
  PT_ASSIGN_OR_RETURN(const std::string torchtitan, TorchTitanSection(torchtitan_runs));
  const std::string validation = absl::StrCat(
      "### Throughput\n\n", ThroughputSection(tables, datasets), "\n### Held-out ranking (",
      datasets.back().file, ")\n\n", HeldOutSection(held_out), "\n### Error bars\n\n",
      ErrorBarSection(held_out), "\n### Adaptive search replayed on the held-out groups\n\n",
      replay, "\n### Memory verdicts of measured runs\n\n", MemorySection(tables, datasets));

  const std::string template_path = absl::GetFlag(FLAGS_doc_template);
  std::ifstream in(template_path);
  if (!in) return absl::NotFoundError(absl::StrCat(template_path, ": cannot open the file"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string document = absl::StrReplaceAll(
      buffer.str(), {{"{{VALIDATION}}\n", validation},
                     {"{{FP8_THROUGHPUT}}\n", Fp8ThroughputSection(fp8_tables, fp8_datasets)},
                     {"{{FP8_MEMORY}}\n", fp8_memory},
                     {"{{PARAMETERS}}\n", ParametersSection()},
                     {"{{FP8_PARAMETERS}}\n", Fp8ParametersSection()},
                     {"{{MOE_VALIDATION}}\n", moe},
                     {"{{MOE_PARAMETERS}}\n", MoeParametersSection()},
                     {"{{MOE_BREAKDOWN}}\n", moe_breakdown},
                     {"{{TORCHTITAN_VALIDATION}}\n", torchtitan}});
  const std::string out_path = absl::GetFlag(FLAGS_out);
  if (out_path.empty()) {
    std::cout << document;
    return absl::OkStatus();
  }
  std::ofstream out(out_path);
  out << document;
  if (!out) return absl::InternalError(absl::StrCat(out_path, ": cannot write the file"));
  return absl::OkStatus();
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  const std::vector<char*> positional =
      paratune::ParseFlags(argc, argv,
                           "Writes docs/estimator.md, the estimator's fitted parameters and its "
                           "validation against data/measured/ (--out).",
                           "tools/estimator_report.cc");
  if (!paratune::NoPositionalArguments(positional, "estimator_report")) return 2;
  const absl::Status status = paratune::Run();
  if (!status.ok()) {
    std::cerr << "estimator_report: " << status << "\n";
    return 1;
  }
  return 0;
}
