#include "worker/probe/gpu_inventory.h"

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace paratune {
namespace {

// Keeps the parser's complaint for our error instead of letting it log to stderr.
class LastError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    error = absl::StrCat("column ", column + 1, ": ", message);
  }
  std::string error;
};

}  // namespace

std::string FormatGpuLine(const v1::Gpu& gpu) {
  google::protobuf::TextFormat::Printer printer;
  printer.SetSingleLineMode(true);
  std::string line;
  printer.PrintToString(gpu, &line);
  return std::string(absl::StripTrailingAsciiWhitespace(line));
}

absl::StatusOr<std::vector<v1::Gpu>> ParseGpuInventory(absl::string_view text) {
  std::vector<v1::Gpu> gpus;
  std::set<int64_t> indices;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    v1::Gpu gpu;
    google::protobuf::TextFormat::Parser parser;
    LastError error;
    parser.RecordErrorsTo(&error);
    if (!parser.ParseFromString(std::string(line), &gpu)) {
      return absl::InvalidArgumentError(absl::StrCat("GPU list line \"", line,
                                                     "\" is not a paratune.v1.Gpu in text format (",
                                                     error.error, ")"));
    }
    if (gpu.name().empty() || gpu.memory_bytes() <= 0 || gpu.index() < 0 ||
        !indices.insert(gpu.index()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("GPU list line \"", line,
                       "\" needs a name, memory_bytes > 0 and an index >= 0 no other line has"));
    }
    gpus.push_back(std::move(gpu));
  }
  if (gpus.empty()) return absl::NotFoundError("the GPU list names no GPU");
  return gpus;
}

}  // namespace paratune
