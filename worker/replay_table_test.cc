#include "worker/replay_table.h"

#include <string>

#include "absl/status/statusor.h"
#include "convert/spec_convert.h"
#include "estimator/model_spec.h"
#include "gtest/gtest.h"
#include "proto/specs.pb.h"
#include "proto/worker_config.pb.h"

namespace paratune {
namespace {

// NVIDIA's Megatron-Bridge MoE table beside a dense one, whose rows must answer no MoE
// candidate.
ReplayTable MoeAndDenseTables() {
  v1::ReplayConfig config;
  config.add_published_tables("data/measured/megatron_bridge_moe_h100.csv");
  config.add_published_tables("data/measured/nvidia_dgxc_h100.csv");
  absl::StatusOr<ReplayTable> table = ReplayTable::Load(config);
  EXPECT_TRUE(table.ok()) << table.status();
  return *std::move(table);
}

// A candidate as a search hands it to a backend.
struct Candidate {
  v1::ModelSpec model;
  v1::TrainingSpec training;
  v1::ClusterSpec cluster;
  v1::ParallelConfig config;

  ResolvedConfiguration Resolve() const {
    absl::StatusOr<ResolvedConfiguration> resolved =
        ResolveConfiguration(model, training, cluster, config);
    EXPECT_TRUE(resolved.ok()) << resolved.status();
    return *std::move(resolved);
  }
};

// Line 16 of the MoE table: NeMo 26.04, Qwen3-30B-A3B on 2 x 8 H100-80GB, fp8, global batch
// 1024, sequence 4096, dp 16 tp 1 pp 1 cp 1 mbs 1, ep 16 etp 1, dropless, the flex dispatcher
// with HybridEP, grouped GEMM: 8901 tokens/s per GPU.
Candidate QwenMoeCandidate() {
  Candidate candidate;
  candidate.model.set_preset("qwen3-30b-a3b");
  candidate.training.set_global_batch_size(1024);
  candidate.training.set_seq_len(4096);
  candidate.training.set_precision(v1::FP8);
  candidate.training.set_fp32_gradients(false);
  candidate.training.set_tp_comm_overlap(true);
  candidate.training.set_moe_token_dispatcher(v1::MOE_TOKEN_DISPATCHER_FLEX_HYBRIDEP);
  candidate.cluster.mutable_gpu()->set_type("h100-80gb");
  candidate.cluster.set_num_nodes(2);
  candidate.cluster.set_gpus_per_node(8);
  candidate.config.set_data_parallel(16);
  candidate.config.set_tensor_parallel(1);
  candidate.config.set_pipeline_parallel(1);
  candidate.config.set_context_parallel(1);
  candidate.config.set_micro_batch_size(1);
  candidate.config.set_expert_parallel(16);
  candidate.config.set_expert_tensor_parallel(1);
  return candidate;
}

TEST(ReplayTableTest, AnMoeCandidateFindsItsMeasuredMoeRow) {
  const ReplayTable table = MoeAndDenseTables();
  const std::vector<ReplayedRun>& runs = table.Find(QwenMoeCandidate().Resolve());
  // NeMo 26.04, 26.04.01 and 26.06 measured this configuration.
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].outcome, ReplayedRun::Outcome::kCompleted);
  EXPECT_DOUBLE_EQ(runs[0].step_seconds, 1024.0 * 4096.0 / (8901.0 * 16.0));
  EXPECT_EQ(runs[0].source, "megatron_bridge_moe_h100.csv:16 (Qwen3-30B-A3B NeMo 26.04)");
  EXPECT_EQ(runs[1].source, "megatron_bridge_moe_h100.csv:20 (Qwen3-30B-A3B NeMo 26.04.01)");
  EXPECT_EQ(runs[2].source, "megatron_bridge_moe_h100.csv:23 (Qwen3-30B-A3B NeMo 26.06)");
}

