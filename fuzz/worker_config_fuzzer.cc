// Fuzzes the worker's config file (worker/worker_config.h, protobuf text format) and what the
// command backend checks of each template it holds at start-up: the launch
// (launch/launch_template.h) and the log patterns (worker/training_log.h).
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_input.h"
#include "launch/launch_template.h"
#include "proto/worker_config.pb.h"
#include "worker/training_log.h"
#include "worker/worker_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using paratune::FuzzCheck;
  const absl::StatusOr<paratune::v1::WorkerConfig> config =
      paratune::ParseWorkerConfig("/fuzz/worker.textproto", paratune::FuzzText(data, size));
  if (!config.ok()) {
    FuzzCheck(config.status().code() == absl::StatusCode::kInvalidArgument,
              "a bad worker config is INVALID_ARGUMENT");
    return 0;
  }
  for (const paratune::v1::CommandTemplate& command : config->command_templates()) {
    FuzzCheck(command.working_directory().empty() || command.working_directory()[0] == '/',
              "a parsed config's working directories are absolute");
  }
  for (const std::string& path : config->replay().run_tables()) {
    FuzzCheck(path.empty() || path[0] == '/', "a parsed config's run tables are absolute");
  }
  for (int i = 0; i < config->command_templates_size(); ++i) {
    const paratune::v1::CommandTemplate& command = config->command_templates(i);
    const std::string field = absl::StrCat("command_templates[", i, "]");
    const absl::StatusOr<paratune::LaunchTemplate> launch =
        paratune::LaunchTemplate::Create(command, field);
    if (launch.ok()) {
      for (const char* placeholder : {"gbs", "tp", "dp", "probe", "recompute", "nosuch"}) {
        (void)launch->Uses(placeholder);
      }
    } else {
      FuzzCheck(launch.status().code() == absl::StatusCode::kInvalidArgument,
                "a bad launch template is INVALID_ARGUMENT");
    }
    const absl::StatusOr<paratune::TrainingLogPatterns> log =
        paratune::TrainingLogPatterns::Create(command.log(), field + ".log");
    if (!log.ok()) {
      FuzzCheck(log.status().code() == absl::StatusCode::kInvalidArgument,
                "bad log patterns are INVALID_ARGUMENT");
    }
  }
  return 0;
}
