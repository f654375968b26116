#include "estimator/model_spec.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

ModelDimensions Llama31_8b() { return {4096, 14336, 32, 32, 8, 128256, false}; }

TEST(ModelPresetTest, CatalogNamesInOrder) {
  EXPECT_THAT(ModelPresetNames(),
              ElementsAre("llama2-7b", "llama2-13b", "llama2-70b", "llama3.1-8b", "llama3.1-70b",
                          "llama3.1-405b", "llama3.2-1b", "llama3.2-3b"));
}

TEST(ModelPresetTest, EveryPresetIsValid) {
  for (const std::string& name : ModelPresetNames()) {
    absl::StatusOr<ModelSpec> model = FindModelPreset(name);
    ASSERT_TRUE(model.ok()) << name << ": " << model.status();
    EXPECT_EQ(model->name(), name);
  }
}

struct PublishedModel {
  const char* name;
  ModelDimensions dims;
  double parameters;  // published parameter count, within 1%
};

TEST(ModelPresetTest, PublishedDimensionsAndParameterCounts) {
  const PublishedModel models[] = {
      {"llama2-7b", {4096, 11008, 32, 32, 32, 32000, false}, 6.74e9},
      {"llama2-13b", {5120, 13824, 40, 40, 40, 32000, false}, 13.0e9},
      {"llama2-70b", {8192, 28672, 80, 64, 8, 32000, false}, 69.0e9},
      {"llama3.1-8b", {4096, 14336, 32, 32, 8, 128256, false}, 8.03e9},
      {"llama3.1-70b", {8192, 28672, 80, 64, 8, 128256, false}, 70.6e9},
      {"llama3.1-405b", {16384, 53248, 126, 128, 8, 128256, false}, 405.9e9},
      {"llama3.2-1b", {2048, 8192, 16, 32, 8, 128256, true}, 1.24e9},
      {"llama3.2-3b", {3072, 8192, 28, 24, 8, 128256, true}, 3.21e9},
  };
  for (const PublishedModel& published : models) {
    absl::StatusOr<ModelSpec> model = FindModelPreset(published.name);
    ASSERT_TRUE(model.ok()) << published.name;
    const ModelDimensions& d = model->dims();
    EXPECT_EQ(d.hidden_size, published.dims.hidden_size) << published.name;
    EXPECT_EQ(d.ffn_hidden_size, published.dims.ffn_hidden_size) << published.name;
    EXPECT_EQ(d.num_layers, published.dims.num_layers) << published.name;
    EXPECT_EQ(d.num_attention_heads, published.dims.num_attention_heads) << published.name;
    EXPECT_EQ(d.num_kv_heads, published.dims.num_kv_heads) << published.name;
    EXPECT_EQ(d.vocab_size, published.dims.vocab_size) << published.name;
    EXPECT_EQ(d.tied_embeddings, published.dims.tied_embeddings) << published.name;
    EXPECT_NEAR(model->ParameterCount(), published.parameters, 0.01 * published.parameters)
        << published.name;
  }
}

TEST(ModelPresetTest, Llama31_8bExactParameterCount) {
  absl::StatusOr<ModelSpec> model = FindModelPreset("llama3.1-8b");
  ASSERT_TRUE(model.ok());
  // Hugging Face reports 8,030,261,248 parameters for Meta-Llama-3.1-8B.
  EXPECT_EQ(model->ParameterCount(), 8030261248.0);
}

TEST(ModelPresetTest, LookupIsCaseInsensitive) {
  absl::StatusOr<ModelSpec> model = FindModelPreset("LLaMA3.1-70B");
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->name(), "llama3.1-70b");
}

TEST(ModelPresetTest, UnknownNameIsNotFoundListingKnownNames) {
  absl::StatusOr<ModelSpec> model = FindModelPreset("llama9");
  EXPECT_EQ(model.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(model.status().message(), HasSubstr("llama9"));
  EXPECT_THAT(model.status().message(), HasSubstr("llama2-7b, llama2-13b"));
  EXPECT_THAT(model.status().message(), HasSubstr("llama3.2-3b"));
}

TEST(ModelSpecTest, CreateKeepsNameAndDimensions) {
  absl::StatusOr<ModelSpec> model = ModelSpec::Create("mine", Llama31_8b());
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->name(), "mine");
  EXPECT_EQ(model->hidden_size(), 4096);
  EXPECT_EQ(model->num_kv_heads(), 8);
  EXPECT_FALSE(model->tied_embeddings());
}

TEST(ModelSpecTest, TiedEmbeddingsDropTheLmHead) {
  ModelDimensions dims = Llama31_8b();
  absl::StatusOr<ModelSpec> untied = ModelSpec::Create("u", dims);
  dims.tied_embeddings = true;
  absl::StatusOr<ModelSpec> tied = ModelSpec::Create("t", dims);
  ASSERT_TRUE(untied.ok() && tied.ok());
  EXPECT_EQ(untied->ParameterCount() - tied->ParameterCount(), 4096.0 * 128256);
}

struct InvalidCase {
  void (*mutate)(ModelDimensions&);
  const char* message;
};

TEST(ModelSpecTest, InvalidDimensionsNameTheField) {
  const InvalidCase cases[] = {
      {[](ModelDimensions& d) { d.hidden_size = 0; },
       "model.hidden_size (0) must be in [1, 1048576]"},
      {[](ModelDimensions& d) { d.ffn_hidden_size = 4194305; },
       "model.ffn_hidden_size (4194305) must be in [1, 4194304]"},
      {[](ModelDimensions& d) { d.num_layers = 4097; },
       "model.num_layers (4097) must be in [1, 4096]"},
      {[](ModelDimensions& d) { d.num_attention_heads = 0; },
       "model.num_attention_heads (0) must be in [1, 4096]"},
      {[](ModelDimensions& d) { d.num_attention_heads = 48; },
       "model.num_attention_heads (48) does not divide model.hidden_size (4096)"},
      {[](ModelDimensions& d) { d.num_kv_heads = 5; },
       "model.num_kv_heads (5) does not divide model.num_attention_heads (32)"},
      {[](ModelDimensions& d) { d.num_kv_heads = 64; },
       "model.num_kv_heads (64) must be in [1, 32]"},
      {[](ModelDimensions& d) { d.vocab_size = 0; },
       "model.vocab_size (0) must be in [1, 16777216]"},
  };
  for (const InvalidCase& c : cases) {
    ModelDimensions dims = Llama31_8b();
    c.mutate(dims);
    absl::StatusOr<ModelSpec> model = ModelSpec::Create("bad", dims);
    EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_EQ(model.status().message(), c.message);
  }
}

}  // namespace
}  // namespace paratune
