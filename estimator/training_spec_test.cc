#include "estimator/training_spec.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(TrainingSpecTest, KeepsOptions) {
  TrainingOptions options;
  options.global_batch_size = 1024;
  options.seq_len = 8192;
  options.fp8 = true;
  options.fp8_param_gather = true;
  options.distributed_optimizer = false;
  options.fp32_gradients = false;
  options.flash_attention = false;
  options.tp_comm_overlap = true;
  absl::StatusOr<TrainingSpec> training = TrainingSpec::Create(options);
  ASSERT_TRUE(training.ok());
  EXPECT_EQ(training->global_batch_size(), 1024);
  EXPECT_EQ(training->seq_len(), 8192);
  EXPECT_TRUE(training->fp8());
  EXPECT_TRUE(training->fp8_param_gather());
  EXPECT_FALSE(training->distributed_optimizer());
  EXPECT_FALSE(training->fp32_gradients());
  EXPECT_FALSE(training->flash_attention());
  EXPECT_TRUE(training->tp_comm_overlap());
}

TEST(TrainingSpecTest, DefaultsAreThePapersSetting) {
  const TrainingOptions options;
  EXPECT_FALSE(options.fp8);
  EXPECT_FALSE(options.fp8_param_gather);
  EXPECT_TRUE(options.distributed_optimizer);
  EXPECT_TRUE(options.fp32_gradients);
  EXPECT_TRUE(options.flash_attention);
  EXPECT_FALSE(options.tp_comm_overlap);  // Megatron-LM's default
}

TEST(TrainingSpecTest, OutOfRangeNamesTheField) {
  TrainingOptions options;
  options.global_batch_size = 8;
  options.seq_len = 0;
  absl::StatusOr<TrainingSpec> training = TrainingSpec::Create(options);
  EXPECT_EQ(training.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(training.status().message(), "training.seq_len (0) must be in [1, 4194304]");

  options.seq_len = 4194305;
  EXPECT_EQ(TrainingSpec::Create(options).status().code(), absl::StatusCode::kInvalidArgument);

  options.seq_len = 4096;
  options.global_batch_size = 0;
  training = TrainingSpec::Create(options);
  EXPECT_EQ(training.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(training.status().message(), "training.global_batch_size (0) must be in [1, 16777216]");
  options.global_batch_size = 16777217;
  EXPECT_EQ(TrainingSpec::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TrainingSpecTest, Fp8ParamGatherNeedsFp8) {
  TrainingOptions options;
  options.global_batch_size = 8;
  options.seq_len = 4096;
  options.fp8_param_gather = true;
  absl::StatusOr<TrainingSpec> training = TrainingSpec::Create(options);
  EXPECT_EQ(training.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(training.status().message(),
            "training.fp8_param_gather (true) needs training.fp8 (false) to be true");
}

}  // namespace
}  // namespace paratune
