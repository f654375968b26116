#include "estimator/llama_head_width.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

constexpr char kConsumer[] = "the native probe";

TEST(CheckLlamaHeadWidthTest, DenseLlamaAndMixtralPresetsPass) {
  for (const char* name : {"llama2-7b", "llama3.1-8b", "llama3.1-405b", "llama3.2-1b",
                           "mixtral-8x7b", "mixtral-8x22b", "llama4-scout", "llama4-maverick"}) {
    absl::StatusOr<ModelSpec> model = FindModelPreset(name);
    ASSERT_TRUE(model.ok()) << name;
    EXPECT_TRUE(CheckLlamaHeadWidth(*model, kConsumer).ok()) << name;
  }
}

TEST(CheckLlamaHeadWidthTest, Qwen3sWiderHeadsAreRefusedByName) {
  // Qwen3-MoE: head_dim 128 where h / a is 64 (30B-A3B: h 2048, a 32).
  for (const char* name : {"qwen3-30b-a3b", "qwen3-235b-a22b"}) {
    absl::StatusOr<ModelSpec> model = FindModelPreset(name);
    ASSERT_TRUE(model.ok()) << name;
    const absl::Status status = CheckLlamaHeadWidth(*model, kConsumer);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(status.message(),
                HasSubstr(absl::StrCat("model \"", name, "\" has model.head_dim")));
    EXPECT_THAT(status.message(), HasSubstr("the native probe cannot handle"));
  }
}

TEST(CheckLlamaHeadWidthTest, DenseModelWithOtherHeadWidthIsRefused) {
  ModelDimensions dims = {4096, 14336, 32, 32, 8, 128256, false};
  dims.head_dim = 128;  // h / a: the Llama width
  absl::StatusOr<ModelSpec> llama_width = ModelSpec::Create("same", dims);
  ASSERT_TRUE(llama_width.ok());
  EXPECT_TRUE(CheckLlamaHeadWidth(*llama_width, kConsumer).ok());
  dims.head_dim = 256;
  absl::StatusOr<ModelSpec> wider = ModelSpec::Create("wide", dims);
  ASSERT_TRUE(wider.ok());
  const absl::Status status = CheckLlamaHeadWidth(*wider, kConsumer);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "model \"wide\" has model.head_dim (256) other than model.hidden_size / "
            "model.num_attention_heads (128): the native probe cannot handle such attention yet "
            "(issue 26)");
}

}  // namespace
}  // namespace paratune
