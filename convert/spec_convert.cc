#include "convert/spec_convert.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "estimator/field_error.h"

namespace paratune {
namespace {

// The GpuSpec::name of a GPU given by its figures rather than a catalog type.
constexpr char kCustomGpuName[] = "custom";

// A client's string quoted for an error message, cut to a few dozen bytes: the message travels
// in gRPC's trailing metadata, whose size is capped (an over-long echo turns INVALID_ARGUMENT
// into RESOURCE_EXHAUSTED on the client).
std::string Quoted(absl::string_view value) {
  constexpr size_t kMaxQuotedBytes = 64;
  if (value.size() <= kMaxQuotedBytes) return absl::StrCat("\"", value, "\"");
  return absl::StrCat("\"", value.substr(0, kMaxQuotedBytes), "...\" (", value.size(), " bytes)");
}

constexpr int kMaxMicroBatchSizes = 16;
constexpr int64_t kMaxMicroBatchSize = 1024;
constexpr int64_t kMaxVirtualPipelineSize = 1024;
constexpr int kMaxRecomputeModes = 3;
constexpr int kMaxDataParallelShardings = 4;
constexpr double kDefaultSafeMemoryFraction = 0.80;

// Dimensions of an explicit model, in proto field order, with their proto names.
struct DimensionField {
  const char* name;
  int64_t value;
};

absl::StatusOr<ModelSpec> PresetModel(const v1::ModelSpec& proto) {
  const DimensionField fields[] = {
      {"model.hidden_size", proto.hidden_size()},
      {"model.ffn_hidden_size", proto.ffn_hidden_size()},
      {"model.num_layers", proto.num_layers()},
      {"model.num_attention_heads", proto.num_attention_heads()},
      {"model.num_kv_heads", proto.num_kv_heads()},
      {"model.vocab_size", proto.vocab_size()},
      {"model.num_experts", proto.num_experts()},
      {"model.moe_router_top_k", proto.moe_router_top_k()},
      {"model.moe_ffn_hidden_size", proto.moe_ffn_hidden_size()},
      {"model.num_shared_experts", proto.num_shared_experts()},
      {"model.shared_expert_ffn_hidden_size", proto.shared_expert_ffn_hidden_size()},
      {"model.moe_layer_step", proto.moe_layer_step()},
      {"model.moe_first_dense_layers", proto.moe_first_dense_layers()},
      {"model.head_dim", proto.head_dim()},
      {"model.moe_router_score", proto.moe_router_score()},
  };
  for (const DimensionField& field : fields) {
    if (field.value != 0) {
      return FieldError(field.name,
                        absl::StrCat("(", field.value, ") must be 0 when model.preset (",
                                     Quoted(proto.preset()), ") is set"));
    }
  }
  if (proto.tied_embeddings()) {
    return FieldError("model.tied_embeddings",
                      absl::StrCat("(true) must be unset when model.preset (",
                                   Quoted(proto.preset()), ") is set"));
  }
  absl::StatusOr<ModelSpec> model = FindModelPreset(proto.preset());
  if (!model.ok()) {
    return FieldError("model.preset",
                      absl::StrCat("(", Quoted(proto.preset()), ") is not a known model; known: ",
                                   absl::StrJoin(ModelPresetNames(), ", ")));
  }
  return model;
}

absl::StatusOr<RouterScore> RouterScoreFromProto(const v1::ModelSpec& proto) {
  switch (proto.moe_router_score()) {
    case v1::MOE_ROUTER_SCORE_UNSPECIFIED:
      return RouterScore::kSoftmax;
    case v1::MOE_ROUTER_SCORE_SOFTMAX:
    case v1::MOE_ROUTER_SCORE_SIGMOID:
      if (proto.num_experts() == 0) {
        return FieldError("model.moe_router_score",
                          absl::StrCat("(", v1::MoeRouterScore_Name(proto.moe_router_score()),
                                       ") must be unset when model.num_experts is 0 (a dense "
                                       "model)"));
      }
      return proto.moe_router_score() == v1::MOE_ROUTER_SCORE_SIGMOID ? RouterScore::kSigmoid
                                                                      : RouterScore::kSoftmax;
    default:
      return FieldError("model.moe_router_score",
                        absl::StrCat("(", static_cast<int>(proto.moe_router_score()),
                                     ") is not a known router score"));
  }
}

absl::StatusOr<GpuSpec> GpuFromProto(const v1::GpuSpec& proto) {
  GpuSpec gpu;
  if (proto.type().empty()) {
    const struct {
      const char* name;
      bool set;
    } fields[] = {
        {"cluster.gpu.memory_bytes", proto.memory_bytes() != 0},
        {"cluster.gpu.peak_bf16_tflops", proto.peak_bf16_tflops() != 0},
        {"cluster.gpu.hbm_bandwidth_gbps", proto.hbm_bandwidth_gbps() != 0},
        {"cluster.gpu.nvlink_bandwidth_gbps", proto.nvlink_bandwidth_gbps() != 0},
        {"cluster.gpu.network_bandwidth_gbps", proto.network_bandwidth_gbps() != 0},
    };
    for (const auto& field : fields) {
      if (!field.set) {
        return FieldError(field.name, "must be set when cluster.gpu.type is empty");
      }
    }
    gpu.name = kCustomGpuName;
  } else {
    absl::StatusOr<GpuSpec> preset = FindGpuPreset(proto.type());
    if (!preset.ok()) {
      return FieldError("cluster.gpu.type",
                        absl::StrCat("(", Quoted(proto.type()), ") is not a known GPU; known: ",
                                     absl::StrJoin(GpuPresetNames(), ", ")));
    }
    gpu = *std::move(preset);
  }
  if (proto.memory_bytes() != 0) gpu.memory_bytes = proto.memory_bytes();
  if (proto.peak_bf16_tflops() != 0) gpu.peak_bf16_tflops = proto.peak_bf16_tflops();
  if (proto.hbm_bandwidth_gbps() != 0) gpu.hbm_bandwidth_gbps = proto.hbm_bandwidth_gbps();
  if (proto.nvlink_bandwidth_gbps() != 0) {
    gpu.nvlink_bandwidth_gbps = proto.nvlink_bandwidth_gbps();
  }
  if (proto.network_bandwidth_gbps() != 0) {
    gpu.network_bandwidth_gbps = proto.network_bandwidth_gbps();
  }
  return gpu;
}

absl::StatusOr<Recompute> RecomputeFromProto(v1::Recompute proto) {
  switch (proto) {
    case v1::RECOMPUTE_UNSPECIFIED:
    case v1::RECOMPUTE_NONE:
      return Recompute::kNone;
    case v1::RECOMPUTE_SELECTIVE:
      return Recompute::kSelective;
    case v1::RECOMPUTE_FULL:
      return Recompute::kFull;
    default:
      return FieldError("config.recompute", absl::StrCat("(", static_cast<int>(proto),
                                                         ") is not a known recompute mode"));
  }
}

// A search space's list of sizes, `field` (expert (tensor) parallel sizes, hybrid-sharding
// groups), or a field error when it is too long; the planner checks its entries
// (CheckExpertSizeLists, PlanConfigurations).
absl::StatusOr<std::vector<int64_t>> SizeListFromProto(
    absl::string_view field, const google::protobuf::RepeatedField<int64_t>& proto) {
  if (proto.size() > kMaxMicroBatchSizes) {
    return FieldError(field, absl::StrCat("has ", proto.size(), " entries; at most ",
                                          kMaxMicroBatchSizes, " are allowed"));
  }
  return std::vector<int64_t>(proto.begin(), proto.end());
}

}  // namespace

absl::StatusOr<DataParallelSharding> DataParallelShardingFromProto(v1::DataParallelSharding proto,
                                                                   DataParallelSharding unset,
                                                                   absl::string_view field) {
  switch (proto) {
    case v1::DP_SHARDING_UNSPECIFIED:
      return unset;
    case v1::DP_SHARDING_NONE:
      return DataParallelSharding::kNone;
    case v1::DP_SHARDING_OPTIMIZER:
      return DataParallelSharding::kOptimizer;
    case v1::DP_SHARDING_GRADIENTS:
      return DataParallelSharding::kGradients;
    case v1::DP_SHARDING_FULL:
      return DataParallelSharding::kFull;
    default:
      return FieldError(field, absl::StrCat("(", static_cast<int>(proto),
                                            ") is not a known DataParallelSharding"));
  }
}

absl::StatusOr<ModelSpec> ModelSpecFromProto(const v1::ModelSpec& proto) {
  if (!proto.preset().empty()) return PresetModel(proto);
  ModelDimensions dims;
  dims.hidden_size = proto.hidden_size();
  dims.ffn_hidden_size = proto.ffn_hidden_size();
  dims.num_layers = proto.num_layers();
  dims.num_attention_heads = proto.num_attention_heads();
  dims.num_kv_heads = proto.num_kv_heads();
  dims.vocab_size = proto.vocab_size();
  dims.tied_embeddings = proto.tied_embeddings();
  dims.head_dim = proto.head_dim();
  MoeDimensions& moe = dims.moe;
  moe.num_experts = proto.num_experts();
  moe.router_top_k = proto.moe_router_top_k();
  moe.expert_ffn_hidden_size = proto.moe_ffn_hidden_size();
  moe.num_shared_experts = proto.num_shared_experts();
  moe.shared_expert_ffn_hidden_size = proto.shared_expert_ffn_hidden_size();
  moe.layer_step = proto.moe_layer_step() == 0 ? 1 : proto.moe_layer_step();
  moe.first_dense_layers = proto.moe_first_dense_layers();
  PT_ASSIGN_OR_RETURN(moe.router_score, RouterScoreFromProto(proto));
  // ModelSpec::Create rejects every dimension left 0 with its field name and range, and MoE
  // fields set on a dense model.
  return ModelSpec::Create("custom", dims);
}

absl::StatusOr<TrainingSpec> TrainingSpecFromProto(const v1::TrainingSpec& proto) {
  TrainingOptions options;
  options.global_batch_size = proto.global_batch_size();
  options.seq_len = proto.seq_len();
  switch (proto.precision()) {
    case v1::PRECISION_UNSPECIFIED:
    case v1::BF16:
      options.fp8 = false;
      break;
    case v1::FP8:
      options.fp8 = true;
      break;
    default:
      return FieldError("training.precision", absl::StrCat("(", static_cast<int>(proto.precision()),
                                                           ") is not a known precision"));
  }
  options.distributed_optimizer =
      proto.has_distributed_optimizer() ? proto.distributed_optimizer() : true;
  options.fp32_gradients = proto.has_fp32_gradients() ? proto.fp32_gradients() : true;
  options.flash_attention = proto.has_flash_attention() ? proto.flash_attention() : true;
  options.fp8_param_gather = proto.fp8_param_gather();
  options.tp_comm_overlap = proto.tp_comm_overlap();
  switch (proto.cp_comm_type()) {
    case v1::CP_COMM_TYPE_UNSPECIFIED:
    case v1::CP_COMM_TYPE_P2P:
      options.cp_comm_type = CpCommType::kP2p;
      break;
    case v1::CP_COMM_TYPE_ALL_GATHER:
      options.cp_comm_type = CpCommType::kAllGather;
      break;
    default:
      return FieldError(
          "training.cp_comm_type",
          absl::StrCat(
              "(", static_cast<int>(proto.cp_comm_type()),
              ") is not a known CpCommType; use CP_COMM_TYPE_P2P or CP_COMM_TYPE_ALL_GATHER"));
  }
  options.moe_capacity_factor = proto.moe_capacity_factor();
  switch (proto.moe_token_dispatcher()) {
    case v1::MOE_TOKEN_DISPATCHER_UNSPECIFIED:
    case v1::MOE_TOKEN_DISPATCHER_ALLTOALL:
      options.moe_token_dispatcher = TokenDispatcher::kAllToAll;
      break;
    case v1::MOE_TOKEN_DISPATCHER_ALLGATHER:
      options.moe_token_dispatcher = TokenDispatcher::kAllGather;
      break;
    case v1::MOE_TOKEN_DISPATCHER_FLEX_DEEPEP:
      options.moe_token_dispatcher = TokenDispatcher::kFlexDeepEp;
      break;
    case v1::MOE_TOKEN_DISPATCHER_FLEX_HYBRIDEP:
      options.moe_token_dispatcher = TokenDispatcher::kFlexHybridEp;
      break;
    default:
      return FieldError("training.moe_token_dispatcher",
                        absl::StrCat("(", static_cast<int>(proto.moe_token_dispatcher()),
                                     ") is not a known MoeTokenDispatcher; use "
                                     "MOE_TOKEN_DISPATCHER_ALLTOALL, "
                                     "MOE_TOKEN_DISPATCHER_ALLGATHER, "
                                     "MOE_TOKEN_DISPATCHER_FLEX_DEEPEP or "
                                     "MOE_TOKEN_DISPATCHER_FLEX_HYBRIDEP"));
  }
  options.moe_grouped_gemm = proto.has_moe_grouped_gemm() ? proto.moe_grouped_gemm() : true;
  options.moe_expert_parallel_overlap = proto.moe_expert_parallel_overlap();
  options.moe_shared_expert_overlap = proto.moe_shared_expert_overlap();
  switch (proto.framework()) {
    case v1::FRAMEWORK_UNSPECIFIED:
    case v1::FRAMEWORK_MEGATRON:
      options.framework = Framework::kMegatron;
      break;
    case v1::FRAMEWORK_TORCHTITAN:
      options.framework = Framework::kTorchTitan;
      break;
    default:
      return FieldError("training.framework",
                        absl::StrCat("(", static_cast<int>(proto.framework()),
                                     ") is not a known Framework; use FRAMEWORK_MEGATRON or "
                                     "FRAMEWORK_TORCHTITAN"));
  }
  options.torch_compile = proto.torch_compile();
  return TrainingSpec::Create(options);
}

absl::StatusOr<ClusterSpec> ClusterSpecFromProto(const v1::ClusterSpec& proto) {
  PT_ASSIGN_OR_RETURN(GpuSpec gpu, GpuFromProto(proto.gpu()));
  return ClusterSpec::Create(gpu, proto.num_nodes(), proto.gpus_per_node());
}

absl::StatusOr<ParallelDims> ParallelDimsFromProto(const v1::ParallelConfig& proto,
                                                   const TrainingSpec& training) {
  ParallelDims dims;
  dims.dp = proto.data_parallel();
  dims.tp = proto.tensor_parallel();
  dims.pp = proto.pipeline_parallel();
  dims.cp = proto.context_parallel();
  dims.micro_batch = proto.micro_batch_size();
  dims.virtual_pipeline = proto.virtual_pipeline() == 0 ? 1 : proto.virtual_pipeline();
  dims.sequence_parallel = proto.has_sequence_parallel() ? proto.sequence_parallel() : dims.tp > 1;
  PT_ASSIGN_OR_RETURN(dims.recompute, RecomputeFromProto(proto.recompute()));
  dims.ep = proto.expert_parallel() == 0 ? 1 : proto.expert_parallel();
  dims.etp = proto.expert_tensor_parallel();
  PT_ASSIGN_OR_RETURN(
      dims.dp_sharding,
      DataParallelShardingFromProto(proto.dp_sharding(), training.DefaultDataParallelSharding(),
                                    "config.dp_sharding"));
  dims.dp_shard_group = proto.dp_shard_group();
  return dims;
}

absl::StatusOr<ParallelConfig> ParallelConfigFromProto(const v1::ParallelConfig& proto,
                                                       const ModelSpec& model,
                                                       const TrainingSpec& training,
                                                       const ClusterSpec& cluster,
                                                       const PlacementRules& rules) {
  PT_ASSIGN_OR_RETURN(ParallelDims dims, ParallelDimsFromProto(proto, training));
  // Megatron-LM overlaps tensor-parallel communication only with sequence parallelism
  // (megatron/training/arguments.py:1401-1402). The planner gives every tp > 1 configuration
  // sequence parallelism; a configuration given explicitly may lack it.
  if (training.tp_comm_overlap() && dims.tp > 1 && !dims.sequence_parallel) {
    return FieldError("training.tp_comm_overlap",
                      absl::StrCat("(true) needs config.sequence_parallel (false) with "
                                   "config.tensor_parallel (",
                                   dims.tp,
                                   ") > 1: Megatron-LM overlaps tensor-parallel communication only "
                                   "with sequence parallelism"));
  }
  return ParallelConfig::Create(model, training, cluster, rules, dims);
}

absl::StatusOr<PlanOptions> PlanOptionsFromProto(const v1::SearchSpace& proto) {
  PlanOptions options;
  if (proto.micro_batch_sizes_size() > kMaxMicroBatchSizes) {
    return FieldError("space.micro_batch_sizes",
                      absl::StrCat("has ", proto.micro_batch_sizes_size(), " entries; at most ",
                                   kMaxMicroBatchSizes, " are allowed"));
  }
  for (int i = 0; i < proto.micro_batch_sizes_size(); ++i) {
    const int64_t size = proto.micro_batch_sizes(i);
    if (size < 1 || size > kMaxMicroBatchSize) {
      return FieldError(absl::StrCat("space.micro_batch_sizes[", i, "]"),
                        absl::StrCat("(", size, ") must be in [1, ", kMaxMicroBatchSize, "]"));
    }
    options.micro_batch_sizes.push_back(size);
  }
  const double fraction = proto.safe_memory_fraction();
  if (fraction == 0) {
    options.memory.safe_fraction = kDefaultSafeMemoryFraction;
  } else if (fraction > 0 && fraction <= 1) {
    options.memory.safe_fraction = fraction;
  } else {
    return FieldError("space.safe_memory_fraction",
                      absl::StrCat("(", fraction, ") must be in (0, 1]"));
  }
  if (proto.virtual_pipeline_sizes_size() > kMaxMicroBatchSizes) {
    return FieldError("space.virtual_pipeline_sizes",
                      absl::StrCat("has ", proto.virtual_pipeline_sizes_size(),
                                   " entries; at most ", kMaxMicroBatchSizes, " are allowed"));
  }
  for (int i = 0; i < proto.virtual_pipeline_sizes_size(); ++i) {
    const int64_t size = proto.virtual_pipeline_sizes(i);
    if (size < 1 || size > kMaxVirtualPipelineSize) {
      return FieldError(absl::StrCat("space.virtual_pipeline_sizes[", i, "]"),
                        absl::StrCat("(", size, ") must be in [1, ", kMaxVirtualPipelineSize, "]"));
    }
    options.virtual_pipeline_sizes.push_back(size);
  }
  if (proto.recompute_modes_size() > kMaxRecomputeModes) {
    return FieldError("space.recompute_modes",
                      absl::StrCat("has ", proto.recompute_modes_size(), " entries; at most ",
                                   kMaxRecomputeModes, " are allowed"));
  }
  for (int i = 0; i < proto.recompute_modes_size(); ++i) {
    absl::StatusOr<Recompute> mode = RecomputeFromProto(proto.recompute_modes(i));
    if (!mode.ok()) {
      return FieldError(absl::StrCat("space.recompute_modes[", i, "]"),
                        absl::StrCat("(", static_cast<int>(proto.recompute_modes(i)),
                                     ") is not a known recompute mode"));
    }
    options.recompute_modes.push_back(*mode);
  }
  PT_ASSIGN_OR_RETURN(
      options.expert_parallel_sizes,
      SizeListFromProto("space.expert_parallel_sizes", proto.expert_parallel_sizes()));
  PT_ASSIGN_OR_RETURN(options.expert_tensor_parallel_sizes,
                      SizeListFromProto("space.expert_tensor_parallel_sizes",
                                        proto.expert_tensor_parallel_sizes()));
  if (proto.dp_sharding_modes_size() > kMaxDataParallelShardings) {
    return FieldError("space.dp_sharding_modes",
                      absl::StrCat("has ", proto.dp_sharding_modes_size(), " entries; at most ",
                                   kMaxDataParallelShardings, " are allowed"));
  }
  for (int i = 0; i < proto.dp_sharding_modes_size(); ++i) {
    const std::string field = absl::StrCat("space.dp_sharding_modes[", i, "]");
    if (proto.dp_sharding_modes(i) == v1::DP_SHARDING_UNSPECIFIED) {
      return FieldError(field,
                        "(DP_SHARDING_UNSPECIFIED) names no mode; leave the list empty "
                        "for the training's default");
    }
    PT_ASSIGN_OR_RETURN(const DataParallelSharding mode,
                        DataParallelShardingFromProto(proto.dp_sharding_modes(i),
                                                      DataParallelSharding::kOptimizer, field));
    options.dp_sharding_modes.push_back(mode);
  }
  PT_ASSIGN_OR_RETURN(options.dp_shard_groups,
                      SizeListFromProto("space.dp_shard_groups", proto.dp_shard_groups()));
  options.rules.allow_tp_cp_across_nodes = proto.allow_tp_cp_across_nodes();
  options.rules.allow_uneven_pipeline = proto.allow_uneven_pipeline_stages();
  if (!v1::MemoryPolicy_IsValid(proto.memory_policy())) {
    return FieldError(
        "space.memory_policy",
        absl::StrCat("(", static_cast<int>(proto.memory_policy()), ") is not a MemoryPolicy"));
  }
  if (proto.memory_policy() == v1::SAFE_ONLY && proto.include_risky()) {
    return FieldError("space.include_risky",
                      "(true) asks for RISKY configurations, which space.memory_policy (SAFE_ONLY) "
                      "excludes");
  }
  options.include_risky = ProbesRiskyConfigurations(proto);
  return options;
}

bool ProbesRiskyConfigurations(const v1::SearchSpace& space) {
  return space.memory_policy() != v1::SAFE_ONLY;
}

v1::DataParallelSharding DataParallelShardingToProto(DataParallelSharding sharding) {
  switch (sharding) {
    case DataParallelSharding::kNone:
      return v1::DP_SHARDING_NONE;
    case DataParallelSharding::kOptimizer:
      return v1::DP_SHARDING_OPTIMIZER;
    case DataParallelSharding::kGradients:
      return v1::DP_SHARDING_GRADIENTS;
    case DataParallelSharding::kFull:
      return v1::DP_SHARDING_FULL;
  }
  return v1::DP_SHARDING_OPTIMIZER;
}

v1::Recompute RecomputeToProto(Recompute recompute) {
  switch (recompute) {
    case Recompute::kNone:
      return v1::RECOMPUTE_NONE;
    case Recompute::kSelective:
      return v1::RECOMPUTE_SELECTIVE;
    case Recompute::kFull:
      return v1::RECOMPUTE_FULL;
  }
  return v1::RECOMPUTE_NONE;
}

v1::ParallelConfig ParallelConfigToProto(const ParallelConfig& config) {
  v1::ParallelConfig proto;
  proto.set_data_parallel(config.dp());
  proto.set_tensor_parallel(config.tp());
  proto.set_pipeline_parallel(config.pp());
  proto.set_context_parallel(config.cp());
  proto.set_micro_batch_size(config.micro_batch());
  proto.set_virtual_pipeline(config.virtual_pipeline());
  proto.set_sequence_parallel(config.sequence_parallel());
  proto.set_recompute(RecomputeToProto(config.recompute()));
  // Only where not the default, so that a dense configuration reads as it always has.
  if (config.ep() > 1) proto.set_expert_parallel(config.ep());
  if (config.dims().etp != 0) proto.set_expert_tensor_parallel(config.dims().etp);
  // Always: UNSPECIFIED reads as the training's default, which this function does not know.
  proto.set_dp_sharding(DataParallelShardingToProto(config.dp_sharding()));
  if (config.dims().dp_shard_group != 0) proto.set_dp_shard_group(config.dims().dp_shard_group);
  return proto;
}

absl::Status CheckTrainingRunsOnGpu(const TrainingSpec& training, const ClusterSpec& cluster) {
  const GpuSpec& gpu = cluster.gpu();
  if (!training.fp8() || ArchitectureOf(gpu) != GpuArchitecture::kAmpere) return absl::OkStatus();
  // A catalog GPU by its type, a custom one by the bf16 peak that tells Ampere from Hopper.
  const std::string named =
      gpu.name == kCustomGpuName
          ? absl::StrCat("cluster.gpu.peak_bf16_tflops (", gpu.peak_bf16_tflops, ")")
          : absl::StrCat("cluster.gpu.type (\"", gpu.name, "\")");
  return FieldError("training.precision",
                    absl::StrCat("(FP8) needs fp8 tensor cores (compute capability 8.9 or later), "
                                 "and ",
                                 named, " is an Ampere GPU without them"));
}

absl::StatusOr<ResolvedSpec> ResolveSearchSpec(const v1::SearchSpec& proto) {
  PT_ASSIGN_OR_RETURN(ModelSpec model, ModelSpecFromProto(proto.model()));
  PT_ASSIGN_OR_RETURN(TrainingSpec training, TrainingSpecFromProto(proto.training()));
  PT_ASSIGN_OR_RETURN(ClusterSpec cluster, ClusterSpecFromProto(proto.cluster()));
  PT_RETURN_IF_ERROR(CheckTrainingRunsOnGpu(training, cluster));
  PT_ASSIGN_OR_RETURN(PlanOptions plan_options, PlanOptionsFromProto(proto.space()));
  PT_RETURN_IF_ERROR(CheckExpertSizeLists(model, plan_options));
  return ResolvedSpec{std::move(model), std::move(training), std::move(cluster),
                      std::move(plan_options)};
}

absl::StatusOr<ResolvedConfiguration> ResolveConfiguration(const v1::ModelSpec& model,
                                                           const v1::TrainingSpec& training,
                                                           const v1::ClusterSpec& cluster,
                                                           const v1::ParallelConfig& config) {
  PT_ASSIGN_OR_RETURN(ModelSpec model_spec, ModelSpecFromProto(model));
  PT_ASSIGN_OR_RETURN(TrainingSpec training_spec, TrainingSpecFromProto(training));
  PT_ASSIGN_OR_RETURN(ClusterSpec cluster_spec, ClusterSpecFromProto(cluster));
  PT_RETURN_IF_ERROR(CheckTrainingRunsOnGpu(training_spec, cluster_spec));
  PlacementRules rules;
  rules.allow_tp_cp_across_nodes = true;
  rules.allow_uneven_pipeline = true;
  PT_ASSIGN_OR_RETURN(
      ParallelConfig parallel,
      ParallelConfigFromProto(config, model_spec, training_spec, cluster_spec, rules));
  return ResolvedConfiguration{std::move(model_spec), std::move(training_spec),
                               std::move(cluster_spec), std::move(parallel)};
}

}  // namespace paratune
