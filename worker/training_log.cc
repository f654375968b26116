#include "worker/training_log.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "worker/torchtitan_log.h"

namespace paratune {
namespace {

constexpr char kValue[] = "{value}";
constexpr size_t kMaxPatternBytes = 256;
constexpr int kMaxMarkers = 32;
constexpr size_t kMaxKeptLineBytes = 512;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Megatron-LM's training_log: "elapsed time per iteration (ms): 1234.5" on the last rank with
// --log-interval 1; report_memory after the first iteration: "... | max reserved: 12345.0"
// in MiB (it divides by 1024 * 1024 and calls them MB).
constexpr char kMegatronStepTime[] = "elapsed time per iteration (ms): {value}";
constexpr double kMegatronStepTimeUnit = 1e-3;
constexpr char kMegatronPeakMemory[] = "max reserved: {value}";
constexpr double kMegatronPeakMemoryUnit = 1024.0 * 1024.0;

// PyTorch's allocator (torch.OutOfMemoryError / torch.cuda.OutOfMemoryError: "CUDA out of
// memory. Tried to allocate ..."), cuBLAS workspaces, raw CUDA errors, and NCCL's own buffer
// allocations ("NCCL WARN Cuda failure 2 'out of memory'", worker/testdata/logs/SOURCES.md).
const char* const kOutOfMemoryMarkers[] = {"CUDA out of memory", "OutOfMemoryError",
                                           "CUBLAS_STATUS_ALLOC_FAILED",
                                           "CUDA error: out of memory", "'out of memory'"};
// torch.distributed.DistBackendError "NCCL error in: ...", NCCL's result codes, and the
// ProcessGroupNCCL watchdog's collective timeout.
const char* const kNcclErrorMarkers[] = {"NCCL error",
                                         "ncclInternalError",
                                         "ncclSystemError",
                                         "ncclUnhandledCudaError",
                                         "ncclRemoteError",
                                         "ncclInvalidUsage",
                                         "Watchdog caught collective operation timeout"};

// The length of the decimal number at the start of `text` ([+-]digits[.digits][e[+-]digits],
// at least one digit), or 0.
size_t NumberLength(absl::string_view text) {
  size_t i = 0;
  auto digits = [&] {
    const size_t start = i;
    while (i < text.size() && absl::ascii_isdigit(static_cast<unsigned char>(text[i]))) ++i;
    return i - start;
  };
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  size_t mantissa = digits();
  if (i < text.size() && text[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) return 0;
  const size_t before_exponent = i;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (digits() == 0) i = before_exponent;
  }
  return i;
}

absl::StatusOr<std::vector<std::string>> Markers(
    const google::protobuf::RepeatedPtrField<std::string>& configured,
    const std::vector<std::string>& defaults, const std::string& field) {
  if (configured.empty()) return defaults;
  if (configured.size() > kMaxMarkers) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " (", configured.size(), " entries) must have at most ", kMaxMarkers));
  }
  for (int i = 0; i < configured.size(); ++i) {
    if (configured[i].empty() || configured[i].size() > kMaxPatternBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, "[", i, "] (\"", absl::CHexEscape(configured[i].substr(0, kMaxPatternBytes)),
          "\") must be 1 to ", kMaxPatternBytes, " bytes"));
    }
  }
  return std::vector<std::string>(configured.begin(), configured.end());
}

bool ContainsAny(absl::string_view line, const std::vector<std::string>& markers) {
  return std::any_of(markers.begin(), markers.end(), [&](const std::string& marker) {
    return line.find(marker) != absl::string_view::npos;
  });
}

std::string Kept(absl::string_view line) { return std::string(line.substr(0, kMaxKeptLineBytes)); }

}  // namespace

absl::StatusOr<LogValuePattern> LogValuePattern::Create(const v1::ValuePattern& pattern,
                                                        const std::string& field) {
  const std::string& text = pattern.pattern();
  const size_t value = text.find(kValue);
  if (text.size() > kMaxPatternBytes || value == std::string::npos || value == 0 ||
      text.find(kValue, value + 1) != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".pattern (\"", absl::CHexEscape(text.substr(0, kMaxPatternBytes)),
        "\") must hold one {value} after some text, in at most ", kMaxPatternBytes, " bytes"));
  }
  if (!std::isfinite(pattern.unit()) || pattern.unit() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".unit (", pattern.unit(), ") must be > 0"));
  }
  LogValuePattern parsed;
  parsed.text_ = text;
  parsed.before_ = text.substr(0, value);
  parsed.after_ = text.substr(value + sizeof(kValue) - 1);
  parsed.unit_ = pattern.unit();
  return parsed;
}

