// The syntax of a command backend's launch template name (ProbeSettings.command_template):
// checked by the server on searches and registrations and by the worker on its config file,
// so that both sides agree on what a name is.
#ifndef PARATUNE_COMMON_TEMPLATE_NAME_H_
#define PARATUNE_COMMON_TEMPLATE_NAME_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace paratune {

// Nothing when `name` is 1 .. 64 bytes of letters, digits, '_', '-' and '.'; else what is
// wrong with it, to follow the name of the field it is in: "(\"a b\") must be 1 to 64
// letters, digits, '_', '-' or '.'".
std::optional<std::string> TemplateNameProblem(absl::string_view name);

// OK when TemplateNameProblem finds nothing; else INVALID_ARGUMENT "<field> <problem>".
absl::Status ValidateTemplateName(absl::string_view field, absl::string_view name);

}  // namespace paratune

#endif  // PARATUNE_COMMON_TEMPLATE_NAME_H_