TEST(ReplayTableTest, AnotherExpertLayoutOrRoutingIsNotMeasured) {
  const ReplayTable table = MoeAndDenseTables();
  Candidate candidate = QwenMoeCandidate();
  candidate.config.set_expert_parallel(8);
  EXPECT_TRUE(table.Find(candidate.Resolve()).empty()) << "ep 8";
  candidate = QwenMoeCandidate();
  candidate.config.set_expert_parallel(8);
  candidate.config.set_expert_tensor_parallel(2);
  EXPECT_TRUE(table.Find(candidate.Resolve()).empty()) << "the 16 expert ranks as ep 8 etp 2";
  candidate = QwenMoeCandidate();
  candidate.training.set_moe_capacity_factor(1.0);
  EXPECT_TRUE(table.Find(candidate.Resolve()).empty()) << "token drop at capacity 1";
  candidate = QwenMoeCandidate();
  candidate.training.set_moe_token_dispatcher(v1::MOE_TOKEN_DISPATCHER_ALLGATHER);
  EXPECT_TRUE(table.Find(candidate.Resolve()).empty()) << "all-gather dispatcher";
  candidate.training.set_moe_token_dispatcher(v1::MOE_TOKEN_DISPATCHER_ALLTOALL);
  EXPECT_TRUE(table.Find(candidate.Resolve()).empty()) << "all-to-all dispatcher";
  candidate.training.set_moe_token_dispatcher(v1::MOE_TOKEN_DISPATCHER_FLEX_DEEPEP);
  EXPECT_TRUE(table.Find(candidate.Resolve()).empty()) << "DeepEP";
  candidate = QwenMoeCandidate();
  candidate.training.set_moe_grouped_gemm(false);
  EXPECT_TRUE(table.Find(candidate.Resolve()).empty()) << "one GEMM per local expert";
}

TEST(ReplayTableTest, ADenseModelOfTheSameShapeDoesNotFindAnMoeRow) {
  const ReplayTable table = MoeAndDenseTables();
  absl::StatusOr<ModelSpec> qwen = FindModelPreset("qwen3-30b-a3b");
  ASSERT_TRUE(qwen.ok()) << qwen.status();
  // Qwen3-30B-A3B's attention, widths and vocabulary with a dense MLP in every layer.
  Candidate candidate = QwenMoeCandidate();
  candidate.model.Clear();
  candidate.model.set_hidden_size(qwen->hidden_size());
  candidate.model.set_ffn_hidden_size(qwen->dims().ffn_hidden_size);
  candidate.model.set_num_layers(qwen->num_layers());
  candidate.model.set_num_attention_heads(qwen->dims().num_attention_heads);
  candidate.model.set_num_kv_heads(qwen->dims().num_kv_heads);
  candidate.model.set_vocab_size(qwen->dims().vocab_size);
  candidate.model.set_tied_embeddings(qwen->dims().tied_embeddings);
  candidate.model.set_head_dim(qwen->head_dim());
  candidate.config.clear_expert_parallel();
  candidate.config.clear_expert_tensor_parallel();
  EXPECT_TRUE(table.Find(candidate.Resolve()).empty());
}

TEST(ReplayTableTest, TheMoeTableIsAKnownPublishedTable) {
  const ReplayTable table = MoeAndDenseTables();
  // 12 MoE runs (the rows of presets) and the dense table's 53 bf16 and 53 fp8 rows.
  EXPECT_EQ(table.summary(),
            "118 runs in 2 tables (megatron_bridge_moe_h100.csv, nvidia_dgxc_h100.csv)");
}

TEST(ReplayTableTest, ATableReadAsTwoSelectionsReplaysBoth) {
  // Llama 4 Maverick on 512 H100s, measured in bf16 and in fp8 (nvidia_dgxc_moe_h100.csv).
  v1::ReplayConfig config;
  config.add_published_tables("data/measured/nvidia_dgxc_moe_h100.csv");
  absl::StatusOr<ReplayTable> table = ReplayTable::Load(config);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->summary(), "2 runs in 1 table (nvidia_dgxc_moe_h100.csv)");
}

}  // namespace
}  // namespace paratune
