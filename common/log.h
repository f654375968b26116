// Structured one-line logs on stderr in logfmt, e.g.
//   time=2026-11-22T07:52:01.123Z level=info component=paratune-server msg="listening" port=50051
// so both people and log shippers (Loki, Fluent Bit, journald) can read them. Every binary
// of paratune logs through this one library.
#ifndef PARATUNE_COMMON_LOG_H_
#define PARATUNE_COMMON_LOG_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace paratune {

// In increasing severity.
enum class LogLevel { kDebug, kInfo, kWarning, kError };

using LogFields = std::vector<std::pair<std::string, std::string>>;

// Writes one line when `level` is at least the minimum level. Values with spaces, quotes or
// '=' are quoted. Thread-safe: each line is written whole.
void Log(LogLevel level, absl::string_view msg, const LogFields& fields = {});

// Sets the component= field of every line (the binary's name). Call before other threads
// log.
void SetLogComponent(absl::string_view component);

// Lines below `level` are dropped (the default is kInfo). Thread-safe.
void SetMinLogLevel(LogLevel level);

// "debug", "info", "warning" or "error" (as printed in level=). INVALID_ARGUMENT naming
// `field` and the value otherwise.
absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view field, absl::string_view text);

// What each binary does first: SetLogComponent(component), then SetMinLogLevel of its
// --log_level value. INVALID_ARGUMENT naming --log_level and the value for an unknown level
// (the minimum level is then left as it was).
absl::Status ConfigureLog(absl::string_view component, absl::string_view log_level_flag);

}  // namespace paratune

#endif  // PARATUNE_COMMON_LOG_H_
