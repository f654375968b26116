#include "server/core/probe_needs.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "convert/search_text.h"
#include "estimator/cluster_spec.h"
#include "server/core/gang_placement.h"
#include "server/core/launch_target.h"

namespace paratune {
namespace {

std::string GpuTypeShown(const v1::Worker& worker) {
  return DescribeGpuType(worker.gpu_type(), worker.gpus().empty() ? "" : worker.gpus(0).name());
}

}  // namespace

ProbeNeeds NeedsOf(const v1::SearchSpec& spec, std::string probe, int64_t ranks) {
  ProbeNeeds needs;
  needs.probe = std::move(probe);
  needs.backend = spec.probe().backend();
  needs.command_template = spec.probe().command_template();
  needs.gpu_type = absl::AsciiStrToLower(spec.cluster().gpu().type());
  needs.gpu_memory_bytes = spec.cluster().gpu().memory_bytes();
  needs.gpus_per_node = spec.cluster().gpus_per_node();
  needs.ranks = ranks;
  return needs;
}

std::pair<v1::ProbeScope, ProbeNeeds> ScopedNeedsOf(
    const v1::SearchSpec& spec, const v1::ParallelConfig& config, std::string probe,
    absl::FunctionRef<bool(const ProbeNeeds& full)> can_host) {
  v1::ProbeScope scope = spec.probe().scope();
  ProbeNeeds full =
      NeedsOf(spec, probe, spec.cluster().num_nodes() * spec.cluster().gpus_per_node());
  if (scope == v1::PROBE_SCOPE_UNSPECIFIED) {
    scope = can_host(full) ? v1::PROBE_SCOPE_FULL : v1::PROBE_SCOPE_REPLICA;
  }
  if (scope == v1::PROBE_SCOPE_FULL) return {scope, std::move(full)};
  return {scope, NeedsOf(spec, std::move(probe),
                         config.tensor_parallel() * config.pipeline_parallel() *
                             config.context_parallel())};
}

std::string ReservedProbe(const v1::Worker& worker) {
  auto reserved = worker.labels().find(kProbeReservationLabel);
  return reserved == worker.labels().end() ? "" : reserved->second;
}

bool ReservedFor(const v1::Worker& worker, const std::string& probe) {
  return !probe.empty() && ReservedProbe(worker) == probe;
}

std::string WorkerMismatch(const v1::Worker& worker, const ProbeNeeds& needs, bool probe_reserved) {
  const bool reserved_elsewhere =
      worker.labels().contains(kProbeReservationLabel) && !ReservedFor(worker, needs.probe);
  if (reserved_elsewhere) return "it is reserved for another probe";
  if (probe_reserved && !ReservedFor(worker, needs.probe)) {
    return "workers were started for this probe";
  }
  const auto& backends = worker.backends();
  if (std::find(backends.begin(), backends.end(), needs.backend) == backends.end()) {
    return absl::StrCat("it offers backends ", absl::StrJoin(backends, ", "), ", not ",
                        needs.backend);
  }
  if (!needs.command_template.empty()) {
    const auto& templates = worker.command_templates();
    if (std::find(templates.begin(), templates.end(), needs.command_template) == templates.end()) {
      return absl::StrCat("it has no launch template ", needs.command_template);
    }
  }
  if (!needs.gpu_type.empty()) {
    if (worker.gpu_type() != needs.gpu_type) {
      return absl::StrCat("its GPUs are ", GpuTypeShown(worker), ", not ", needs.gpu_type);
    }
  } else {
    const double memory = worker.gpus().empty() ? 0 : worker.gpus(0).memory_bytes();
    const double wanted = static_cast<double>(needs.gpu_memory_bytes);
    if (std::abs(memory - wanted) > kGpuMemoryTolerance * wanted) {
      return absl::StrCat("its GPUs have ", static_cast<int64_t>(memory),
                          " bytes, not the custom GPU's ", needs.gpu_memory_bytes);
    }
  }
  const std::vector<int64_t> shares = NodeShares(needs.ranks, needs.gpus_per_node);
  const int64_t smallest = *std::min_element(shares.begin(), shares.end());
  if (worker.gpus_size() < smallest) {
    return absl::StrCat("it has ", worker.gpus_size(), " GPUs, fewer than a node share of ",
                        smallest);
  }
  return "";
}

std::string DescribeNeeds(const ProbeNeeds& needs) {
  const std::vector<int64_t> shares = NodeShares(needs.ranks, needs.gpus_per_node);
  const std::string type = needs.gpu_type.empty()
                               ? absl::StrCat("custom GPU (", needs.gpu_memory_bytes, " bytes)")
                               : needs.gpu_type;
  std::string nodes = shares.size() == 1
                          ? absl::StrCat("1 node of ", shares[0], " x ", type)
                          : absl::StrCat(shares.size(), " nodes of ", needs.gpus_per_node, " x ",
                                         type, " (", needs.ranks, " GPUs)");
  absl::StrAppend(&nodes, " with backend ", needs.backend);
  if (!needs.command_template.empty()) {
    absl::StrAppend(&nodes, " and template ", needs.command_template);
  }
  return nodes;
}

}  // namespace paratune
