// The launch templates shipped in deploy/templates/ (megatron_llama.textproto,
// nemo_llama.textproto, megatron_bridge_llama.textproto, torchtitan_llama.textproto), built
// into the binary so that `paratune export` renders exactly the templates that command-backend
// probes run, without reading a file at run time.
#ifndef PARATUNE_LAUNCH_BUILTIN_TEMPLATES_H_
#define PARATUNE_LAUNCH_BUILTIN_TEMPLATES_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "launch/launch_template.h"
#include "proto/worker_config.pb.h"

namespace paratune {

// One shipped template, parsed and checked.
struct BuiltinTemplate {
  std::string file;  // e.g. "deploy/templates/megatron_llama.textproto"
  v1::CommandTemplate proto;
  LaunchTemplate launch;
};

// The shipped template called `name`, e.g. "megatron-llama", "nemo-llama" or
// "megatron-bridge-llama" or "torchtitan-llama". NOT_FOUND naming it when no shipped file
// defines it; INTERNAL when a shipped file does not parse or check (a build that
// //launch:builtin_templates_test fails). Thread-safe.
absl::StatusOr<BuiltinTemplate> FindBuiltinTemplate(absl::string_view name);

}  // namespace paratune

#endif  // PARATUNE_LAUNCH_BUILTIN_TEMPLATES_H_
