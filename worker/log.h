// Structured one-line logs on stderr in logfmt, e.g.
//   time=2026-11-22T07:52:01.123Z level=info component=paratune-worker msg=registered
//   worker=workers/1
// so both people and log shippers can read them. The same format as server/log.h; the two
// belong in one shared library once common/ has one (server/ and worker/ must not depend on
// each other).
#ifndef PARATUNE_WORKER_LOG_H_
#define PARATUNE_WORKER_LOG_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace paratune {

enum class LogLevel { kInfo, kWarning, kError };

using LogFields = std::vector<std::pair<std::string, std::string>>;

// Writes one line. Values with spaces, quotes or '=' are quoted. Thread-safe: each line is
// written whole.
void Log(LogLevel level, absl::string_view msg, const LogFields& fields = {});

// Sets the component= field of every line (the binary's name). Call before other threads
// log.
void SetLogComponent(absl::string_view component);

}  // namespace paratune

#endif  // PARATUNE_WORKER_LOG_H_
