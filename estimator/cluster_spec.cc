#include "estimator/cluster_spec.h"

#include <array>
#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "estimator/field_checks.h"

namespace paratune {
namespace {

constexpr int64_t kMiB = 1024 * 1024;

struct GpuPreset {
  const char* name;
  int64_t memory_mib;
  double peak_bf16_tflops;
  double hbm_bandwidth_gbps;
  double nvlink_bandwidth_gbps;
  double network_bandwidth_gbps;
};

// NVIDIA datasheets (A100, H100 SXM, H100 NVL, H200 SXM): dense bf16 peak, HBM bandwidth,
// NVLink 600 / 900 GB/s bidirectional = 300 / 450 per direction; one HDR (200 Gb/s) or NDR
// (400 Gb/s) NIC per GPU. Memory as nvidia-smi reports the total, in MiB.
constexpr std::array<GpuPreset, 5> kGpuPresets = {{
    {"a100-40gb", 40960, 312, 1555, 300, 25},
    {"a100-80gb", 81920, 312, 2039, 300, 25},
    {"h100-80gb", 81559, 989, 3350, 450, 50},
    {"h100-94gb", 95830, 989, 3900, 450, 50},
    {"h200-141gb", 143771, 989, 4800, 450, 50},
}};

}  // namespace

absl::StatusOr<GpuSpec> FindGpuPreset(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (const GpuPreset& preset : kGpuPresets) {
    if (lower != preset.name) continue;
    GpuSpec gpu;
    gpu.name = preset.name;
    gpu.memory_bytes = preset.memory_mib * kMiB;
    gpu.peak_bf16_tflops = preset.peak_bf16_tflops;
    gpu.hbm_bandwidth_gbps = preset.hbm_bandwidth_gbps;
    gpu.nvlink_bandwidth_gbps = preset.nvlink_bandwidth_gbps;
    gpu.network_bandwidth_gbps = preset.network_bandwidth_gbps;
    return gpu;
  }
  return absl::NotFoundError(absl::StrCat(
      "GPU \"", name, "\" is not in the catalog; known: ", absl::StrJoin(GpuPresetNames(), ", ")));
}

std::vector<std::string> GpuPresetNames() {
  std::vector<std::string> names;
  names.reserve(kGpuPresets.size());
  for (const GpuPreset& preset : kGpuPresets) names.emplace_back(preset.name);
  return names;
}

std::string CatalogGpuType(absl::string_view device_name, int64_t memory_bytes) {
  const std::string lower = absl::AsciiStrToLower(device_name);
  std::string best;
  double best_difference = kGpuMemoryTolerance;
  for (const GpuPreset& preset : kGpuPresets) {
    const absl::string_view name = preset.name;
    const absl::string_view family = name.substr(0, name.find('-'));
    if (lower.find(std::string(family)) == std::string::npos) continue;
    const double catalog_bytes = static_cast<double>(preset.memory_mib * kMiB);
    const double difference =
        std::abs(static_cast<double>(memory_bytes) - catalog_bytes) / catalog_bytes;
    if (difference <= best_difference) {
      best = preset.name;
      best_difference = difference;
    }
  }
  return best;
}

absl::StatusOr<ClusterSpec> ClusterSpec::Create(const GpuSpec& gpu, int64_t num_nodes,
                                                int64_t gpus_per_node) {
  // Ranges are those documented on paratune.v1.ClusterSpec (proto/specs.proto).
  absl::Status status = CheckIntInRange("cluster.num_nodes", num_nodes, 1, kMaxNumNodes);
  if (!status.ok()) return status;
  status = CheckIntInRange("cluster.gpus_per_node", gpus_per_node, 1, kMaxGpusPerNode);
  if (!status.ok()) return status;
  // Upper bounds far beyond any GPU, so that a typo (or a unit slip) is an error rather than a
  // plan for an impossible machine: 16 TiB of memory, 100 PFLOP/s, 100 TB/s.
  status = CheckIntInRange("cluster.gpu.memory_bytes", gpu.memory_bytes, 1, kMaxGpuMemoryBytes);
  if (!status.ok()) return status;
  status = CheckDoublePositiveAtMost("cluster.gpu.peak_bf16_tflops", gpu.peak_bf16_tflops,
                                     kMaxGpuTflops);
  if (!status.ok()) return status;
  for (const auto& [field, value] : {
           std::make_pair("cluster.gpu.hbm_bandwidth_gbps", gpu.hbm_bandwidth_gbps),
           std::make_pair("cluster.gpu.nvlink_bandwidth_gbps", gpu.nvlink_bandwidth_gbps),
           std::make_pair("cluster.gpu.network_bandwidth_gbps", gpu.network_bandwidth_gbps),
       }) {
    status = CheckDoublePositiveAtMost(field, value, kMaxGpuBandwidthGbps);
    if (!status.ok()) return status;
  }
  return ClusterSpec(gpu, num_nodes, gpus_per_node);
}

}  // namespace paratune
