#include "convert/worker_kind.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "convert/search_request.h"
#include "convert/search_text.h"
#include "estimator/cluster_spec.h"

namespace paratune {

WorkerKind WorkerKindOf(const v1::SearchSpec& spec) {
  WorkerKind kind;
  kind.backend = spec.probe().backend().empty() ? kDefaultBackend : spec.probe().backend();
  kind.command_template = spec.probe().command_template();
  kind.gpu_type = absl::AsciiStrToLower(spec.cluster().gpu().type());
  kind.gpu_memory_bytes = spec.cluster().gpu().memory_bytes();
  return kind;
}

std::string WorkerKindMismatch(const v1::Worker& worker, const WorkerKind& kind) {
  const auto& backends = worker.backends();
  if (std::find(backends.begin(), backends.end(), kind.backend) == backends.end()) {
    return absl::StrCat("it offers backends ", absl::StrJoin(backends, ", "), ", not ",
                        kind.backend);
  }
  if (!kind.command_template.empty()) {
    const auto& templates = worker.command_templates();
    if (std::find(templates.begin(), templates.end(), kind.command_template) == templates.end()) {
      return absl::StrCat("it has no launch template ", kind.command_template);
    }
  }
  if (!kind.gpu_type.empty()) {
    if (worker.gpu_type() != kind.gpu_type) {
      return absl::StrCat(
          "its GPUs are ",
          DescribeGpuType(worker.gpu_type(), worker.gpus().empty() ? "" : worker.gpus(0).name()),
          ", not ", kind.gpu_type);
    }
    return "";
  }
  const double memory = worker.gpus().empty() ? 0 : worker.gpus(0).memory_bytes();
  const double wanted = static_cast<double>(kind.gpu_memory_bytes);
  if (std::abs(memory - wanted) > kGpuMemoryTolerance * wanted) {
    return absl::StrCat("its GPUs have ", static_cast<int64_t>(memory),
                        " bytes, not the custom GPU's ", kind.gpu_memory_bytes);
  }
  return "";
}

}  // namespace paratune
