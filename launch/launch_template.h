// A launch: the argv and environment templates of a CommandTemplate
// (proto/worker_config.proto), parsed and checked once (when the worker starts, or when the
// CLI exports a configuration), and rendered with LaunchValues: a probe's, for the command
// backend, or an export's, whose framework arguments `paratune export` writes.
#ifndef PARATUNE_LAUNCH_LAUNCH_TEMPLATE_H_
#define PARATUNE_LAUNCH_LAUNCH_TEMPLATE_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "launch/launch_values.h"
#include "proto/worker_config.pb.h"

namespace paratune {

// Immutable; thread-safe.
class LaunchTemplate {
 public:
  // The command a probe runs.
  struct Command {
    std::vector<std::string> argv;
    std::map<std::string, std::string> env;
  };

  // Parses launch.argv and launch.env. INVALID_ARGUMENT naming the field (`field` is the
  // template's, e.g. "command_templates[1]") and value: no or too many argv elements, an
  // element too long, an unknown placeholder ("command_templates[1].argv[3] (\"--tp={tpp}\"):
  // unknown placeholder {tpp}"), an unterminated or stray brace, a condition on argv[0],
  // in env or with nothing after it, a condition value its placeholder cannot take, a
  // condition that passes an element outside probes only ({?probe=false}, {?probe!=true}:
  // it would be exported but never measured), a bad env name, too many env entries, a
  // framework_entry that is not exactly one unconditional argv element.
  static absl::StatusOr<LaunchTemplate> Create(const v1::CommandTemplate& launch,
                                               const std::string& field);

  // The command for one launch: conditional elements whose condition fails are left out.
  // Cannot fail with a probe's values for a template that Create accepted; with an export's,
  // FAILED_PRECONDITION for the placeholders an export has no value for (LaunchValues::Get).
  absl::StatusOr<Command> Render(const LaunchValues& values) const;

  // The framework's own arguments: the argv elements after framework_entry whose conditions
  // hold, rendered (with an export's values, those `paratune export` writes). FAILED_PRECONDITION
  // when the template names no framework_entry, or naming the element, e.g.
  // "command_templates[0].argv[9] (\"--port={master_port}\"): {master_port} has no value in an
  // export ...", when a kept element needs a placeholder that `values` has none for.
  absl::StatusOr<std::vector<std::string>> RenderFrameworkArguments(
      const LaunchValues& values) const;

  // The env entries whose placeholders all have a value in `values`, rendered, by name: with
  // an export's values, the environment the framework needs for the configuration
  // (Megatron-LM's CUDA_DEVICE_MAX_CONNECTIONS), without what only one probe's launch has (its
  // {gpu_ids}).
  std::map<std::string, std::string> RenderFrameworkEnvironment(const LaunchValues& values) const;

  // Whether some argv element or env value passes `placeholder` (a name such as "gbs", no
  // braces) to the command; a condition on it alone passes nothing.
  bool Uses(absl::string_view placeholder) const;
  // Whether the command depends on `placeholder` at all: Uses, or some argv element's
  // condition reads it.
  bool Mentions(absl::string_view placeholder) const;

 private:
  // Literal text, or a placeholder's name.
  struct Segment {
    bool placeholder = false;
    std::string text;
  };
  using Text = std::vector<Segment>;
  struct Condition {
    std::string placeholder;
    bool equal = true;
    std::string value;
  };
  struct Argument {
    std::string source;  // the element as the template writes it, for errors
    std::optional<Condition> condition;
    Text text;
  };

  LaunchTemplate() = default;
  static absl::StatusOr<Text> ParseText(const std::string& field, const std::string& text);
  static absl::StatusOr<std::string> RenderText(const Text& text, const LaunchValues& values);
  // The element rendered, or nullopt when its condition fails.
  static absl::StatusOr<std::optional<std::string>> RenderArgument(const Argument& argument,
                                                                   const LaunchValues& values);

  std::string field_;
  std::vector<Argument> argv_;
  // Index of the first argv element after framework_entry; nullopt when the template names
  // none.
  std::optional<size_t> framework_start_;
  std::vector<std::pair<std::string, Text>> env_;
};

// What of a launch's data-parallel sharding a template does not state.
enum class UnstatedSharding {
  kNone,  // the template states it
  // Sharded gradients or weights ({dp_sharding} gradients or full) in a template that states
  // the sharding by {distributed_optimizer} alone, never mentioning {dp_sharding}: it would
  // shard the optimizer states alone, or nothing. A template that mentions neither leaves the
  // sharding to its framework (TorchTitan's is FSDP, full).
  kShardedGradients,
  // Replicas of sharded groups ({distributed_optimizer_instances} above 1: hybrid sharding,
  // the partial distributed optimizer) in a template that mentions neither
  // {distributed_optimizer_instances} nor {dp_replicate}: it would shard over every rank.
  kHybridReplicas,
};

// The first part of `values`' sharding that `launch` cannot state, or kNone. By mention, as
// LaunchTemplate::Mentions: a template that mentions a placeholder is trusted to state it.
UnstatedSharding FindUnstatedSharding(const LaunchTemplate& launch, const LaunchValues& values);

}  // namespace paratune

#endif  // PARATUNE_LAUNCH_LAUNCH_TEMPLATE_H_
