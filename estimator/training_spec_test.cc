#include "estimator/training_spec.h"

#include <cmath>
#include <string>

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(TrainingSpecTest, KeepsOptions) {
  TrainingOptions options;
  options.global_batch_size = 1024;
  options.seq_len = 8192;
  options.fp8 = true;
  options.fp8_param_gather = true;
  options.fp32_gradients = false;
  options.flash_attention = false;
  options.tp_comm_overlap = true;
  options.cp_comm_type = CpCommType::kAllGather;
  absl::StatusOr<TrainingSpec> training = TrainingSpec::Create(options);
  ASSERT_TRUE(training.ok());
  EXPECT_EQ(training->global_batch_size(), 1024);
  EXPECT_EQ(training->seq_len(), 8192);
  EXPECT_TRUE(training->fp8());
  EXPECT_TRUE(training->fp8_param_gather());
  EXPECT_TRUE(training->distributed_optimizer());
  EXPECT_FALSE(training->fp32_gradients());
  EXPECT_FALSE(training->flash_attention());
  EXPECT_TRUE(training->tp_comm_overlap());
  EXPECT_EQ(training->cp_comm_type(), CpCommType::kAllGather);

  options.fp8_param_gather = false;
  options.distributed_optimizer = false;
  training = TrainingSpec::Create(options);
  ASSERT_TRUE(training.ok());
  EXPECT_FALSE(training->distributed_optimizer());
}

TEST(TrainingSpecTest, DefaultsAreThePapersSetting) {
  const TrainingOptions options;
  EXPECT_FALSE(options.fp8);
  EXPECT_FALSE(options.fp8_param_gather);
  EXPECT_TRUE(options.distributed_optimizer);
  EXPECT_TRUE(options.fp32_gradients);
  EXPECT_TRUE(options.flash_attention);
  EXPECT_FALSE(options.tp_comm_overlap);              // Megatron-LM's default
  EXPECT_EQ(options.cp_comm_type, CpCommType::kP2p);  // Megatron-LM's default
  EXPECT_EQ(options.moe_capacity_factor, 0);          // dropless, Megatron-LM's default
  EXPECT_EQ(options.moe_token_dispatcher, TokenDispatcher::kAllToAll);  // NVIDIA's recipes
  EXPECT_TRUE(options.moe_grouped_gemm);                                // NVIDIA's recipes
  EXPECT_FALSE(options.torch_compile);                                  // TorchTitan's default
}

TEST(TrainingSpecTest, TokenDispatcherNamesAreWhatMegatronLmTakes) {
  // megatron/training/arguments.py at core_v0.19.0: --moe-token-dispatcher-type choices.
  EXPECT_STREQ(TokenDispatcherName(TokenDispatcher::kAllToAll), "alltoall");
  EXPECT_STREQ(TokenDispatcherName(TokenDispatcher::kAllGather), "allgather");
  EXPECT_STREQ(TokenDispatcherName(TokenDispatcher::kFlexDeepEp), "flex");
  EXPECT_STREQ(TokenDispatcherName(TokenDispatcher::kFlexHybridEp), "flex");
  // transformer_config.py:869 at core_v0.19.0: moe_flex_dispatcher_backend's values.
  EXPECT_STREQ(FlexDispatcherBackendName(TokenDispatcher::kFlexDeepEp), "deepep");
  EXPECT_STREQ(FlexDispatcherBackendName(TokenDispatcher::kFlexHybridEp), "hybridep");
  EXPECT_EQ(FlexDispatcherBackendName(TokenDispatcher::kAllToAll), nullptr);
  EXPECT_EQ(FlexDispatcherBackendName(TokenDispatcher::kAllGather), nullptr);
  EXPECT_STREQ(TokenDispatcherChoice(TokenDispatcher::kFlexHybridEp), "flex_hybridep");
  EXPECT_STREQ(TokenDispatcherChoice(TokenDispatcher::kAllGather), "allgather");
  EXPECT_TRUE(IsFlexDispatcher(TokenDispatcher::kFlexDeepEp));
  EXPECT_FALSE(IsFlexDispatcher(TokenDispatcher::kAllToAll));
}

TEST(TrainingSpecTest, FlexDispatcherIsMegatronLms) {
  TrainingOptions options;
  options.global_batch_size = 8;
  options.seq_len = 4096;
  options.moe_token_dispatcher = TokenDispatcher::kFlexHybridEp;
  EXPECT_TRUE(TrainingSpec::Create(options).ok());
  options.moe_capacity_factor = 1;
  EXPECT_TRUE(TrainingSpec::Create(options).ok());
  options.moe_token_dispatcher = TokenDispatcher::kFlexDeepEp;
  EXPECT_EQ(TrainingSpec::Create(options).status().message(),
            "training.moe_capacity_factor (1) needs padding to capacity, which "
            "training.moe_token_dispatcher flex_deepep does not support: use 0 (dropless) or "
            "flex_hybridep");
  options.moe_capacity_factor = 0;
  options.moe_token_dispatcher = TokenDispatcher::kFlexHybridEp;
  options.framework = Framework::kTorchTitan;
  EXPECT_EQ(TrainingSpec::Create(options).status().message(),
            "training.moe_token_dispatcher (flex_hybridep) is Megatron-LM's flex dispatcher; "
            "training.framework torchtitan has no such dispatcher");
}

