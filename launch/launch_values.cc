#include "launch/launch_values.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "estimator/data_parallel_sharding.h"
#include "estimator/moe_performance.h"
#include "estimator/pipeline_layout.h"
#include "launch/torchtitan_job.h"

namespace paratune {
namespace {

using Kind = PlaceholderKind;

// Megatron-LM's uneven split counts the embedding and the loss as one layer each
// (--account-for-embedding-in-pipeline-split, --account-for-loss-in-pipeline-split).
constexpr int64_t kUnevenSplitExtraLayers = 2;

bool PlainText(absl::string_view text) {
  for (char c : text) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) &&
        absl::string_view("._,:/-").find(c) == absl::string_view::npos) {
      return false;
    }
  }
  return !text.empty();
}

absl::Status CheckPlain(const std::string& field, absl::string_view text) {
  if (PlainText(text)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, " (\"", absl::CHexEscape(text.substr(0, 256)),
                   "\") must be letters, digits and . , : / _ - to fill a launch template"));
}

int64_t ConfigurationGpus(const ParallelConfig& config) {
  return config.dp() * config.tp() * config.pp() * config.cp();
}

// Megatron-LM's --moe-router-score-function for `score`
// (megatron/core/transformer/transformer_config.py:787 at core_v0.19.0).
const char* RouterScoreFunction(RouterScore score) {
  return score == RouterScore::kSigmoid ? "sigmoid" : "softmax";
}

// Which layers hold experts, one "0" or "1" per layer (ModelSpec::IsMoeLayer), as the list
// Megatron-LM's --moe-layer-freq takes between brackets: get_gpt_decoder_layer_specs, which
// builds an MoE model's layers (gpt_builders.py:41-43), gives layer i experts where element i
// is 1 (megatron/core/models/gpt/gpt_layer_specs.py:647-671 at core_v0.19.0). The list states every
// pattern exactly; the integer form k only layers 0, k, 2k, ..., which Hugging Face's
// interleave_moe_layer_step (layers k-1, 2k-1, ...) and first_k_dense_replace do not give.
std::string MoeLayerPattern(const ModelSpec& model) {
  std::string pattern;
  for (int64_t layer = 0; layer < model.num_layers(); ++layer) {
    absl::StrAppend(&pattern, layer == 0 ? "" : ",", model.IsMoeLayer(layer) ? "1" : "0");
  }
  return pattern;
}

bool IsLayerPattern(absl::string_view value) {
  if (value.empty()) return false;
  for (size_t i = 0; i < value.size(); ++i) {
    const bool digit_here = i % 2 == 0;
    if (digit_here ? (value[i] != '0' && value[i] != '1') : value[i] != ',') return false;
  }
  return value.size() % 2 == 1;
}

}  // namespace

