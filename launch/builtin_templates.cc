#include "launch/builtin_templates.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/text_format.h"
#include "launch/builtin_template_files.h"

namespace paratune {

absl::StatusOr<BuiltinTemplate> FindBuiltinTemplate(absl::string_view name) {
  std::vector<std::string> names;
  for (const EmbeddedFile& file : BuiltinTemplateFiles()) {
    v1::WorkerConfig config;
    if (!google::protobuf::TextFormat::ParseFromString(file.text, &config)) {
      return absl::InternalError(
          absl::StrCat("the built-in ", file.path, " is not a paratune.v1.WorkerConfig"));
    }
    for (int i = 0; i < config.command_templates_size(); ++i) {
      const v1::CommandTemplate& proto = config.command_templates(i);
      names.push_back(proto.name());
      if (proto.name() != name) continue;
      absl::StatusOr<LaunchTemplate> launch =
          LaunchTemplate::Create(proto, absl::StrCat(file.path, ": command_templates[", i, "]"));
      if (!launch.ok()) {
        return absl::InternalError(
            absl::StrCat("the built-in template is bad: ", launch.status().message()));
      }
      return BuiltinTemplate{file.path, proto, *std::move(launch)};
    }
  }
  return absl::NotFoundError(absl::StrCat("no built-in launch template is called \"", name,
                                          "\" (there are ", absl::StrJoin(names, ", "), ")"));
}

}  // namespace paratune
