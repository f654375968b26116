// A command backend launch: the argv and environment templates of a CommandTemplate
// (proto/worker_config.proto), parsed and checked once when the worker starts, and rendered
// with a probe's LaunchValues.
#ifndef PARATUNE_WORKER_LAUNCH_TEMPLATE_H_
#define PARATUNE_WORKER_LAUNCH_TEMPLATE_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/worker_config.pb.h"
#include "worker/launch_values.h"

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
  // in env or with nothing after it, a condition value its placeholder cannot take, a bad
  // env name, too many env entries.
  static absl::StatusOr<LaunchTemplate> Create(const v1::CommandTemplate& launch,
                                               const std::string& field);

  // The command for one probe: conditional elements whose condition fails are left out.
  // Cannot fail for a template that Create accepted; StatusOr guards LaunchValues::Get.
  absl::StatusOr<Command> Render(const LaunchValues& values) const;

  // Whether some argv element or env value passes `placeholder` (a name such as "gbs", no
  // braces) to the command; a condition on it alone passes nothing.
  bool Uses(absl::string_view placeholder) const;

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
    std::optional<Condition> condition;
    Text text;
  };

  LaunchTemplate() = default;
  static absl::StatusOr<Text> ParseText(const std::string& field, const std::string& text);
  static absl::StatusOr<std::string> RenderText(const Text& text, const LaunchValues& values);

  std::vector<Argument> argv_;
  std::vector<std::pair<std::string, Text>> env_;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_LAUNCH_TEMPLATE_H_
