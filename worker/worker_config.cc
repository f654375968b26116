#include "worker/worker_config.h"

#include <unistd.h>

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/small_file.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace paratune {
namespace {

constexpr int64_t kMaxConfigBytes = 1 << 20;

// Collects the parser's complaints as "PATH:LINE:COLUMN: message" (1-based).
class ErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  explicit ErrorCollector(const std::string& path) : path_(path) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    errors_.push_back(absl::StrCat(path_, ":", line + 1, ":", column + 1, ": ", message));
  }
  std::string Errors() const { return absl::StrJoin(errors_, "; "); }

 private:
  const std::string& path_;
  std::vector<std::string> errors_;
};

// The absolute directory of `path`.
std::string AbsoluteDirectory(const std::string& path) {
  std::string absolute = path;
  if (path.empty() || path[0] != '/') {
    std::vector<char> cwd(4096);
    if (getcwd(cwd.data(), cwd.size()) != nullptr) absolute = absl::StrCat(cwd.data(), "/", path);
  }
  const size_t slash = absolute.rfind('/');
  return slash == std::string::npos ? "." : absolute.substr(0, slash == 0 ? 1 : slash);
}

void MakeAbsolute(const std::string& directory, std::string& path) {
  if (!path.empty() && path[0] != '/') path = absl::StrCat(directory, "/", path);
}

}  // namespace

absl::StatusOr<v1::WorkerConfig> LoadWorkerConfig(const std::string& path) {
  absl::StatusOr<std::string> text = ReadSmallFile(path, kMaxConfigBytes);
  if (!text.ok()) return text.status();
  return ParseWorkerConfig(path, *text);
}

absl::StatusOr<v1::WorkerConfig> ParseWorkerConfig(const std::string& path,
                                                   absl::string_view text) {
  v1::WorkerConfig config;
  ErrorCollector errors(path);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(text), &config)) {
    return absl::InvalidArgumentError(errors.Errors());
  }
  const std::string directory = AbsoluteDirectory(path);
  for (v1::CommandTemplate& launch : *config.mutable_command_templates()) {
    MakeAbsolute(directory, *launch.mutable_working_directory());
  }
  // mutable_replay() would make an absent section present.
  if (config.has_replay()) {
    for (std::string& table : *config.mutable_replay()->mutable_published_tables()) {
      MakeAbsolute(directory, table);
    }
    for (std::string& table : *config.mutable_replay()->mutable_run_tables()) {
      MakeAbsolute(directory, table);
    }
  }
  return config;
}

}  // namespace paratune