const std::vector<Placeholder>& LaunchPlaceholders() {
  // What each means: docs/backends.md, "Templates".
  static const std::vector<Placeholder>* const placeholders = new std::vector<Placeholder>{
      {"tp", Kind::kInteger},
      {"pp", Kind::kInteger},
      {"cp", Kind::kInteger},
      {"dp", Kind::kInteger},  // the probe's: fewer replicas for a replica-scope probe
      {"mbs", Kind::kInteger},
      {"gbs", Kind::kInteger},  // the launch's micro-batches per step of the probe's replicas
      {"replica_batch", Kind::kInteger},  // {gbs} / {dp}: one replica's samples per step
      {"seq_len", Kind::kInteger},
      {"vp", Kind::kInteger},
      {"layers_per_virtual_stage", Kind::kInteger},
      {"uneven_pipeline", Kind::kBoolean},
      {"recompute", Kind::kRecompute},
      {"sequence_parallel", Kind::kBoolean},  // false whenever tp is 1
      {"num_layers", Kind::kInteger},
      {"hidden_size", Kind::kInteger},
      {"ffn_hidden_size", Kind::kInteger},
      {"num_attention_heads", Kind::kInteger},
      {"num_kv_heads", Kind::kInteger},
      {"vocab_size", Kind::kInteger},
      {"tied_embeddings", Kind::kBoolean},
      {"kv_channels", Kind::kInteger},  // the head width where it is not h / a, else 0
      {"moe", Kind::kBoolean},          // whether the model has routed experts
      {"num_experts", Kind::kInteger},  // 0 for a dense model, as the moe_* integers
      {"moe_router_topk", Kind::kInteger},
      {"moe_ffn_hidden_size", Kind::kInteger},
      {"moe_shared_expert_size", Kind::kInteger},  // shared experts x their width
      {"moe_layer_pattern", Kind::kLayerPattern},
      {"moe_dense_layers", Kind::kBoolean},  // an MoE model that keeps some layers dense
      {"moe_router_score", Kind::kRouterScore},
      {"moe_router_pre_softmax", Kind::kBoolean},
      // The training spec's routing; with no experts, no grouped GEMM and capacity factor 0.
      {"moe_grouped_gemm", Kind::kBoolean},
      {"moe_token_dispatcher", Kind::kTokenDispatcher},
      {"moe_flex_dispatcher_backend", Kind::kFlexBackend},
      {"moe_capacity_factor", Kind::kNumber},  // 0: dropless
      // The all-to-all overlapped where Megatron-LM takes it (ExpertParallelOverlapApplies).
      {"moe_expert_parallel_overlap", Kind::kBoolean},
      // The shared experts beside the dispatcher where a model has them
      // (SharedExpertOverlapApplies).
      {"moe_shared_expert_overlap", Kind::kBoolean},
      {"ep", Kind::kInteger},
      {"etp", Kind::kInteger},  // resolved: tp where the configuration leaves it unset
      {"fp8", Kind::kBoolean},
      // The configuration's sharding: true for Megatron-LM's distributed optimizer (optimizer).
      {"distributed_optimizer", Kind::kBoolean},
      {"dp_sharding", Kind::kDpSharding},
      // Ranks a replica's states are sharded over (1 without sharding), and the replicas of
      // that group: dp_shard x dp_replicate = {dp} (TorchTitan's data_parallel_shard_degree
      // and data_parallel_replicate_degree).
      {"dp_shard", Kind::kInteger},
      {"dp_replicate", Kind::kInteger},
      // Megatron-LM's --num-distributed-optimizer-instances: {dp_replicate} where something is
      // sharded (the partial distributed optimizer, Megatron-FSDP's HSDP), else 1.
      {"distributed_optimizer_instances", Kind::kInteger},
      // The CUDA_DEVICE_MAX_CONNECTIONS Megatron-LM takes: 8 with Megatron-FSDP, else 1.
      {"cuda_device_max_connections", Kind::kInteger},
      {"fp32_gradients", Kind::kBoolean},
      {"fp8_param_gather", Kind::kBoolean},
      {"tp_comm_overlap", Kind::kBoolean},  // false whenever sequence_parallel is
      {"cp_comm_type", Kind::kCpCommType},
      {"torch_compile", Kind::kBoolean},  // TorchTitan's compile.enable; false under Megatron-LM
      // TorchTitan's llama3 flavor; no value where TorchTitan cannot run the configuration.
      {"torchtitan_flavor", Kind::kText},
      {"probe", Kind::kBoolean},        // true in a probe's launch, false in an export
      {"train_iters", Kind::kInteger},  // extra warm-up + warm-up + timed steps, per launch
      {"nnodes", Kind::kInteger},
      {"node_rank", Kind::kInteger},
      {"nproc_per_node", Kind::kInteger},
      {"world_size", Kind::kInteger},
      {"master_addr", Kind::kText},
      {"master_port", Kind::kInteger},
      {"gpu_ids", Kind::kText},
      {"probe_name", Kind::kText},
  };
  return *placeholders;
}

const Placeholder* FindPlaceholder(absl::string_view name) {
  for (const Placeholder& placeholder : LaunchPlaceholders()) {
    if (name == placeholder.name) return &placeholder;
  }
  return nullptr;
}

