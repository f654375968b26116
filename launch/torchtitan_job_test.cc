#include "launch/torchtitan_job.h"

#include "absl/strings/str_cat.h"
#include "estimator/model_spec.h"
#include "estimator/parallel_config.h"
#include "estimator/training_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

ModelSpec Preset(const char* name) {
  absl::StatusOr<ModelSpec> model = FindModelPreset(name);
  EXPECT_TRUE(model.ok()) << model.status();
  return *model;
}

TrainingSpec Training(bool fp32_gradients = true) {
  TrainingOptions options;
  options.global_batch_size = 1024;
  options.seq_len = 8192;
  options.fp32_gradients = fp32_gradients;
  absl::StatusOr<TrainingSpec> training = TrainingSpec::Create(options);
  EXPECT_TRUE(training.ok()) << training.status();
  return *training;
}

TEST(TorchTitanJobTest, TheLlama31PresetsAreTheLlama3Flavors) {
  EXPECT_EQ(TorchTitanLlamaFlavor(Preset("llama3.1-8b")).value_or(""), "8B");
  EXPECT_EQ(TorchTitanLlamaFlavor(Preset("llama3.1-70b")).value_or(""), "70B");
  EXPECT_EQ(TorchTitanLlamaFlavor(Preset("llama3.1-405b")).value_or(""), "405B");
}

TEST(TorchTitanJobTest, AModelOfNoFlavorIsRefusedNamingItsDimensionsAndTheFlavors) {
  for (const char* name : {"llama2-7b", "llama3.2-1b", "mixtral-8x7b"}) {
    const absl::StatusOr<std::string> flavor = TorchTitanLlamaFlavor(Preset(name));
    EXPECT_EQ(flavor.status().code(), absl::StatusCode::kFailedPrecondition) << name;
    EXPECT_THAT(flavor.status().message(), HasSubstr(absl::StrCat("model \"", name, "\" (h ")));
    EXPECT_THAT(flavor.status().message(),
                HasSubstr("is none of TorchTitan v0.2.2's llama3 flavors, which are 8B (h 4096, "
                          "ffn 14336, L 32, a 32, kv 8)"));
  }
  // Same layers as the 8B but Llama-3.2's tied embeddings are not a flavor either.
  ModelDimensions tied = Preset("llama3.1-8b").dims();
  tied.tied_embeddings = true;
  const absl::StatusOr<ModelSpec> model = ModelSpec::Create("tied-8b", tied);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_THAT(TorchTitanLlamaFlavor(*model).status().message(), HasSubstr("tied embeddings"));
}

TEST(TorchTitanJobTest, WhatTheReleaseHasNoOptionForIsRefusedNamingTheField) {
  const ModelSpec model = Preset("llama3.1-8b");
  ParallelDims dims = MakeParallelDims(4, 2, 1, 1, 1);
  dims.dp_sharding = DataParallelSharding::kOptimizer;
  EXPECT_THAT(TorchTitanFlavorToRun(model, Training(), ParallelConfig::FromCheckedDims(dims))
                  .status()
                  .message(),
              HasSubstr("config.dp_sharding (optimizer): TorchTitan v0.2.2 has no "
                        "optimizer-only sharding"));
  dims.dp_sharding = DataParallelSharding::kNone;
  EXPECT_THAT(TorchTitanFlavorToRun(model, Training(), ParallelConfig::FromCheckedDims(dims))
                  .status()
                  .message(),
              HasSubstr("config.dp_sharding (none) with config.tensor_parallel (2) x "
                        "config.pipeline_parallel (1) x config.context_parallel (1) > 1"));
  dims.dp_sharding = DataParallelSharding::kFull;
  EXPECT_EQ(
      TorchTitanFlavorToRun(model, Training(), ParallelConfig::FromCheckedDims(dims)).value_or(""),
      "8B");
  const absl::Status bf16_gradients =
      TorchTitanFlavorToRun(model, Training(false), ParallelConfig::FromCheckedDims(dims)).status();
  EXPECT_EQ(bf16_gradients.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(bf16_gradients.message(), HasSubstr("training.fp32_gradients (false)"));
  dims.sequence_parallel = false;
  const absl::Status no_sp =
      TorchTitanFlavorToRun(model, Training(), ParallelConfig::FromCheckedDims(dims)).status();
  EXPECT_EQ(no_sp.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(no_sp.message(),
              HasSubstr("config.sequence_parallel (false) with config.tensor_parallel (2)"));
  // Without tensor parallelism there is nothing to shard by sequence.
  dims = MakeParallelDims(8, 1, 1, 1, 1);
  dims.sequence_parallel = false;
  dims.dp_sharding = DataParallelSharding::kNone;  // DDP alone
  EXPECT_EQ(
      TorchTitanFlavorToRun(model, Training(), ParallelConfig::FromCheckedDims(dims)).value_or(""),
      "8B");
}

}  // namespace
}  // namespace paratune
