#include "estimator/cluster_spec.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kMiB = 1024 * 1024;

struct PublishedGpu {
  const char* name;
  int64_t memory_mib;
  double tflops, hbm, nvlink, network;
};

TEST(GpuPresetTest, CatalogValues) {
  EXPECT_THAT(GpuPresetNames(),
              ElementsAre("a100-40gb", "a100-80gb", "h100-80gb", "h100-94gb", "h200-141gb"));
  const PublishedGpu gpus[] = {
      {"a100-40gb", 40960, 312, 1555, 300, 25},   {"a100-80gb", 81920, 312, 2039, 300, 25},
      {"h100-80gb", 81559, 989, 3350, 450, 50},   {"h100-94gb", 95830, 989, 3900, 450, 50},
      {"h200-141gb", 143771, 989, 4800, 450, 50},
  };
  for (const PublishedGpu& published : gpus) {
    absl::StatusOr<GpuSpec> gpu = FindGpuPreset(published.name);
    ASSERT_TRUE(gpu.ok()) << published.name;
    EXPECT_EQ(gpu->name, published.name);
    EXPECT_EQ(gpu->memory_bytes, published.memory_mib * kMiB) << published.name;
    EXPECT_EQ(gpu->peak_bf16_tflops, published.tflops) << published.name;
    EXPECT_EQ(gpu->hbm_bandwidth_gbps, published.hbm) << published.name;
    EXPECT_EQ(gpu->nvlink_bandwidth_gbps, published.nvlink) << published.name;
    EXPECT_EQ(gpu->network_bandwidth_gbps, published.network) << published.name;
  }
}

TEST(GpuPresetTest, LookupIsCaseInsensitive) {
  absl::StatusOr<GpuSpec> gpu = FindGpuPreset("H100-80GB");
  ASSERT_TRUE(gpu.ok());
  EXPECT_EQ(gpu->name, "h100-80gb");
}

TEST(GpuPresetTest, UnknownIsNotFoundListingKnownNames) {
  absl::StatusOr<GpuSpec> gpu = FindGpuPreset("v100");
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(gpu.status().message(), HasSubstr("v100"));
  EXPECT_THAT(gpu.status().message(),
              HasSubstr("a100-40gb, a100-80gb, h100-80gb, h100-94gb, h200-141gb"));
}

TEST(CatalogGpuTypeTest, RealAndSimulatedDeviceNames) {
  constexpr int64_t kMiB = 1024 * 1024;
  // nvidia-smi's totals for the devices (MiB).
  EXPECT_EQ(CatalogGpuType("NVIDIA H100 80GB HBM3", 81559 * kMiB), "h100-80gb");
  EXPECT_EQ(CatalogGpuType("NVIDIA H100 NVL", 95830 * kMiB), "h100-94gb");
  EXPECT_EQ(CatalogGpuType("NVIDIA A100-SXM4-40GB", 40536 * kMiB), "a100-40gb");
  EXPECT_EQ(CatalogGpuType("NVIDIA A100-SXM4-80GB", 81920 * kMiB), "a100-80gb");
  EXPECT_EQ(CatalogGpuType("NVIDIA H200", 143771 * kMiB), "h200-141gb");
  EXPECT_EQ(CatalogGpuType("simulated H100-94GB", FindGpuPreset("h100-94gb")->memory_bytes),
            "h100-94gb");
}

TEST(CatalogGpuTypeTest, NoMatchIsEmpty) {
  constexpr int64_t kMiB = 1024 * 1024;
  EXPECT_EQ(CatalogGpuType("NVIDIA L40S", 46068 * kMiB), "");
  // The family matches, the memory does not: no H100 in the catalog has 40 GB.
  EXPECT_EQ(CatalogGpuType("NVIDIA H100 PCIe", 40960 * kMiB), "");
  EXPECT_EQ(CatalogGpuType("", 0), "");
}

TEST(ClusterSpecTest, WorldSize) {
  absl::StatusOr<ClusterSpec> cluster = ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 4, 8);
  ASSERT_TRUE(cluster.ok());
  EXPECT_EQ(cluster->world_size(), 32);
  EXPECT_EQ(cluster->num_nodes(), 4);
  EXPECT_EQ(cluster->gpus_per_node(), 8);
  EXPECT_EQ(cluster->gpu().name, "h100-80gb");
}

TEST(ClusterSpecTest, CountsOutOfRangeNameTheField) {
  const GpuSpec gpu = *FindGpuPreset("a100-80gb");
  absl::StatusOr<ClusterSpec> cluster = ClusterSpec::Create(gpu, 0, 8);
  EXPECT_EQ(cluster.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cluster.status().message(), "cluster.num_nodes (0) must be in [1, 65536]");
  cluster = ClusterSpec::Create(gpu, 65537, 8);
  EXPECT_EQ(cluster.status().code(), absl::StatusCode::kInvalidArgument);
  cluster = ClusterSpec::Create(gpu, 1, 65);
  EXPECT_EQ(cluster.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cluster.status().message(), "cluster.gpus_per_node (65) must be in [1, 64]");
}

TEST(ClusterSpecTest, GpuFiguresMustBePositiveAndBelievable) {
  GpuSpec gpu = *FindGpuPreset("a100-80gb");
  gpu.memory_bytes = 0;
  absl::StatusOr<ClusterSpec> cluster = ClusterSpec::Create(gpu, 1, 8);
  EXPECT_EQ(cluster.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cluster.status().message(),
            "cluster.gpu.memory_bytes (0) must be in [1, 17592186044416]");

  gpu = *FindGpuPreset("a100-80gb");
  gpu.memory_bytes = int64_t{1} << 50;
  EXPECT_THAT(ClusterSpec::Create(gpu, 1, 8).status().message(),
              HasSubstr("cluster.gpu.memory_bytes (1125899906842624) must be in"));

  gpu = *FindGpuPreset("a100-80gb");
  gpu.hbm_bandwidth_gbps = 1e300;
  EXPECT_EQ(ClusterSpec::Create(gpu, 1, 8).status().message(),
            "cluster.gpu.hbm_bandwidth_gbps (1e+300) must be in (0, 100000]");
  gpu.hbm_bandwidth_gbps = std::nan("");
  EXPECT_THAT(ClusterSpec::Create(gpu, 1, 8).status().message(),
              HasSubstr("cluster.gpu.hbm_bandwidth_gbps (nan)"));

  gpu = *FindGpuPreset("a100-80gb");
  gpu.network_bandwidth_gbps = -3;
  cluster = ClusterSpec::Create(gpu, 1, 8);
  EXPECT_EQ(cluster.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(cluster.status().message(), HasSubstr("cluster.gpu.network_bandwidth_gbps (-3)"));

  gpu = *FindGpuPreset("a100-80gb");
  gpu.peak_bf16_tflops = 0;
  EXPECT_THAT(ClusterSpec::Create(gpu, 1, 8).status().message(),
              HasSubstr("cluster.gpu.peak_bf16_tflops (0)"));
}

}  // namespace
}  // namespace paratune