void LogValuePattern::FindAll(absl::string_view line, std::vector<double>& values) const {
  size_t from = 0;
  while (true) {
    const size_t found = line.find(before_, from);
    if (found == absl::string_view::npos) return;
    const size_t start = found + before_.size();
    const size_t length = NumberLength(line.substr(start));
    from = start;
    if (length == 0 || line.substr(start + length).substr(0, after_.size()) != after_) continue;
    double value = 0;
    if (absl::SimpleAtod(line.substr(start, length), &value)) values.push_back(value * unit_);
    from = start + length + after_.size();
  }
}

absl::StatusOr<TrainingLogPatterns> TrainingLogPatterns::Create(const v1::LogPatterns& patterns,
                                                                const std::string& field,
                                                                StepLog steps) {
  if (steps == StepLog::kTorchTitan) {
    for (const auto& [set, name] :
         {std::pair<bool, const char*>{patterns.has_step_time(), "step_time"},
          {patterns.has_peak_memory(), "peak_memory"}}) {
      if (set) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ".", name,
                         " is set, but TorchTitan's metrics line is read typed "
                         "(worker/torchtitan_log.h): a pattern would never be read"));
      }
    }
  }
  v1::ValuePattern step_time = patterns.step_time();
  if (!patterns.has_step_time()) {
    step_time.set_pattern(kMegatronStepTime);
    step_time.set_unit(kMegatronStepTimeUnit);
  }
  v1::ValuePattern peak_memory = patterns.peak_memory();
  if (!patterns.has_peak_memory()) {
    peak_memory.set_pattern(kMegatronPeakMemory);
    peak_memory.set_unit(kMegatronPeakMemoryUnit);
  }
  absl::StatusOr<LogValuePattern> step = LogValuePattern::Create(step_time, field + ".step_time");
  if (!step.ok()) return step.status();
  absl::StatusOr<LogValuePattern> memory =
      LogValuePattern::Create(peak_memory, field + ".peak_memory");
  if (!memory.ok()) return memory.status();
  absl::StatusOr<std::vector<std::string>> out_of_memory = Markers(
      patterns.out_of_memory(),
      std::vector<std::string>(std::begin(kOutOfMemoryMarkers), std::end(kOutOfMemoryMarkers)),
      field + ".out_of_memory");
  if (!out_of_memory.ok()) return out_of_memory.status();
  absl::StatusOr<std::vector<std::string>> nccl_error =
      Markers(patterns.nccl_error(),
              std::vector<std::string>(std::begin(kNcclErrorMarkers), std::end(kNcclErrorMarkers)),
              field + ".nccl_error");
  if (!nccl_error.ok()) return nccl_error.status();
  return TrainingLogPatterns{steps, *std::move(step), *std::move(memory), *std::move(out_of_memory),
                             *std::move(nccl_error)};
}

std::string TrainingLogPatterns::DescribeStepSource() const {
  if (steps == StepLog::kTorchTitan) return "TorchTitan's metrics line";
  return absl::StrCat("step_time pattern \"", step_time.text(), "\"");
}

void TrainingLog::AddLine(absl::string_view line) {
  if (patterns_.steps == StepLog::kTorchTitan) {
    AddTorchTitanLine(line);
  } else {
    patterns_.step_time.FindAll(line, step_times_);
    memory_values_.clear();
    patterns_.peak_memory.FindAll(line, memory_values_);
    for (double bytes : memory_values_) peak_memory_bytes_ = std::max(peak_memory_bytes_, bytes);
  }
  if (out_of_memory_line_.empty() && ContainsAny(line, patterns_.out_of_memory)) {
    out_of_memory_line_ = Kept(line);
  }
  if (nccl_error_line_.empty() && ContainsAny(line, patterns_.nccl_error)) {
    nccl_error_line_ = Kept(line);
  }
}

void TrainingLog::AddTorchTitanLine(absl::string_view line) {
  const absl::StatusOr<std::optional<TorchTitanStep>> read = ReadTorchTitanLine(line);
  if (read.ok() && !read->has_value()) return;  // not a metrics line
  absl::Status status = read.status();
  if (status.ok()) {
    const absl::StatusOr<double> seconds =
        StepSecondsFromTps(tokens_per_gpu_per_step_, (*read)->tokens_per_second);
    if (seconds.ok()) {
      step_times_.push_back(*seconds);
      peak_memory_bytes_ = std::max(peak_memory_bytes_, (*read)->max_reserved_gib * kGiB);
      return;
    }
    status = seconds.status();
  }
  if (unreadable_step_line_.empty()) {
    unreadable_step_line_ = Kept(absl::StrCat(status.message(), ": \"", line, "\""));
  }
}

}  // namespace paratune