absl::Status CheckPlaceholderValue(const Placeholder& placeholder, absl::string_view value) {
  int64_t number = 0;
  switch (placeholder.kind) {
    case Kind::kInteger:
      if (absl::SimpleAtoi(value, &number)) return absl::OkStatus();
      return absl::InvalidArgumentError(
          absl::StrCat("{", placeholder.name, "} is an integer, never \"", value, "\""));
    case Kind::kBoolean:
      if (value == "true" || value == "false") return absl::OkStatus();
      return absl::InvalidArgumentError(
          absl::StrCat("{", placeholder.name, "} is true or false, never \"", value, "\""));
    case Kind::kRecompute:
      if (value == "none" || value == "selective" || value == "full") return absl::OkStatus();
      return absl::InvalidArgumentError(absl::StrCat(
          "{", placeholder.name, "} is none, selective or full, never \"", value, "\""));
    case Kind::kCpCommType:
      if (value == CpCommTypeName(CpCommType::kP2p) ||
          value == CpCommTypeName(CpCommType::kAllGather)) {
        return absl::OkStatus();
      }
      return absl::InvalidArgumentError(
          absl::StrCat("{", placeholder.name, "} is p2p or all_gather, never \"", value, "\""));
    case Kind::kRouterScore:
      if (value == RouterScoreFunction(RouterScore::kSoftmax) ||
          value == RouterScoreFunction(RouterScore::kSigmoid)) {
        return absl::OkStatus();
      }
      return absl::InvalidArgumentError(
          absl::StrCat("{", placeholder.name, "} is softmax or sigmoid, never \"", value, "\""));
    case Kind::kLayerPattern:
      if (IsLayerPattern(value)) return absl::OkStatus();
      return absl::InvalidArgumentError(absl::StrCat(
          "{", placeholder.name, "} is one 0 or 1 per layer separated by commas, never \"",
          absl::CHexEscape(value), "\""));
    case Kind::kTokenDispatcher:
      if (value == TokenDispatcherName(TokenDispatcher::kAllToAll) ||
          value == TokenDispatcherName(TokenDispatcher::kAllGather) ||
          value == TokenDispatcherName(TokenDispatcher::kFlexDeepEp)) {
        return absl::OkStatus();
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "{", placeholder.name, "} is alltoall, allgather or flex, never \"", value, "\""));
    case Kind::kFlexBackend:
      if (value == FlexDispatcherBackendName(TokenDispatcher::kFlexDeepEp) ||
          value == FlexDispatcherBackendName(TokenDispatcher::kFlexHybridEp) || value == "none") {
        return absl::OkStatus();
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "{", placeholder.name, "} is deepep, hybridep or none, never \"", value, "\""));
    case Kind::kDpSharding:
      if (DataParallelShardingNamed(value).has_value()) return absl::OkStatus();
      return absl::InvalidArgumentError(absl::StrCat(
          "{", placeholder.name, "} is none, optimizer, gradients or full, never \"", value, "\""));
    case Kind::kNumber: {
      double parsed = 0;
      if (absl::SimpleAtod(value, &parsed) && parsed >= 0 && PlainText(value)) {
        return absl::OkStatus();
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "{", placeholder.name, "} is a number >= 0, never \"", absl::CHexEscape(value), "\""));
    }
    case Kind::kText:
      if (PlainText(value)) return absl::OkStatus();
      return absl::InvalidArgumentError(
          absl::StrCat("{", placeholder.name, "} is letters, digits and . , : / _ -, never \"",
                       absl::CHexEscape(value), "\""));
  }
  return absl::OkStatus();
}

