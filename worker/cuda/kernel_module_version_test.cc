#include "worker/cuda/kernel_module_version.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(KernelModuleVersionTest, ProprietaryModule) {
  EXPECT_EQ(KernelModuleVersionOf("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  "
                                  "Sat Aug 19 01:15:15 UTC 2023"),
            "535.104.05");
}

// The open module's form, which the project's H200 machines run (the word after "Module" was
// "for" there, driver 580.159.04 by nvidia-smi).
TEST(KernelModuleVersionTest, OpenModule) {
  EXPECT_EQ(
      KernelModuleVersionOf(
          "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build"),
      "580.159.04");
}

TEST(KernelModuleVersionTest, NoVersionIsEmpty) {
  EXPECT_EQ(KernelModuleVersionOf(""), "");
  EXPECT_EQ(KernelModuleVersionOf("NVRM version: NVIDIA UNIX x86_64 Kernel Module"), "");
  EXPECT_EQ(KernelModuleVersionOf("version 580 x86_64 .5"), "");
}

}  // namespace
}  // namespace paratune
