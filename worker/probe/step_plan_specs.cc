#include "worker/probe/step_plan_specs.h"

#include <algorithm>
#include <utility>

#include "worker/probe/test_assignments.h"

namespace paratune {

absl::StatusOr<ProbeSpec> PlanSpecOf(const PlanSpecOptions& options) {
  v1::ProbeAssignment assignment =
      TestAssignment(options.preset, options.global_batch, options.seq_len, options.dp, options.tp,
                     options.pp, options.cp, options.micro_batch);
  if (options.model.hidden_size() > 0) *assignment.mutable_model() = options.model;
  v1::ClusterSpec& cluster = *assignment.mutable_cluster();
  cluster.mutable_gpu()->set_type(options.gpu);
  const int64_t world = options.dp * options.tp * options.pp * options.cp;
  const int64_t per_node = std::min(world, options.gpus_per_node);
  cluster.set_gpus_per_node(per_node);
  cluster.set_num_nodes(world / per_node);
  v1::ParallelConfig& config = *assignment.mutable_config();
  config.set_virtual_pipeline(options.virtual_pipeline);
  config.set_expert_parallel(options.ep);
  config.set_expert_tensor_parallel(options.etp);
  config.set_dp_sharding(options.dp_sharding);
  config.set_dp_shard_group(options.dp_shard_group);
  config.set_sequence_parallel(options.sequence_parallel);
  config.set_recompute(options.recompute);
  v1::TrainingSpec& training = *assignment.mutable_training();
  training.set_precision(options.fp8 ? v1::FP8 : v1::BF16);
  training.set_fp8_param_gather(options.fp8_param_gather);
  training.set_tp_comm_overlap(options.tp_comm_overlap);
  training.set_cp_comm_type(options.cp_all_gather ? v1::CP_COMM_TYPE_ALL_GATHER
                                                  : v1::CP_COMM_TYPE_P2P);
  training.set_distributed_optimizer(options.distributed_optimizer);
  training.set_moe_capacity_factor(options.moe_capacity_factor);
  if (options.replica) assignment = AsReplicaProbe(std::move(assignment));
  return ProbeSpec::FromAssignment(assignment);
}

PlanSpecOptions SmallPlanSpecOptions() {
  PlanSpecOptions options;
  options.preset = "llama3.2-1b";
  options.seq_len = 1024;
  return options;
}

v1::ModelSpec ShrunkMixtral() {
  v1::ModelSpec model;
  model.set_hidden_size(1024);
  model.set_ffn_hidden_size(3584);
  model.set_num_layers(4);
  model.set_num_attention_heads(8);
  model.set_num_kv_heads(2);
  model.set_vocab_size(32000);
  model.set_num_experts(8);
  model.set_moe_router_top_k(2);
  model.set_moe_ffn_hidden_size(3584);
  return model;
}

v1::ModelSpec ShrunkLlama4() {
  v1::ModelSpec model;
  model.set_hidden_size(1280);
  model.set_ffn_hidden_size(4096);
  model.set_num_layers(4);
  model.set_num_attention_heads(10);
  model.set_num_kv_heads(2);
  model.set_vocab_size(202048);
  model.set_num_experts(16);
  model.set_moe_router_top_k(1);
  model.set_moe_ffn_hidden_size(2048);
  model.set_num_shared_experts(1);
  model.set_shared_expert_ffn_hidden_size(2048);
  model.set_moe_layer_step(2);
  model.set_moe_router_score(v1::MOE_ROUTER_SCORE_SIGMOID);
  return model;
}

FootprintPlan RankFootprintOf(const ProbeSpec& spec, int64_t rank) {
  return FootprintPlan::OfStage(spec, spec.layout().CoordinatesOf(rank).pp);
}

std::vector<GoldenSpec> GoldenSpecs() {
  std::vector<GoldenSpec> specs;
  {
    GoldenSpec& g = specs.emplace_back();
    g.name = "llama8b_cp2_bf16";
    g.options.cp = 2;
    g.rank = 1;
  }
  {
    GoldenSpec& g = specs.emplace_back();
    g.name = "llama8b_tp2_sp";
    g.options.tp = 2;
    g.options.dp = 2;
    g.options.global_batch = 4;
    g.rank = 1;
  }
  {
    GoldenSpec& g = specs.emplace_back();
    g.name = "llama70b_tp8_pp2_sp_tpoverlap";
    g.options.preset = "llama3.1-70b";
    g.options.tp = 8;
    g.options.pp = 2;
    g.options.tp_comm_overlap = true;
    g.rank = 8;
  }
  {
    GoldenSpec& g = specs.emplace_back();
    g.name = "llama70b_tp4_pp8_vp5_fp8_paramgather";
    g.options.preset = "llama3.1-70b";
    g.options.tp = 4;
    g.options.pp = 8;
    g.options.virtual_pipeline = 5;
    g.options.dp = 2;
    g.options.global_batch = 16;
    g.options.fp8 = true;
    g.options.fp8_param_gather = true;
    g.rank = 0;
  }
  {
    GoldenSpec& g = specs.emplace_back();
    g.name = "llama405b_tp8_pp8_cp2_vp8_fp8_uneven_full";
    g.options.preset = "llama3.1-405b";
    g.options.tp = 8;
    g.options.pp = 8;
    g.options.cp = 2;
    g.options.virtual_pipeline = 8;
    g.options.global_batch = 8;
    g.options.fp8 = true;
    g.options.recompute = v1::RECOMPUTE_FULL;
    g.rank = 7 * 16;
  }
  {
    GoldenSpec& g = specs.emplace_back();
    g.name = "llama8b_tp2_dp4_replica";
    g.options.tp = 2;
    g.options.dp = 4;
    g.options.global_batch = 8;
    g.options.replica = true;
    g.rank = 0;
  }
  {
    // Mixtral's proportions shrunk (ShrunkMixtral): four local experts per rank (ep 2, etp 1),
    // their gradients reduced over edp = tp dp / (etp ep) = 2; the last stage.
    GoldenSpec& g = specs.emplace_back();
    g.name = "mixtral_shrunk_tp2_dp2_pp2_ep2";
    g.options.model = ShrunkMixtral();
    g.options.tp = 2;
    g.options.dp = 2;
    g.options.pp = 2;
    g.options.ep = 2;
    g.options.etp = 1;
    g.options.global_batch = 4;
    g.rank = 4;
  }
  {
    // ZeRO-2 (Megatron-FSDP's optim_grads): two micro-batches, each unit's gradients
    // reduce-scattered after its backward in both.
    GoldenSpec& g = specs.emplace_back();
    g.name = "llama8b_tp2_dp2_sharded_gradients";
    g.options.tp = 2;
    g.options.dp = 2;
    g.options.global_batch = 4;
    g.options.dp_sharding = v1::DP_SHARDING_GRADIENTS;
    g.rank = 1;
  }
  {
    // ZeRO-3 (FSDP, Megatron-FSDP's optim_grads_params): each unit's weights gathered before
    // its forward and again before its backward, the next unit's prefetched beside it; its
    // gradients reduce-scattered after its backward; the weights stay sharded after Adam.
    GoldenSpec& g = specs.emplace_back();
    g.name = "llama8b_tp2_dp2_sharded_full";
    g.options.tp = 2;
    g.options.dp = 2;
    g.options.global_batch = 4;
    g.options.dp_sharding = v1::DP_SHARDING_FULL;
    g.rank = 1;
  }
  const PlanSpecOptions sharded_full = specs.back().options;
  {
    // Llama 4's proportions shrunk (ShrunkLlama4): a dense layer, then an MoE layer whose
    // shared expert runs over the tensor group beside eight local experts (ep 2, etp 1), the
    // experts' gradients reduced over edp = tp dp / (etp ep) = 2.
    GoldenSpec& g = specs.emplace_back();
    g.name = "llama4_shrunk_tp2_dp2_ep2_shared";
    g.options.model = ShrunkLlama4();
    g.options.tp = 2;
    g.options.dp = 2;
    g.options.ep = 2;
    g.options.etp = 1;
    g.options.global_batch = 4;
    g.rank = 1;
  }
  {
    // HSDP (FSDP2 over TorchTitan's dp_replicate 2 x dp_shard 2): full sharding within pairs
    // of data-parallel ranks, each unit's gradients reduce-scattered in the pair and the shard
    // all-reduced with the other pair's. Rank 5 (tp 1, dp 2) is the second pair's first.
    GoldenSpec& g = specs.emplace_back();
    g.name = "llama8b_tp2_dp4_hsdp2_full";
    g.options = sharded_full;
    g.options.dp = 4;
    g.options.global_batch = 8;
    g.options.dp_shard_group = 2;
    g.rank = 5;
  }
  {
    // Megatron-LM's distributed optimizer in two instances (--num-distributed-optimizer-
    // instances 2), otherwise the same: the optimizer states sharded within pairs, the
    // bucket's gradients reduce-scattered in the pair and the shard all-reduced across the
    // pairs, the updated parameters gathered in the pair. Rank 2 (tp 0, dp 1) is the first
    // pair's second.
    GoldenSpec g = specs.back();
    g.name = "llama8b_tp2_dp4_hsdp2_optimizer";
    g.options.dp_sharding = v1::DP_SHARDING_OPTIMIZER;
    g.rank = 2;
    specs.push_back(std::move(g));
  }
  return specs;
}

}  // namespace paratune
