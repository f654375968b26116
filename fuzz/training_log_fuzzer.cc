// Fuzzes training log matching (worker/training_log.h) on arbitrary output. The input's
// first line is a step time pattern in milliseconds and an out-of-memory marker (the
// Megatron-LM defaults when it is not a valid one), the rest the run's output, read line by line as
// the command backend reads it, against both those patterns and the defaults, and as a
// TorchTitan run's output (its metrics line read typed, worker/torchtitan_log.h).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_input.h"
#include "proto/worker_config.pb.h"
#include "worker/training_log.h"

namespace {

// What holds of any log, whatever its output.
void Check(const paratune::TrainingLog& log) {
  using paratune::FuzzCheck;
  for (double seconds : log.step_times_seconds()) {
    FuzzCheck(!std::isnan(seconds), "a step time is a number");
  }
  FuzzCheck(log.peak_memory_bytes() >= 0, "peak memory is not negative");
  FuzzCheck(log.out_of_memory_line().size() <= 512, "the out-of-memory line is cut to 512");
  FuzzCheck(log.nccl_error_line().size() <= 512, "the NCCL error line is cut to 512");
  FuzzCheck(log.unreadable_step_line().size() <= 512, "the unreadable step line is cut to 512");
  for (double seconds : log.step_times_seconds()) {
    FuzzCheck(log.patterns().steps != paratune::StepLog::kTorchTitan || seconds > 0,
              "a TorchTitan step takes some time");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const paratune::TrainingLogPatterns* const kDefaults = [] {
    absl::StatusOr<paratune::TrainingLogPatterns> defaults =
        paratune::TrainingLogPatterns::Create(paratune::v1::LogPatterns(), "log");
    paratune::FuzzCheck(defaults.ok(), "the default patterns are valid");
    return new paratune::TrainingLogPatterns(*std::move(defaults));
  }();
  static const paratune::TrainingLogPatterns* const kTorchTitan = [] {
    absl::StatusOr<paratune::TrainingLogPatterns> torchtitan =
        paratune::TrainingLogPatterns::Create(paratune::v1::LogPatterns(), "log",
                                              paratune::StepLog::kTorchTitan);
    paratune::FuzzCheck(torchtitan.ok(), "TorchTitan's patterns are valid");
    return new paratune::TrainingLogPatterns(*std::move(torchtitan));
  }();
  const absl::string_view text = paratune::FuzzText(data, size);
  const size_t newline = text.find('\n');
  const absl::string_view first = text.substr(0, newline);
  const absl::string_view output =
      newline == absl::string_view::npos ? absl::string_view() : text.substr(newline + 1);

  paratune::v1::LogPatterns written;
  written.mutable_step_time()->set_pattern(std::string(first));
  written.mutable_step_time()->set_unit(0.001);
  written.add_out_of_memory(std::string(first));
  absl::StatusOr<paratune::TrainingLogPatterns> patterns =
      paratune::TrainingLogPatterns::Create(written, "log");
  if (!patterns.ok()) {
    paratune::FuzzCheck(patterns.status().code() == absl::StatusCode::kInvalidArgument,
                        "bad patterns are INVALID_ARGUMENT");
  }
  paratune::TrainingLog with_defaults(*kDefaults);
  paratune::TrainingLog with_written(patterns.ok() ? *patterns : *kDefaults);
  paratune::TrainingLog as_torchtitan(*kTorchTitan, /*tokens_per_gpu_per_step=*/8192);
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    with_defaults.AddLine(line);
    with_written.AddLine(line);
    as_torchtitan.AddLine(line);
  }
  Check(with_defaults);
  Check(with_written);
  Check(as_torchtitan);
  return 0;
}
