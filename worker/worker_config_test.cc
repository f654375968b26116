#include "worker/worker_config.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(WorkerConfigTest, RelativePathsAreTakenFromTheConfigsDirectory) {
  absl::StatusOr<v1::WorkerConfig> config =
      ParseWorkerConfig("/etc/paratune/worker.textproto", R"pb(
        command_templates { name: "a" argv: "x" working_directory: "megatron" }
        command_templates { name: "b" argv: "x" working_directory: "/opt/nemo" }
        command_templates { name: "c" argv: "x" }
        replay {
          published_tables: "../data/llama31_8b_4d_abci_tsubame.csv"
          run_tables: "/srv/runs.csv"
        }
      )pb");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->command_templates(0).working_directory(), "/etc/paratune/megatron");
  EXPECT_EQ(config->command_templates(1).working_directory(), "/opt/nemo");
  EXPECT_EQ(config->command_templates(2).working_directory(), "");
  EXPECT_EQ(config->replay().published_tables(0),
            "/etc/paratune/../data/llama31_8b_4d_abci_tsubame.csv");
  EXPECT_EQ(config->replay().run_tables(0), "/srv/runs.csv");
}

TEST(WorkerConfigTest, AConfigGivenByARelativePathIsAnchoredAtTheWorkingDirectory) {
  absl::StatusOr<v1::WorkerConfig> config =
      ParseWorkerConfig("conf/worker.textproto", R"pb(replay { run_tables: "runs.csv" })pb");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(config->replay().run_tables(0), StartsWith("/"));
  EXPECT_THAT(config->replay().run_tables(0), HasSubstr("/conf/runs.csv"));
}

TEST(WorkerConfigTest, AbsentSectionsStayAbsent) {
  absl::StatusOr<v1::WorkerConfig> config =
      ParseWorkerConfig("w.textproto", R"pb(command_templates { name: "a" argv: "x" })pb");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->has_replay());
}

TEST(WorkerConfigTest, SyntaxErrorsNameTheFileLineAndColumn) {
  absl::StatusOr<v1::WorkerConfig> config =
      ParseWorkerConfig("w.textproto", "command_templates {\n  nmae: \"a\"\n}\n");
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(), HasSubstr("w.textproto:2:"));
  EXPECT_THAT(config.status().message(), HasSubstr("nmae"));
}

TEST(WorkerConfigTest, AMissingFileIsNotFound) {
  absl::StatusOr<v1::WorkerConfig> config = LoadWorkerConfig("/nonexistent/worker.textproto");
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(config.status().message(), HasSubstr("/nonexistent/worker.textproto"));
}

}  // namespace
}  // namespace paratune
