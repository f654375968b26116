#include "cli/flag_names.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(NameFlagsInMessageTest, NamesTheFlagOfASpecField) {
  EXPECT_EQ(NameFlagsInMessage("space.safe_memory_fraction (1.5) must be in (0, 1]", false),
            "--safe_fraction (1.5) must be in (0, 1]");
  EXPECT_EQ(NameFlagsInMessage("spec.probe.timed_steps (20000) must be in [0, 10000]", false),
            "--timed_steps (20000) must be in [0, 10000]");
  EXPECT_EQ(NameFlagsInMessage("set space.include_risky to probe RISKY ones", false),
            "set --memory_policy to probe RISKY ones");
}

TEST(NameFlagsInMessageTest, NamesTheTrainingSwitches) {
  EXPECT_EQ(NameFlagsInMessage("training.fp8_param_gather (true) needs training.precision FP8, "
                               "not BF16",
                               false),
            "--fp8_param_gather (true) needs --fp8 FP8, not BF16");
  EXPECT_EQ(NameFlagsInMessage("training.tp_comm_overlap (true) needs config.sequence_parallel "
                               "(false) with config.tensor_parallel (2) > 1",
                               false),
            "--tp_comm_overlap (true) needs --sequence_parallel (false) with --tp (2) > 1");
  EXPECT_EQ(NameFlagsInMessage("training.cp_comm_type (3) is not a known CpCommType", false),
            "--cp_comm_type (3) is not a known CpCommType");
}

TEST(NameFlagsInMessageTest, KeepsAnIndexAndSaysWhenTheUnitsDiffer) {
  EXPECT_EQ(NameFlagsInMessage("space.micro_batch_sizes[2] (0) must be in [1, 1024]", false),
            "--micro_batches[2] (0) must be in [1, 1024]");
  EXPECT_EQ(NameFlagsInMessage("spec.budget.max_gpu_seconds (3.6e+15) must be in [0, 1e+12] "
                               "(0: no limit)",
                               false),
            "--max_gpu_hours, as GPU-seconds, (3.6e+15) must be in [0, 1e+12] (0: no limit)");
}

TEST(NameFlagsInMessageTest, ModelDimensionsAreFlagsOnlyForAnExplicitModel) {
  const char* message = "config.tensor_parallel (3) does not divide model.num_attention_heads (32)";
  EXPECT_EQ(NameFlagsInMessage(message, /*explicit_model=*/false),
            "--tp (3) does not divide model.num_attention_heads (32)");
  EXPECT_EQ(NameFlagsInMessage(message, /*explicit_model=*/true),
            "--tp (3) does not divide --num_heads (32)");
}

TEST(NameFlagsInMessageTest, LeavesProseAndUnknownFieldsAlone) {
  // "limit" and "policy" are words here, not fields with a value.
  EXPECT_EQ(NameFlagsInMessage("spec.adaptive is only for policy ADAPTIVE (0: no limit).", false),
            "spec.adaptive is only for policy ADAPTIVE (0: no limit).");
  EXPECT_EQ(NameFlagsInMessage("limit (-1) must be >= 0", false), "--limit (-1) must be >= 0");
  EXPECT_EQ(
      NameFlagsInMessage("175 configurations, more than the limit (--max_enumerated=100)", false),
      "175 configurations, more than the limit (--max_enumerated=100)");
  EXPECT_EQ(NameFlagsInMessage("cluster.gpu.memory_bytes must be set", false),
            "cluster.gpu.memory_bytes must be set");
  // A sentence's full stop stays.
  EXPECT_EQ(NameFlagsInMessage("check spec.seed.", false), "check --seed.");
}

TEST(NameFlagsTest, KeepsTheCode) {
  const absl::Status status =
      NameFlags(absl::InvalidArgumentError("spec.top_k (0) must be positive"), false);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "--top_k (0) must be positive");
  EXPECT_TRUE(NameFlags(absl::OkStatus(), false).ok());
}

}  // namespace
}  // namespace paratune
