// Fuzzes the reader of TorchTitan's metrics line (worker/torchtitan_log.h) on arbitrary output,
// read line by line as the command backend reads a run's output.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_input.h"
#include "worker/torchtitan_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using paratune::FuzzCheck;
  for (absl::string_view line : absl::StrSplit(paratune::FuzzText(data, size), '\n')) {
    const absl::StatusOr<std::optional<paratune::TorchTitanStep>> read =
        paratune::ReadTorchTitanLine(line);
    if (!read.ok()) {
      FuzzCheck(read.status().code() == absl::StatusCode::kInvalidArgument,
                "a bad metrics line is INVALID_ARGUMENT");
      continue;
    }
    if (!read->has_value()) continue;
    FuzzCheck((*read)->step >= 0, "a step number has no sign");
    const absl::StatusOr<double> seconds =
        paratune::StepSecondsFromTps(1024.0, (*read)->tokens_per_second);
    FuzzCheck(seconds.ok() ? std::isfinite(*seconds) && *seconds > 0
                           : seconds.status().code() == absl::StatusCode::kInvalidArgument,
              "a step time from tps is a positive number, or INVALID_ARGUMENT");
  }
  return 0;
}
