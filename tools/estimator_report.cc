// Writes docs/estimator.md: the template tools/estimator_doc_template.md with its
// {{VALIDATION}} line replaced by the validation of the estimator against data/measured/
// (throughput error per table, rank correlation and regret on the held-out table, memory
// verdicts of completed runs) and {{PARAMETERS}} by the fitted parameters:
//
//   bazel run //tools:estimator_report -- --out=$PWD/docs/estimator.md
#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "estimator/memory_model.h"
#include "estimator/performance_fit.h"
#include "estimator/performance_model.h"
#include "estimator/performance_parameters.h"
#include "tools/measured_runs.h"
#include "tools/validation_stats.h"

ABSL_FLAG(std::string, data_dir, "data/measured", "Directory of the measured CSV tables.");
ABSL_FLAG(std::string, doc_template, "tools/estimator_doc_template.md",
          "The document with {{VALIDATION}} and {{PARAMETERS}} lines.");
ABSL_FLAG(std::string, out, "", "Where to write the document; stdout when empty.");

namespace paratune {
namespace {

// Regret at or below this counts as finding the best configuration (the target).
constexpr double kRegretTarget = 0.05;

double PredictedTflops(const MeasuredRun& run) {
  return PredictPerformance(run.model, run.training, run.cluster, run.config,
                            DefaultPerformanceParameters(run.cluster.gpu()))
      .model_tflops_per_gpu;
}

std::string Percent(double fraction) { return absl::StrFormat("%.1f%%", 100 * fraction); }

std::string ThroughputSection(const std::vector<std::vector<MeasuredRun>>& tables,
                              const std::vector<MeasuredDataset>& datasets) {
  std::string out =
      "| table | role | runs | MAPE TFLOP/s per GPU | mean signed error | max abs error |\n"
      "|---|---|---:|---:|---:|---:|\n";
  for (size_t i = 0; i < tables.size(); ++i) {
    std::vector<double> predicted, measured;
    double signed_error = 0, max_error = 0;
    for (const MeasuredRun& run : tables[i]) {
      if (!run.completed) continue;
      predicted.push_back(PredictedTflops(run));
      measured.push_back(MeasuredTflopsPerGpu(run));
      const double error = predicted.back() / measured.back() - 1;
      signed_error += error;
      max_error = std::max(max_error, std::fabs(error));
    }
    absl::StrAppend(&out, "| ", datasets[i].file, " | ", datasets[i].in_fit ? "fit" : "held out",
                    " | ", measured.size(), " | ",
                    Percent(MeanAbsolutePercentageError(predicted, measured)), " | ",
                    Percent(signed_error / std::max<size_t>(1, measured.size())), " | ",
                    Percent(max_error), " |\n");
  }
  return out;
}

std::string HeldOutSection(const std::vector<MeasuredRun>& runs) {
  std::map<std::string, std::vector<const MeasuredRun*>> groups;
  std::vector<std::string> order;
  for (const MeasuredRun& run : runs) {
    if (!run.completed) continue;
    if (groups.find(run.group) == groups.end()) order.push_back(run.group);
    groups[run.group].push_back(&run);
  }
  std::string out =
      "| group | runs | Spearman | regret | predicted best | measured best |\n"
      "|---|---:|---:|---:|---|---|\n";
  double spearman_sum = 0;
  int spearman_groups = 0, regret_ok = 0, regret_groups = 0;
  for (const std::string& name : order) {
    const std::vector<const MeasuredRun*>& group = groups[name];
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
    absl::StrAppend(&out, "| ", name, " | ", group.size(), " | ", spearman, " | ",
                    Percent(regret), " | ", group[chosen]->config.ToString(), " | ",
                    group[best]->config.ToString(), " |\n");
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

std::string MemorySection(const std::vector<std::vector<MeasuredRun>>& tables,
                          const std::vector<MeasuredDataset>& datasets) {
  const MemoryOptions options;
  std::string out =
      "| table | completed runs | max estimate / capacity | SAFE | RISKY | OUT_OF_MEMORY | "
      "failed runs (dash) called OUT_OF_MEMORY |\n|---|---:|---:|---:|---:|---:|---:|\n";
  std::string exceptions;
  for (size_t i = 0; i < tables.size(); ++i) {
    int counts[3] = {0, 0, 0};
    int failed = 0, failed_oom = 0;
    double max_fraction = 0;
    for (const MeasuredRun& run : tables[i]) {
      const MemoryEstimate estimate =
          EstimateMemory(run.model, run.training, run.cluster, run.config, options);
      if (!run.completed) {
        ++failed;
        if (estimate.verdict == MemoryVerdict::kOutOfMemory) ++failed_oom;
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
    absl::StrAppend(&out, "| ", datasets[i].file, " | ", counts[0] + counts[1] + counts[2],
                    " | ", absl::StrFormat("%.3f", max_fraction), " | ", counts[0], " | ",
                    counts[1], " | ", counts[2], " | ",
                    failed > 0 ? absl::StrCat(failed_oom, " of ", failed) : "-", " |\n");
  }
  absl::StrAppend(&out, "\nCompleted runs called OUT_OF_MEMORY with the default options: ",
                  exceptions.empty() ? "none.\n" : "\n" + exceptions);
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
  return out;
}

absl::Status Run() {
  const std::vector<MeasuredDataset> datasets = MeasuredDatasets();
  std::vector<std::vector<MeasuredRun>> tables;
  for (const MeasuredDataset& dataset : datasets) {
    absl::StatusOr<std::vector<MeasuredRun>> runs =
        LoadMeasuredRuns(absl::GetFlag(FLAGS_data_dir), dataset);
    if (!runs.ok()) return runs.status();
    tables.push_back(std::move(*runs));
  }
  std::string validation = "### Throughput\n\n" + ThroughputSection(tables, datasets);
  absl::StrAppend(&validation, "\n### Held-out ranking (", datasets.back().file, ")\n\n",
                  HeldOutSection(tables.back()));
  absl::StrAppend(&validation, "\n### Memory verdicts of measured runs\n\n",
                  MemorySection(tables, datasets));

  const std::string template_path = absl::GetFlag(FLAGS_doc_template);
  std::ifstream in(template_path);
  if (!in) return absl::NotFoundError(absl::StrCat(template_path, ": cannot open the file"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string document = absl::StrReplaceAll(
      buffer.str(), {{"{{VALIDATION}}\n", validation}, {"{{PARAMETERS}}\n", ParametersSection()}});
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
  absl::ParseCommandLine(argc, argv);
  const absl::Status status = paratune::Run();
  if (!status.ok()) {
    std::cerr << "estimator_report: " << status << "\n";
    return 1;
  }
  return 0;
}
