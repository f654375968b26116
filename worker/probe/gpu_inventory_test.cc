#include "worker/probe/gpu_inventory.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

v1::Gpu H100(int64_t index) {
  v1::Gpu gpu;
  gpu.set_index(index);
  gpu.set_name("NVIDIA H100 80GB HBM3");
  gpu.set_memory_bytes(85'045'706'752);
  return gpu;
}

TEST(GpuInventoryTest, LinesRoundTrip) {
  const std::string text = FormatGpuLine(H100(0)) + "\n" + FormatGpuLine(H100(3)) + "\n";
  EXPECT_EQ(FormatGpuLine(H100(3)),
            "index: 3 name: \"NVIDIA H100 80GB HBM3\" memory_bytes: 85045706752");
  absl::StatusOr<std::vector<v1::Gpu>> gpus = ParseGpuInventory(text);
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[1].index(), 3);
  EXPECT_EQ((*gpus)[1].name(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ((*gpus)[1].memory_bytes(), 85'045'706'752);
}

TEST(GpuInventoryTest, GarbageIsRejectedQuotingTheLine) {
  absl::StatusOr<std::vector<v1::Gpu>> gpus = ParseGpuInventory("index: 0 name: oops\n");
  EXPECT_EQ(gpus.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(gpus.status().message(), HasSubstr("\"index: 0 name: oops\""));
  EXPECT_THAT(gpus.status().message(), HasSubstr("Expected string"));
}

TEST(GpuInventoryTest, IncompleteOrRepeatedGpusAreRejected) {
  EXPECT_EQ(ParseGpuInventory("index: 0 memory_bytes: 1\n").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseGpuInventory("index: 0 name: \"x\"\n").status().code(),
            absl::StatusCode::kInvalidArgument);
  const std::string twice = FormatGpuLine(H100(1)) + "\n" + FormatGpuLine(H100(1));
  EXPECT_EQ(ParseGpuInventory(twice).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GpuInventoryTest, NoGpusIsNotFound) {
  EXPECT_EQ(ParseGpuInventory("\n  \n").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace paratune
