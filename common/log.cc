#include "common/log.h"

#include <atomic>
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace paratune {
namespace {

constexpr LogLevel kLevels[] = {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning,
                                LogLevel::kError};

std::string& Component() {
  static std::string* const component = new std::string("paratune");
  return *component;
}

std::atomic<LogLevel>& MinLevel() {
  static std::atomic<LogLevel> level{LogLevel::kInfo};
  return level;
}

std::string Quote(absl::string_view value) {
  if (!value.empty() && value.find_first_of(" \"=\t\n") == absl::string_view::npos) {
    return std::string(value);
  }
  return absl::StrCat(
      "\"", absl::StrReplaceAll(value, {{"\\", "\\\\"}, {"\"", "\\\""}, {"\n", "\\n"}}), "\"");
}

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

}  // namespace

void SetLogComponent(absl::string_view component) { Component() = std::string(component); }

void SetMinLogLevel(LogLevel level) { MinLevel().store(level, std::memory_order_relaxed); }

absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view field, absl::string_view text) {
  for (LogLevel level : kLevels) {
    if (text == LevelName(level)) return level;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, " (\"", text, "\") must be one of debug, info, warning, error"));
}

absl::Status ConfigureLog(absl::string_view component, absl::string_view log_level_flag) {
  SetLogComponent(component);
  absl::StatusOr<LogLevel> level = ParseLogLevel("--log_level", log_level_flag);
  if (!level.ok()) return level.status();
  SetMinLogLevel(*level);
  return absl::OkStatus();
}

void Log(LogLevel level, absl::string_view msg, const LogFields& fields) {
  if (level < MinLevel().load(std::memory_order_relaxed)) return;
  std::string line = absl::StrCat(
      "time=", absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()),
      " level=", LevelName(level), " component=", Component(), " msg=", Quote(msg));
  for (const auto& [key, value] : fields) absl::StrAppend(&line, " ", key, "=", Quote(value));
  line.push_back('\n');
  // One fwrite per line: stdio locks the stream, so concurrent lines never interleave.
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace paratune
