// The syntax of a command backend's launch template name (ProbeSettings.command_template):
// checked by the server on searches and registrations and by the worker on its config file,
// so that both sides agree on what a name is.
#ifndef PARATUNE_COMMON_TEMPLATE_NAME_H_
#define PARATUNE_COMMON_TEMPLATE_NAME_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace paratune {

// OK when `name` is 1 .. 64 bytes of letters, digits, '_', '-' and '.'; else
// INVALID_ARGUMENT naming `field` and the value.
absl::Status ValidateTemplateName(absl::string_view field, absl::string_view name);

}  // namespace paratune

#endif  // PARATUNE_COMMON_TEMPLATE_NAME_H_
