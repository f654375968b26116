// Reading the worker's config file (proto/worker_config.proto) from protobuf text format.
// What its sections mean is checked where they are used: CommandBackend::Create and
// ReplayBackend::Create reject a bad template or table at start-up, naming the field.
#ifndef PARATUNE_WORKER_WORKER_CONFIG_H_
#define PARATUNE_WORKER_WORKER_CONFIG_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/worker_config.pb.h"

namespace paratune {

// Reads and parses `path` (at most 1 MiB) and makes every relative path in it
// (command_templates[].working_directory, replay.published_tables[], replay.run_tables[])
// absolute, taken from the file's own directory, so that the config means the same whatever
// directory the worker starts in. ReadSmallFile's errors (NOT_FOUND for a missing file, with
// the path); INVALID_ARGUMENT for a larger file, or "PATH:LINE:COLUMN: ..." for text that is
// not a WorkerConfig (unknown fields included).
absl::StatusOr<v1::WorkerConfig> LoadWorkerConfig(const std::string& path);

// The same for text already in memory; `path` names it in errors and anchors relative paths.
absl::StatusOr<v1::WorkerConfig> ParseWorkerConfig(const std::string& path, absl::string_view text);

}  // namespace paratune

#endif  // PARATUNE_WORKER_WORKER_CONFIG_H_