TEST(TrainingSpecTest, CapacityFactorIsZeroOrPositive) {
  TrainingOptions options;
  options.global_batch_size = 8;
  options.seq_len = 4096;
  options.moe_capacity_factor = 1.25;
  absl::StatusOr<TrainingSpec> training = TrainingSpec::Create(options);
  ASSERT_TRUE(training.ok()) << training.status();
  EXPECT_EQ(training->moe_capacity_factor(), 1.25);
  for (double bad : {-1.0, 1001.0, std::nan("")}) {
    options.moe_capacity_factor = bad;
    training = TrainingSpec::Create(options);
    EXPECT_EQ(training.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  options.moe_capacity_factor = -1;
  EXPECT_EQ(TrainingSpec::Create(options).status().message(),
            "training.moe_capacity_factor (-1) must be 0 (dropless) or in (0, 1000]");
}

TEST(TrainingSpecTest, ExpertParallelOverlapNeedsTheAllToAllOrFlexDispatcher) {
  TrainingOptions options;
  options.global_batch_size = 8;
  options.seq_len = 4096;
  options.moe_expert_parallel_overlap = true;
  EXPECT_TRUE(TrainingSpec::Create(options).ok());
  options.moe_token_dispatcher = TokenDispatcher::kFlexDeepEp;
  EXPECT_TRUE(TrainingSpec::Create(options).ok());
  options.moe_token_dispatcher = TokenDispatcher::kAllGather;
  EXPECT_EQ(TrainingSpec::Create(options).status().message(),
            "training.moe_expert_parallel_overlap (true) needs training.moe_token_dispatcher "
            "alltoall or flex, not allgather: Megatron-LM overlaps only those dispatchers' "
            "communication");
}

// transformer_config.py:1644-1650 and 2706-2708 at core_v0.19.0.
TEST(TrainingSpecTest, SharedExpertOverlapNeedsTheAllToAllAndNotTheExpertParallelOverlap) {
  TrainingOptions options;
  options.global_batch_size = 16;
  options.seq_len = 4096;
  options.moe_shared_expert_overlap = true;
  EXPECT_TRUE(TrainingSpec::Create(options).ok());
  TrainingOptions all_gather = options;
  all_gather.moe_token_dispatcher = TokenDispatcher::kAllGather;
  EXPECT_EQ(TrainingSpec::Create(all_gather).status().message(),
            "training.moe_shared_expert_overlap (true) needs training.moe_token_dispatcher "
            "alltoall or flex, not allgather: Megatron-LM overlaps the shared experts only with "
            "those dispatchers");
  TrainingOptions both = options;
  both.moe_expert_parallel_overlap = true;
  EXPECT_EQ(TrainingSpec::Create(both).status().message(),
            "training.moe_shared_expert_overlap (true) cannot go with "
            "training.moe_expert_parallel_overlap (true): Megatron-LM refuses the two overlaps "
            "together");
  TrainingOptions titan = options;
  titan.framework = Framework::kTorchTitan;
  EXPECT_EQ(TrainingSpec::Create(titan).status().message(),
            "training.moe_shared_expert_overlap (true) is Megatron-LM's "
            "--moe-shared-expert-overlap; training.framework torchtitan has no such switch");
}

TEST(TrainingSpecTest, TorchCompileIsTorchTitansAndItsAsyncTensorParallelismNeedsIt) {
  TrainingOptions options;
  options.global_batch_size = 16;
  options.seq_len = 8192;
  options.torch_compile = true;
  absl::StatusOr<TrainingSpec> training = TrainingSpec::Create(options);
  EXPECT_EQ(training.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(training.status().message().find("training.torch_compile (true)"), std::string::npos)
      << training.status();
  EXPECT_NE(training.status().message().find("framework megatron"), std::string::npos);

  options.framework = Framework::kTorchTitan;
  training = TrainingSpec::Create(options);
  ASSERT_TRUE(training.ok()) << training.status();
  EXPECT_TRUE(training->torch_compile());

  options.tp_comm_overlap = true;
  EXPECT_TRUE(TrainingSpec::Create(options).ok());
  options.torch_compile = false;
  training = TrainingSpec::Create(options);
  EXPECT_EQ(training.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(training.status().message().find("training.tp_comm_overlap (true)"), std::string::npos)
      << training.status();
  EXPECT_NE(training.status().message().find("training.torch_compile (false)"), std::string::npos);

  // Megatron-LM's TP overlap is its own (Transformer Engine's userbuffers), without compile.
  options.framework = Framework::kMegatron;
  EXPECT_TRUE(TrainingSpec::Create(options).ok());
}

TEST(TrainingSpecTest, CpCommTypeNamesAreWhatMegatronLmAndTransformerEngineTake) {
  EXPECT_STREQ(CpCommTypeName(CpCommType::kP2p), "p2p");
  EXPECT_STREQ(CpCommTypeName(CpCommType::kAllGather), "all_gather");
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

TEST(TrainingSpecTest, Fp8ParamGatherNeedsFp8AndTheDistributedOptimizer) {
  TrainingOptions options;
  options.global_batch_size = 8;
  options.seq_len = 4096;
  options.fp8_param_gather = true;
  absl::StatusOr<TrainingSpec> training = TrainingSpec::Create(options);
  EXPECT_EQ(training.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(training.status().message(),
            "training.fp8_param_gather (true) needs training.precision FP8, not BF16");

  options.fp8 = true;
  options.distributed_optimizer = false;
  training = TrainingSpec::Create(options);
  EXPECT_EQ(training.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(training.status().message(),
            "training.fp8_param_gather (true) needs training.distributed_optimizer (false) to be "
            "true: Megatron-LM gathers fp8 weights only with its distributed optimizer");

  options.distributed_optimizer = true;
  EXPECT_TRUE(TrainingSpec::Create(options).ok());
}

}  // namespace
}  // namespace paratune
