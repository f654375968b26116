// Fuzzes the measured-runs reader (measured/measured_runs.h), which reads each published table
// of data/measured/ with its own schema. The input's first line names the table
// (e.g. "nvidia_dgxc_h100.csv"; an unknown name picks one by the first byte) and the rest is
// the file.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_input.h"
#include "measured/measured_runs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using paratune::FuzzCheck;
  static const std::vector<paratune::MeasuredDataset>* const kDatasets = [] {
    auto* datasets = new std::vector<paratune::MeasuredDataset>(paratune::MeasuredDatasets());
    for (const paratune::MeasuredDataset& moe : paratune::MoeDatasets()) datasets->push_back(moe);
    return datasets;
  }();
  const absl::string_view text = paratune::FuzzText(data, size);
  const size_t newline = text.find('\n');
  const absl::string_view name = text.substr(0, newline);
  const absl::string_view contents =
      newline == absl::string_view::npos ? absl::string_view() : text.substr(newline + 1);

  const paratune::MeasuredDataset* dataset =
      &(*kDatasets)[size == 0 ? 0 : data[0] % kDatasets->size()];
  for (const paratune::MeasuredDataset& known : *kDatasets) {
    if (known.file == name) dataset = &known;
  }
  paratune::WriteFuzzFile(dataset->file, contents);
  const absl::StatusOr<std::vector<paratune::MeasuredRun>> runs =
      paratune::LoadMeasuredRuns(paratune::FuzzScratchDirectory(), *dataset);
  if (!runs.ok()) return 0;
  for (const paratune::MeasuredRun& run : *runs) {
    if (!run.completed) continue;
    FuzzCheck(std::isfinite(run.step_seconds) && run.step_seconds > 0,
              "a completed run has a finite step time > 0");
    (void)paratune::MeasuredTflopsPerGpu(run);
  }
  (void)paratune::FitObservations(*runs);
  return 0;
}
