#include "launch/builtin_templates.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launch/test_assignments.h"

namespace paratune {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

// The framework arguments of a probe's launch that its export leaves out.
std::vector<std::string> ProbeOnly(const std::vector<std::string>& probed,
                                   const std::vector<std::string>& exported) {
  std::vector<std::string> only;
  for (const std::string& argument : probed) {
    if (std::find(exported.begin(), exported.end(), argument) == exported.end()) {
      only.push_back(argument);
    }
  }
  return only;
}

TEST(BuiltinTemplatesTest, TheShippedTemplatesExportAllButTheirProbeOnlyArguments) {
  const struct {
    const char* name;
    const char* file;
    const char* entry;
    std::vector<std::string> probe_only;
  } cases[] = {
      {"megatron-llama",
       "deploy/templates/megatron_llama.textproto",
       "pretrain_gpt.py",
       {"--train-iters=7", "--mock-data", "--tokenizer-type=NullTokenizer", "--log-interval=1",
        "--log-throughput", "--eval-iters=0"}},
      {"nemo-llama",
       "deploy/templates/nemo_llama.textproto",
       "llama31_8b",
       {"trainer.max_steps=7", "trainer.log_every_n_steps=1", "trainer.limit_val_batches=0",
        "trainer.val_check_interval=7", "trainer.enable_checkpointing=False", "log.ckpt=None",
        "data.tokenizer=nemo.collections.common.tokenizers.null_tokenizer.NullTokenizer("
        "vocab_size=128256)"}},
      {"megatron-bridge-llama",
       "deploy/templates/megatron_bridge_llama.textproto",
       "scripts/training/run_recipe.py",
       {"--dataset=llm-pretrain-mock", "train.train_iters=7", "logger.log_interval=1",
        "logger.log_throughput=true", "validation.eval_iters=0", "checkpoint.save=null",
        "checkpoint.load=null", "tokenizer.vocab_size=128256"}},
      {"torchtitan-llama",
       "deploy/templates/torchtitan_llama.textproto",
       "torchtitan.train",
       {"--training.steps=7", "--training.dataset=c4_test", "--metrics.log_freq=1",
        "--metrics.disable_color_printing"}},
  };
  const v1::ProbeAssignment assignment = TwoNodeGangAssignment(v1::RECOMPUTE_FULL);
  absl::StatusOr<LaunchValues> probe = ProbeLaunchValues(assignment);
  absl::StatusOr<LaunchValues> full = ExportLaunchValues(assignment);
  ASSERT_TRUE(probe.ok() && full.ok()) << probe.status() << full.status();
  for (const auto& c : cases) {
    absl::StatusOr<BuiltinTemplate> builtin = FindBuiltinTemplate(c.name);
    ASSERT_TRUE(builtin.ok()) << builtin.status();
    EXPECT_EQ(builtin->file, c.file);
    EXPECT_EQ(builtin->proto.framework_entry(), c.entry);
    absl::StatusOr<std::vector<std::string>> probed =
        builtin->launch.RenderFrameworkArguments(*probe);
    absl::StatusOr<std::vector<std::string>> exported =
        builtin->launch.RenderFrameworkArguments(*full);
    ASSERT_TRUE(probed.ok() && exported.ok()) << probed.status() << exported.status();
    EXPECT_THAT(ProbeOnly(*probed, *exported), ElementsAreArray(c.probe_only)) << c.name;
    EXPECT_EQ(probed->size(), exported->size() + c.probe_only.size()) << c.name;
  }
}

TEST(BuiltinTemplatesTest, AnUnknownNameIsNotFound) {
  const absl::Status status = FindBuiltinTemplate("megatron-gpt").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(
      status.message(),
      HasSubstr("no built-in launch template is called "
                "\"megatron-gpt\" (there are megatron-llama, nemo-llama, megatron-bridge-llama, "
                "torchtitan-llama)"));
}

}  // namespace
}  // namespace paratune
