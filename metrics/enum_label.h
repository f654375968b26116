// Label values from protobuf enum value names, the way Prometheus labels are usually
// spelled: "PROBE_OUT_OF_MEMORY" with prefix "PROBE_" becomes "out_of_memory".
#ifndef PARATUNE_METRICS_ENUM_LABEL_H_
#define PARATUNE_METRICS_ENUM_LABEL_H_

#include <string>

#include "absl/strings/string_view.h"

namespace paratune::metrics {

// `enum_name` without `prefix` (when it starts with it), in lower case.
std::string EnumLabel(absl::string_view enum_name, absl::string_view prefix = "");

}  // namespace paratune::metrics

#endif  // PARATUNE_METRICS_ENUM_LABEL_H_
