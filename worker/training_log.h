// What the command backend reads from a training run's output (LogPatterns in
// proto/worker_config.proto): step times, peak memory, and the marks of out-of-memory and
// NCCL failures. Step times and peak memory come from value patterns, or, for a TorchTitan
// run, from its metrics line read typed (worker/torchtitan_log.h).
//
// Patterns are literal text around one "{value}", not regular expressions: RE2 is not among
// the Debian packages this build may use, std::regex is recursive in libstdc++ (a long log
// line can overflow the stack) and slow, and a training log needs no more than "this text,
// then a number". Literal text also spares template authors escaping the parentheses of
// Megatron-LM's "(ms)". Matching is linear in the line's length.
#ifndef PARATUNE_WORKER_TRAINING_LOG_H_
#define PARATUNE_WORKER_TRAINING_LOG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/worker_config.pb.h"

namespace paratune {

// A checked ValuePattern. Immutable.
class LogValuePattern {
 public:
  // INVALID_ARGUMENT naming `field` (e.g. "command_templates[0].log.step_time") and the
  // value: a pattern without exactly one "{value}", with nothing before it, longer than 256
  // bytes, or a unit that is not finite and > 0.
  static absl::StatusOr<LogValuePattern> Create(const v1::ValuePattern& pattern,
                                                const std::string& field);

  // Appends every number the pattern finds in `line`, times the unit.
  void FindAll(absl::string_view line, std::vector<double>& values) const;

  // The pattern as written, for messages.
  const std::string& text() const { return text_; }

 private:
  LogValuePattern() = default;

  std::string text_;
  std::string before_;
  std::string after_;
  double unit_ = 1;
};

// Where a run's step times and peak memory are read from.
enum class StepLog {
  kValuePatterns,  // LogPatterns.step_time and .peak_memory (Megatron-LM's by default)
  kTorchTitan,     // TorchTitan's metrics line (worker/torchtitan_log.h)
};

// A template's LogPatterns with the Megatron-LM defaults filled in.
struct TrainingLogPatterns {
  // INVALID_ARGUMENT naming the field (`field` is the LogPatterns', e.g.
  // "command_templates[0].log") for a bad pattern, an empty or over-long marker, or too many;
  // with StepLog::kTorchTitan, for a step_time or peak_memory pattern, which would not be read.
  static absl::StatusOr<TrainingLogPatterns> Create(const v1::LogPatterns& patterns,
                                                    const std::string& field,
                                                    StepLog steps = StepLog::kValuePatterns);

  // What step times are read from, for messages: `step_time pattern "..."` or TorchTitan's
  // metrics line.
  std::string DescribeStepSource() const;

  StepLog steps = StepLog::kValuePatterns;
  // Unused with StepLog::kTorchTitan.
  LogValuePattern step_time;
  LogValuePattern peak_memory;
  std::vector<std::string> out_of_memory;
  std::vector<std::string> nccl_error;
};

// What one run's output said, line by line. Not thread-safe: one run feeds it.
class TrainingLog {
 public:
  // `tokens_per_gpu_per_step` (global batch x sequence / GPUs of the launch) turns
  // TorchTitan's tokens per second into step times; unused with value patterns.
  explicit TrainingLog(const TrainingLogPatterns& patterns, double tokens_per_gpu_per_step = 0)
      : patterns_(patterns), tokens_per_gpu_per_step_(tokens_per_gpu_per_step) {}

  // Reads one line of stdout or stderr (without its '\n').
  void AddLine(absl::string_view line);

  // Every step time logged, seconds, in order.
  const std::vector<double>& step_times_seconds() const { return step_times_; }
  // The largest peak memory logged, bytes; 0 when none was.
  double peak_memory_bytes() const { return peak_memory_bytes_; }
  // The first line with an out-of-memory mark (cut to 512 bytes); empty when none had one.
  const std::string& out_of_memory_line() const { return out_of_memory_line_; }
  // The first line with a NCCL failure mark (cut to 512 bytes); empty when none had one.
  const std::string& nccl_error_line() const { return nccl_error_line_; }
  // Why the first step line that could not be read was not (TorchTitan's metrics line cut
  // short or malformed: ReadTorchTitanLine's error); empty when every one was read.
  const std::string& unreadable_step_line() const { return unreadable_step_line_; }

  const TrainingLogPatterns& patterns() const { return patterns_; }

 private:
  // Reads `line` as TorchTitan's metrics line, if it is one.
  void AddTorchTitanLine(absl::string_view line);

  const TrainingLogPatterns& patterns_;
  const double tokens_per_gpu_per_step_;
  std::vector<double> step_times_;
  std::vector<double> memory_values_;
  double peak_memory_bytes_ = 0;
  std::string out_of_memory_line_;
  std::string nccl_error_line_;
  std::string unreadable_step_line_;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_TRAINING_LOG_H_
