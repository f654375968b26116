#include "metrics/family.h"

#include <cstdio>
#include <cstdlib>

namespace paratune::metrics {

void DieOfLabelMismatch(const MetricDescriptor& descriptor, size_t got) {
  std::fprintf(stderr, "metric %s has labels (%s) but was given %zu label values\n",
               descriptor.name.c_str(), absl::StrJoin(descriptor.label_names, ", ").c_str(), got);
  std::abort();
}

}  // namespace paratune::metrics
