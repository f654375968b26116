// TorchTitan's metrics line read typed: what the command backend takes from a TorchTitan run
// (deploy/templates/torchtitan_llama.textproto) instead of value patterns.
//
// TorchTitan v0.2.2 logs one line per logged step from MetricsProcessor.log
// (torchtitan/components/metrics.py:461-470):
//
//   step: 14  loss:  3.24405  grad_norm:  0.8319  memory:  9.46GiB(64.99%)  tps: 7,282 ...
//   ... tflops: 0.52  mfu: 0.17%                                         (one line, cut here)
//
// after the logger's prefix ("[rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - "), with
// colour codes between the fields unless --metrics.disable_color_printing. Its numbers are
// padded with spaces and tps has thousands separators, which value patterns
// (worker/training_log.h) cannot read, and it logs no step time: tps is tokens per second per
// GPU, so a step's time is the tokens a GPU's share of the step holds over tps
// (StepSecondsFromTps).
#ifndef PARATUNE_WORKER_TORCHTITAN_LOG_H_
#define PARATUNE_WORKER_TORCHTITAN_LOG_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace paratune {

// One metrics line. memory is the caching allocator's peak reserved memory since the last
// logged step (torch.cuda.memory_stats "reserved_bytes.all.peak"), in GiB and in percent of
// the device's memory.
struct TorchTitanStep {
  int64_t step = 0;
  // The global average loss; -1 on ranks of pipeline stages that compute none.
  double loss = 0;
  // Absent in releases before the gradient norm was logged (2025).
  std::optional<double> grad_norm;
  double max_reserved_gib = 0;
  double max_reserved_percent = 0;
  // Tokens per second per GPU, rounded to a whole number as logged.
  double tokens_per_second = 0;
  // Model TFLOP/s per GPU and MFU in percent by TorchTitan's own FLOP count and peak table;
  // absent in releases that did not log them.
  std::optional<double> tflops;
  std::optional<double> mfu_percent;
};

// Reads one line of a TorchTitan run's output (without its '\n'; colour codes allowed).
// nullopt when it is not a metrics line: a metrics line holds "step:" (not "validate step:")
// followed by the step number and then "loss:". INVALID_ARGUMENT naming the field and quoting
// it when the line is one but a field is missing (a line cut short), repeated, unknown, or
// not a number of its form ("memory (\"9.46GB\") is not <GiB>GiB(<percent>%)").
absl::StatusOr<std::optional<TorchTitanStep>> ReadTorchTitanLine(absl::string_view line);

// The seconds of a step in which every GPU's share held `tokens_per_gpu_per_step` tokens
// (global batch x sequence length / GPUs) at `tokens_per_second` per GPU; TorchTitan's tps is
// those tokens over the step's time (metrics.py:422-424: the tokens a data-parallel rank
// loaded, over the time times the GPUs of its model replica). INVALID_ARGUMENT when tps is
// not > 0.
absl::StatusOr<double> StepSecondsFromTps(double tokens_per_gpu_per_step, double tokens_per_second);

}  // namespace paratune

#endif  // PARATUNE_WORKER_TORCHTITAN_LOG_H_
