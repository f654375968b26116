// The host-side rules of cudnn_attention.h (no GPU needed).
#include "worker/cuda/cudnn_attention.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

TEST(CudnnAttentionTest, TheBackwardRefusesTheVersionsCudnnFrontendRefuses) {
  for (size_t version : {size_t{91000}, size_t{91001}}) {
    const absl::Status status = CheckCudnnAttentionBackwardVersion(version);
    EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented) << version;
    EXPECT_THAT(status.message(), HasSubstr(version == 91000 ? "cuDNN 9.10.0" : "cuDNN 9.10.1"));
  }
  for (size_t version : {size_t{90100}, size_t{90600}, size_t{91002}, size_t{91900}}) {
    EXPECT_TRUE(CheckCudnnAttentionBackwardVersion(version).ok()) << version;
  }
}

}  // namespace
}  // namespace paratune