absl::Status CheckLaunchShape(const v1::ProbeAssignment& assignment, const ParallelConfig& config) {
  const int64_t replica = config.tp() * config.pp() * config.cp();
  const int64_t ranks = assignment.num_ranks();
  if (ranks < replica || ranks % replica != 0 || ranks > ConfigurationGpus(config) ||
      config.dp() % (ranks / replica) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("assignment.num_ranks (", ranks, ") must be a number of tp x pp x cp (",
                     replica, ") replicas that divides data_parallel (", config.dp(), ")"));
  }
  if (assignment.scope() == v1::PROBE_SCOPE_FULL && ranks != ConfigurationGpus(config)) {
    return absl::InvalidArgumentError(
        absl::StrCat("assignment.num_ranks (", ranks, ") of a full-scope probe must be the ",
                     ConfigurationGpus(config), " GPUs of the configuration"));
  }
  // The framework shards over the data-parallel ranks it runs: a probe of part of a shard
  // group would measure another configuration (server/core/probe_needs.h, ProbeShardGroup).
  const int64_t shard = config.dp_shard_ranks();
  if ((ranks / replica) % shard != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("assignment.num_ranks (", ranks, ") runs ", ranks / replica,
                     " data-parallel ranks, not whole shard groups of ", shard,
                     " (config.dp_sharding ", DataParallelShardingName(config.dp_sharding()),
                     "): the framework would shard over fewer ranks than the configuration"));
  }
  if (assignment.gang_size() == 0) {
    return absl::InvalidArgumentError(
        "assignment.gang (empty) must list the workers running the probe");
  }
  int64_t next_rank = 0;
  for (int i = 0; i < assignment.gang_size(); ++i) {
    const v1::GangMember& member = assignment.gang(i);
    const std::string field = absl::StrCat("assignment.gang[", i, "]");
    if (member.first_rank() != next_rank || member.num_ranks() < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, " (first_rank ", member.first_rank(), ", num_ranks ", member.num_ranks(),
          ") must start at rank ", next_rank, " and hold at least one"));
    }
    next_rank += member.num_ranks();
    PT_RETURN_IF_ERROR(CheckPlain(absl::StrCat(field, ".hostname"), member.hostname()));
  }
  if (next_rank != ranks) {
    return absl::InvalidArgumentError(absl::StrCat(
        "assignment.gang (", next_rank, " ranks) must hold assignment.num_ranks (", ranks, ")"));
  }
  if (assignment.gang_index() < 0 || assignment.gang_index() >= assignment.gang_size()) {
    return absl::InvalidArgumentError(absl::StrCat("assignment.gang_index (",
                                                   assignment.gang_index(), ") must be in [0, ",
                                                   assignment.gang_size(), ")"));
  }
  const int64_t local = assignment.gang(assignment.gang_index()).num_ranks();
  if (assignment.gpu_indices_size() != local) {
    return absl::InvalidArgumentError(
        absl::StrCat("assignment.gpu_indices (", assignment.gpu_indices_size(),
                     " GPUs) must have one GPU per rank of this worker (", local, ")"));
  }
  for (int i = 0; i < assignment.gpu_indices_size(); ++i) {
    if (assignment.gpu_indices(i) < 0) {
      return absl::InvalidArgumentError(absl::StrCat("assignment.gpu_indices[", i, "] (",
                                                     assignment.gpu_indices(i), ") must be >= 0"));
    }
  }
  PT_RETURN_IF_ERROR(CheckPlain("assignment.name", assignment.name()));
  return absl::OkStatus();
}

void LaunchValues::SetDataParallelShares(const ParallelConfig& config, int64_t dp) {
  SetInteger("dp", dp);
  const int64_t shard = config.dp_shard_ranks();
  SetInteger("dp_shard", shard);
  SetInteger("dp_replicate", dp / shard);
  // Replicas of a shard, as Megatron-Core counts them (megatron/core/parallel_state.py:922-929
  // at core_v0.19.0): without sharding there is no optimizer to replicate.
  SetInteger("distributed_optimizer_instances",
             config.dp_sharding() == DataParallelSharding::kNone ? 1 : dp / shard);
}

absl::StatusOr<LaunchValues> LaunchValues::ForProbe(
    const v1::ProbeAssignment& assignment, const ModelSpec& model, const TrainingSpec& training,
    const ParallelConfig& config, int64_t micro_batches_per_step, int64_t extra_warmup_iterations,
    int master_port) {
  PT_RETURN_IF_ERROR(CheckLaunchShape(assignment, config));
  const int64_t probe_dp = assignment.num_ranks() / (config.tp() * config.pp() * config.cp());

  LaunchValues values;
  values.SetConfiguration(model, training, config);
  values.SetDataParallelShares(config, probe_dp);
  values.SetInteger("gbs", micro_batches_per_step * probe_dp * config.micro_batch());
  values.SetInteger("replica_batch", micro_batches_per_step * config.micro_batch());
  values.SetBoolean("probe", true);
  values.SetInteger("train_iters",
                    extra_warmup_iterations + assignment.warmup_steps() + assignment.timed_steps());
  values.SetInteger("nnodes", assignment.gang_size());
  values.SetInteger("node_rank", assignment.gang_index());
  values.SetInteger("nproc_per_node", assignment.gpu_indices_size());
  values.SetInteger("world_size", assignment.num_ranks());
  values.SetText("master_addr", assignment.gang(0).hostname());
  values.SetInteger("master_port", master_port);
  values.SetText("gpu_ids", absl::StrJoin(assignment.gpu_indices(), ","));
  values.SetText("probe_name", assignment.name());
  return values;
}

