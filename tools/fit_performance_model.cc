// Fits the performance model's parameters per GPU architecture to the measured tables of
// data/measured/ (the held-out table excluded) and prints them as C++, or writes them into
// estimator/performance_parameters.cc between its FITTED-PARAMETERS markers:
//
//   bazel run //tools:fit_performance_model --
//       --update=$PWD/estimator/performance_parameters.cc
#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "estimator/performance_parameters.h"
#include "tools/measured_runs.h"
#include "tools/performance_fit.h"

ABSL_FLAG(std::string, data_dir, "data/measured", "Directory of the measured CSV tables.");
ABSL_FLAG(std::string, update, "",
          "If set, the performance_parameters.cc whose fitted block is replaced.");

namespace paratune {
namespace {

constexpr char kBegin[] = "  // FITTED-PARAMETERS-BEGIN\n";
constexpr char kEnd[] = "  // FITTED-PARAMETERS-END\n";

std::string FittedBlock(const std::vector<std::pair<const char*, FitResult>>& fits) {
  std::string out = kBegin;
  absl::StrAppend(&out,
                  "  // Produced by `bazel run //tools:fit_performance_model --\n"
                  "  //     --update=$PWD/estimator/performance_parameters.cc` from\n"
                  "  // data/measured/ (held-out llama31_8b_4d_abci_tsubame.csv excluded).\n"
                  "  switch (architecture) {\n");
  for (const auto& [name, fit] : fits) {
    absl::StrAppend(&out, "    case GpuArchitecture::", name, ":\n");
    absl::StrAppendFormat(&out, "      // RMS log error %.4f -> %.4f in %d sweeps.\n",
                          std::sqrt(fit.objective_start), std::sqrt(fit.objective_end),
                          fit.sweeps);
    for (const FittedField& field : FittedFields()) {
      absl::StrAppendFormat(&out, "      params.%s = %.6g;\n", field.name,
                            fit.params.*field.field);
    }
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

absl::Status Run() {
  std::vector<MeasuredRun> ampere;
  std::vector<MeasuredRun> hopper;
  for (const MeasuredDataset& dataset : MeasuredDatasets()) {
    if (!dataset.in_fit) continue;
    absl::StatusOr<std::vector<MeasuredRun>> runs =
        LoadMeasuredRuns(absl::GetFlag(FLAGS_data_dir), dataset);
    if (!runs.ok()) return runs.status();
    for (MeasuredRun& run : *runs) {
      auto& into = ArchitectureOf(run.cluster.gpu()) == GpuArchitecture::kHopper ? hopper : ampere;
      into.push_back(std::move(run));
    }
  }
  std::vector<std::pair<const char*, FitResult>> fits;
  fits.emplace_back("kAmpere", FitPerformanceParameters(ampere, PerformanceParameters()));
  fits.emplace_back("kHopper", FitPerformanceParameters(hopper, PerformanceParameters()));
  const std::string block = FittedBlock(fits);
  std::cout << block;
  const std::string path = absl::GetFlag(FLAGS_update);
  if (!path.empty()) return Update(path, block);
  return absl::OkStatus();
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const absl::Status status = paratune::Run();
  if (!status.ok()) {
    std::cerr << "fit_performance_model: " << status << "\n";
    return 1;
  }
  return 0;
}
