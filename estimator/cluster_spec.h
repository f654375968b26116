// GPU types (catalog) and clusters of identical nodes.
#ifndef PARATUNE_ESTIMATOR_CLUSTER_SPEC_H_
#define PARATUNE_ESTIMATOR_CLUSTER_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace paratune {

// One GPU type. Units: bytes, TFLOP/s (1e12), GB/s (1e9 bytes/s).
// Bounds of a GpuSpec's figures (ClusterSpec::Create), far beyond any GPU.
inline constexpr int64_t kMaxGpuMemoryBytes = int64_t{1} << 44;  // 16 TiB
inline constexpr double kMaxGpuTflops = 1e5;
inline constexpr double kMaxGpuBandwidthGbps = 1e5;

struct GpuSpec {
  std::string name;             // catalog name, e.g. "h100-94gb"
  int64_t memory_bytes = 0;     // as nvidia-smi reports the total
  double peak_bf16_tflops = 0;  // dense tensor-core peak
  double hbm_bandwidth_gbps = 0;
  double nvlink_bandwidth_gbps = 0;   // per GPU per direction
  double network_bandwidth_gbps = 0;  // inter-node, per GPU per direction
};

// The catalog GPU called `name` (case-insensitive); NOT_FOUND listing known names otherwise.
absl::StatusOr<GpuSpec> FindGpuPreset(absl::string_view name);

// Names of every catalog GPU, in catalog order.
std::vector<std::string> GpuPresetNames();

// The catalog type of a device called `device_name` (as CUDA or a worker names it, e.g.
// "NVIDIA H100 80GB HBM3", "simulated H100-94GB") with `memory_bytes` of memory: the catalog
// GPU whose family ("a100", "h100", "h200") the name contains, case-insensitive, and whose
// memory is within kGpuMemoryTolerance of memory_bytes, the closest if several. Empty when
// none is: the device is not a catalog GPU.
std::string CatalogGpuType(absl::string_view device_name, int64_t memory_bytes);
// Relative memory difference within which a device still counts as a catalog type: covers
// what drivers reserve (an H100 80GB reports 79.6 GiB) while telling 40 from 80 GB and
// 80 from 94 GB apart.
inline constexpr double kGpuMemoryTolerance = 0.06;

// The largest cluster (ClusterSpec::Create).
inline constexpr int64_t kMaxNumNodes = 65'536;
inline constexpr int64_t kMaxGpusPerNode = 64;

// num_nodes nodes of gpus_per_node identical GPUs. Immutable and always valid.
class ClusterSpec {
 public:
  // INVALID_ARGUMENT naming the field ("cluster.num_nodes (0) must be in [1, 65536]") when a
  // count or a GPU figure is out of range.
  static absl::StatusOr<ClusterSpec> Create(const GpuSpec& gpu, int64_t num_nodes,
                                            int64_t gpus_per_node);

  const GpuSpec& gpu() const { return gpu_; }
  int64_t num_nodes() const { return num_nodes_; }
  int64_t gpus_per_node() const { return gpus_per_node_; }
  int64_t world_size() const { return num_nodes_ * gpus_per_node_; }

 private:
  ClusterSpec(const GpuSpec& gpu, int64_t num_nodes, int64_t gpus_per_node)
      : gpu_(gpu), num_nodes_(num_nodes), gpus_per_node_(gpus_per_node) {}

  GpuSpec gpu_;
  int64_t num_nodes_;
  int64_t gpus_per_node_;
};

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_CLUSTER_SPEC_H_