absl::StatusOr<LaunchValues> LaunchValues::ForExport(const ModelSpec& model,
                                                     const TrainingSpec& training,
                                                     const ClusterSpec& cluster,
                                                     const ParallelConfig& config) {
  const int64_t gpus = cluster.world_size();
  if (ConfigurationGpus(config) != gpus) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config (", config.ToString(), ") uses ", ConfigurationGpus(config),
        " GPUs, not the cluster's ", cluster.num_nodes(), " x ", cluster.gpus_per_node()));
  }
  LaunchValues values;
  values.SetConfiguration(model, training, config);
  values.SetDataParallelShares(config, config.dp());
  values.SetInteger("gbs", training.global_batch_size());
  values.SetInteger("replica_batch", training.global_batch_size() / config.dp());
  values.SetBoolean("probe", false);
  values.SetInteger("nnodes", cluster.num_nodes());
  values.SetInteger("nproc_per_node", cluster.gpus_per_node());
  values.SetInteger("world_size", gpus);
  return values;
}

void LaunchValues::SetConfiguration(const ModelSpec& model, const TrainingSpec& training,
                                    const ParallelConfig& config) {
  SetInteger("tp", config.tp());
  SetInteger("pp", config.pp());
  SetInteger("cp", config.cp());
  SetInteger("mbs", config.micro_batch());
  SetInteger("seq_len", training.seq_len());
  SetInteger("vp", config.virtual_pipeline());
  // Valid configurations split their layers evenly or, counting the embedding and the loss
  // as a layer each, unevenly (estimator/pipeline_layout.h).
  const int64_t stages = config.pp() * config.virtual_pipeline();
  const bool uneven =
      !EvenPipelineSplitFits(model.num_layers(), config.pp(), config.virtual_pipeline());
  SetBoolean("uneven_pipeline", uneven);
  SetInteger("layers_per_virtual_stage",
             (model.num_layers() + (uneven ? kUnevenSplitExtraLayers : 0)) / stages);
  SetText("recompute", RecomputeName(config.recompute()));
  SetBoolean("sequence_parallel", config.sequence_parallel() && config.tp() > 1);
  SetInteger("num_layers", model.num_layers());
  SetInteger("hidden_size", model.hidden_size());
  SetInteger("ffn_hidden_size", model.ffn_hidden_size());
  SetInteger("num_attention_heads", model.num_attention_heads());
  SetInteger("num_kv_heads", model.num_kv_heads());
  SetInteger("vocab_size", model.vocab_size());
  SetBoolean("tied_embeddings", model.tied_embeddings());
  // Megatron-LM derives the head width as h / a without --kv-channels
  // (megatron/training/arguments.py:1291-1293 at core_v0.19.0).
  SetInteger("kv_channels", model.head_dim() * model.num_attention_heads() == model.hidden_size()
                                ? 0
                                : model.head_dim());
  const MoeDimensions& moe = model.moe();
  SetBoolean("moe", model.is_moe());
  SetInteger("num_experts", moe.num_experts);
  SetInteger("moe_router_topk", moe.router_top_k);
  SetInteger("moe_ffn_hidden_size", moe.expert_ffn_hidden_size);
  // --moe-shared-expert-intermediate-size is "num_shared_experts *
  // ffn_size_of_each_shared_expert" (transformer_config.py:680-684).
  SetInteger("moe_shared_expert_size", moe.num_shared_experts * moe.shared_expert_ffn_hidden_size);
  SetText("moe_layer_pattern", MoeLayerPattern(model));
  SetBoolean("moe_dense_layers", model.is_moe() && model.MoeLayerCount() < model.num_layers());
  SetText("moe_router_score", RouterScoreFunction(moe.router_score));
  // TransformerConfig refuses top-1 softmax routing without --moe-router-pre-softmax: a
  // softmax over the one chosen expert has a zero gradient (transformer_config.py:2328-2336).
  SetBoolean("moe_router_pre_softmax",
             model.is_moe() && moe.router_top_k == 1 && moe.router_score == RouterScore::kSoftmax);
  SetBoolean("moe_grouped_gemm", model.is_moe() && training.moe_grouped_gemm());
  SetText("moe_token_dispatcher", TokenDispatcherName(training.moe_token_dispatcher()));
  const char* flex_backend = FlexDispatcherBackendName(training.moe_token_dispatcher());
  SetText("moe_flex_dispatcher_backend", flex_backend != nullptr ? flex_backend : "none");
  SetText("moe_capacity_factor", absl::StrCat(model.is_moe() ? training.moe_capacity_factor() : 0));
  SetBoolean("moe_expert_parallel_overlap",
             ExpertParallelOverlapApplies(model, training, config.dims()));
  SetBoolean("moe_shared_expert_overlap", SharedExpertOverlapApplies(model, training));
  SetInteger("ep", config.ep());
  SetInteger("etp", config.etp());
  SetBoolean("fp8", training.fp8());
  SetBoolean("distributed_optimizer", config.dp_sharding() == DataParallelSharding::kOptimizer);
  SetText("dp_sharding", DataParallelShardingName(config.dp_sharding()));
  // Megatron-LM needs one hardware queue with tensor or context parallelism, so that each
  // communication kernel runs before the GEMM it overlaps (megatron/training/arguments.py:
  // 1413-1439 at core_v0.19.0), and Megatron-FSDP, which shards the gradients (optim_grads,
  // optim_grads_params), needs more than one (arguments.py:1143-1144): 8, the CUDA default
  // that NVIDIA's Megatron-Bridge performance launcher sets unless it needs 1 or 32
  // (scripts/performance/perf_plugins.py:259 at Megatron-Bridge v0.5.0).
  SetInteger("cuda_device_max_connections", ShardsGradients(config.dp_sharding()) ? 8 : 1);
  SetBoolean("fp32_gradients", training.fp32_gradients());
  SetBoolean("fp8_param_gather", training.fp8_param_gather());
  // Megatron-LM rejects --tp-comm-overlap without sequence parallelism, which is off at tp 1
  // (megatron/training/arguments.py:1390-1402); there is no tensor-parallel traffic to
  // overlap there.
  SetBoolean("tp_comm_overlap",
             training.tp_comm_overlap() && config.sequence_parallel() && config.tp() > 1);
  SetText("cp_comm_type", CpCommTypeName(training.cp_comm_type()));
  SetBoolean("torch_compile", training.torch_compile());
  // A TorchTitan template names the flavor, so where TorchTitan cannot run the configuration
  // its probe and its export fail with the reason.
  const absl::StatusOr<std::string> flavor = TorchTitanFlavorToRun(model, training, config);
  if (flavor.ok()) {
    SetText("torchtitan_flavor", *flavor);
  } else {
    no_value_reasons_["torchtitan_flavor"] = std::string(flavor.status().message());
  }
}

absl::StatusOr<std::string> LaunchValues::Get(absl::string_view name) const {
  auto it = values_.find(name);
  if (it != values_.end()) return it->second;
  if (FindPlaceholder(name) == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("unknown placeholder {", name, "}"));
  }
  auto reason = no_value_reasons_.find(name);
  if (reason != no_value_reasons_.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("{", name, "} has no value: ", reason->second));
  }
  // Otherwise only an export leaves placeholders without a value.
  return absl::FailedPreconditionError(
      absl::StrCat("{", name,
                   "} has no value in an export: it belongs to one probe's launch on one node "
                   "(an element only probes need can be marked {?probe=true})"));
}

void LaunchValues::SetText(const char* name, std::string value) {
  values_[name] = std::move(value);
}

void LaunchValues::SetInteger(const char* name, int64_t value) {
  values_[name] = absl::StrCat(value);
}

void LaunchValues::SetBoolean(const char* name, bool value) {
  values_[name] = value ? "true" : "false";
}

}  // namespace paratune
