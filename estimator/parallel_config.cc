#include "estimator/parallel_config.h"

#include <initializer_list>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "estimator/field_checks.h"
#include "estimator/field_error.h"
#include "estimator/pipeline_layout.h"

namespace paratune {
namespace {

bool Divides(int64_t divisor, int64_t value) { return value % divisor == 0; }

bool AnyFieldBelowOne(const ParallelDims& d) {
  return d.dp < 1 || d.tp < 1 || d.pp < 1 || d.cp < 1 || d.micro_batch < 1 ||
         d.virtual_pipeline < 1;
}

// The product of `sizes` when every size is >= 1 and the product is at most `limit`, else
// nullopt. Each multiplication is of two numbers at most `limit` (<= 2^31), so sizes of any
// magnitude (a request's, or --explain's) cannot overflow it.
std::optional<int64_t> ProductWithin(std::initializer_list<int64_t> sizes, int64_t limit) {
  int64_t product = 1;
  for (const int64_t size : sizes) {
    if (size < 1 || size > limit) return std::nullopt;
    product *= size;
    if (product > limit) return std::nullopt;
  }
  return product;
}

// dp x tp x pp x cp, the attention layers' GPUs, as ProductWithin.
std::optional<int64_t> GpusWithin(const ParallelDims& d, int64_t limit) {
  return ProductWithin({d.dp, d.tp, d.pp, d.cp}, limit);
}

// etp x ep x pp (etp resolved), the expert layers' ranks besides expert-dp, as ProductWithin.
std::optional<int64_t> ExpertRanksWithin(const ParallelDims& d, int64_t limit) {
  return ProductWithin({ExpertTensorParallel(d), d.ep, d.pp}, limit);
}

// The rules of expert parallelism, each from Megatron-LM core_v0.19.0 unless said otherwise
// (docs/estimator.md, "Expert parallelism"); kValid when they hold. A dense model passes with ep 1
// and etp 0 or tp.
Rejection CheckExpertRules(const ModelSpec& model, const ClusterSpec& cluster,
                           const ParallelDims& d) {
  if (!model.is_moe()) {
    // megatron/training/arguments.py validate_args and TransformerConfig.__post_init__:
    // "num_experts must be non None to use expert model parallelism".
    if (d.ep > 1) return Rejection::kExpertParallelDense;
    // Megatron-LM ignores --expert-tensor-parallel-size without experts; paratune refuses it
    // so that no two dense configurations differ in a size that changes nothing.
    if (d.etp > 0 && d.etp != d.tp) return Rejection::kExpertTensorParallelDense;
    // Sizes below the defaults form no expert grid; the defaults' grid, tp x pp, divides the
    // GPUs as the attention's does.
    if (d.ep < 1 || d.etp < 0) return Rejection::kExpertWorldSize;
    return Rejection::kValid;
  }
  // validate_args: "Number of experts should be a multiple of expert model parallel_size."
  if (d.ep >= 1 && !Divides(d.ep, model.moe().num_experts)) {
    return Rejection::kExpertParallelExperts;
  }
  // megatron/core/parallel_state.py initialize_model_parallel: the expert grid is
  // etp x ep x expert-dp x pp over the same world, so etp x ep x pp must divide it (cp has no
  // place there: it folds into ep and expert-dp). A size < 1 breaks it too.
  const std::optional<int64_t> ranks = ExpertRanksWithin(d, cluster.world_size());
  if (!ranks.has_value() || !Divides(*ranks, cluster.world_size())) {
    return Rejection::kExpertWorldSize;
  }
  // megatron/core/extensions/transformer_engine.py TEGroupedLinear.__init__ splits each
  // expert's FFN width over the expert tensor-parallel group with divide() (core/utils.py),
  // which asserts divisibility.
  if (!Divides(ExpertTensorParallel(d), model.moe().expert_ffn_hidden_size)) {
    return Rejection::kExpertTensorParallelFfn;
  }
  // megatron/core/transformer/moe/moe_layer.py MoELayer.forward raises in training when the
  // attention's tp > 1 without sequence parallelism.
  if (d.tp > 1 && !d.sequence_parallel) return Rejection::kMoeSequenceParallel;
  return Rejection::kValid;
}

// The rules of data-parallel sharding; kValid when they hold.
Rejection CheckShardingRules(const TrainingSpec& training, const ParallelDims& d) {
  // A group of dp ranks, or of all of them (0, which a group of dp would duplicate), and only
  // where there is something to shard.
  if (d.dp_shard_group < 0 ||
      (d.dp_shard_group > 0 && (d.dp_sharding == DataParallelSharding::kNone ||
                                d.dp_shard_group >= d.dp || !Divides(d.dp_shard_group, d.dp)))) {
    return Rejection::kDpShardGroup;
  }
  // TorchTitan shards with FSDP2 (torchtitan/distributed/parallel_dims.py: dp_shard), which
  // always shards the gradients with the optimizer states: it has no ZeRO-1.
  if (training.framework() == Framework::kTorchTitan &&
      d.dp_sharding == DataParallelSharding::kOptimizer) {
    return Rejection::kFrameworkSharding;
  }
  // Megatron-LM gathers fp8 weights only with its distributed optimizer
  // (megatron/training/arguments.py:1060-1062 at core_v0.19.0); TorchTitan only when FSDP
  // gathers the weights (its float8 enable_fsdp_float8_all_gather).
  if (training.fp8_param_gather() &&
      (d.dp_sharding == DataParallelSharding::kNone ||
       (training.framework() == Framework::kTorchTitan && !ShardsWeights(d.dp_sharding)))) {
    return Rejection::kFp8ParamGatherSharding;
  }
  return Rejection::kValid;
}

// The field a broken rule is reported against, the first its message names, and the rest of
// the message; nullopt for kValid and kCount.
std::optional<FieldFault> RejectionFault(Rejection rejection, const ModelSpec& model,
                                         const TrainingSpec& training, const ClusterSpec& cluster,
                                         const ParallelDims& d) {
  switch (rejection) {
    case Rejection::kValid:
      break;
    case Rejection::kWorldSizeMismatch: {
      // The product is left out where it is beyond any cluster.
      const std::optional<int64_t> gpus = GpusWithin(d, int64_t{1} << 31);
      return FieldFault{
          "config.data_parallel",
          absl::StrCat("(", d.dp, ") x config.tensor_parallel (", d.tp,
                       ") x config.pipeline_parallel (", d.pp, ") x config.context_parallel (",
                       d.cp, ")", gpus.has_value() ? absl::StrCat(" = ", *gpus) : "",
                       " does not equal the cluster's ", cluster.world_size(),
                       " GPUs (cluster.num_nodes (", cluster.num_nodes(),
                       ") x cluster.gpus_per_node (", cluster.gpus_per_node(), "))")};
    }
    case Rejection::kTpHeads:
      return FieldFault{"config.tensor_parallel",
                        absl::StrCat("(", d.tp, ") does not divide model.num_attention_heads (",
                                     model.num_attention_heads(), ")")};
    case Rejection::kTpKvHeads:
      return FieldFault{
          "config.tensor_parallel",
          absl::StrCat("(", d.tp, ") does not divide model.num_kv_heads (", model.num_kv_heads(),
                       "), nor does model.num_kv_heads divide it")};
    case Rejection::kPpLayers:
      return FieldFault{
          "config.pipeline_parallel",
          absl::StrCat("(", d.pp, ") does not divide model.num_layers (", model.num_layers(), ")")};
    case Rejection::kVirtualPipelineLayers:
      if (d.pp == 1) {
        return FieldFault{"config.virtual_pipeline",
                          absl::StrCat("(", d.virtual_pipeline,
                                       ") > 1 requires config.pipeline_parallel (", d.pp, ") > 1")};
      }
      if (d.virtual_pipeline > model.num_layers()) {
        return FieldFault{
            "config.virtual_pipeline",
            absl::StrCat("(", d.virtual_pipeline, ") is larger than model.num_layers (",
                         model.num_layers(), ")")};
      }
      return FieldFault{
          "config.virtual_pipeline",
          absl::StrCat("(", d.virtual_pipeline, ") x config.pipeline_parallel (", d.pp,
                       ") = ", d.virtual_pipeline * d.pp, " does not divide model.num_layers (",
                       model.num_layers(), ")")};
    case Rejection::kCpSequence:
      return FieldFault{
          "config.context_parallel",
          absl::StrCat("(", d.cp, ") x 2 = ", 2 * d.cp, " does not divide training.seq_len (",
                       training.seq_len(), ")")};
    case Rejection::kBatchDivisibility:
      if (d.micro_batch > training.global_batch_size()) {
        return FieldFault{
            "config.micro_batch_size",
            absl::StrCat("(", d.micro_batch, ") is larger than training.global_batch_size (",
                         training.global_batch_size(), ")")};
      }
      return FieldFault{"config.data_parallel",
                        absl::StrCat("(", d.dp, ") x config.micro_batch_size (", d.micro_batch,
                                     ") = ", d.dp * d.micro_batch,
                                     " does not divide training.global_batch_size (",
                                     training.global_batch_size(), ")")};
    case Rejection::kInterleavedMicroBatches:
      return FieldFault{
          "config.virtual_pipeline",
          absl::StrCat("(", d.virtual_pipeline, ") > 1 needs config.pipeline_parallel (", d.pp,
                       ") to divide the micro-batches per step, training.global_batch_size (",
                       training.global_batch_size(), ") / (config.data_parallel (", d.dp,
                       ") x config.micro_batch_size (", d.micro_batch,
                       ")) = ", training.global_batch_size() / (d.dp * d.micro_batch))};
    case Rejection::kTpCpAcrossNodes:
      return FieldFault{
          "config.tensor_parallel",
          absl::StrCat("(", d.tp, ") x config.context_parallel (", d.cp, ") = ", d.tp * d.cp,
                       " does not divide cluster.gpus_per_node (", cluster.gpus_per_node(),
                       "); tp x cp across nodes is not allowed")};
    case Rejection::kExpertParallelDense:
      return FieldFault{"config.expert_parallel",
                        absl::StrCat("(", d.ep,
                                     ") > 1 needs experts to split; model.moe.num_experts is 0 (a "
                                     "dense model)")};
    case Rejection::kExpertTensorParallelDense:
      return FieldFault{"config.expert_tensor_parallel",
                        absl::StrCat("(", d.etp, ") other than config.tensor_parallel (", d.tp,
                                     ") needs experts to split; model.moe.num_experts is 0 (a "
                                     "dense model)")};
    case Rejection::kExpertParallelExperts:
      return FieldFault{"config.expert_parallel",
                        absl::StrCat("(", d.ep, ") does not divide model.moe.num_experts (",
                                     model.moe().num_experts, ")")};
    case Rejection::kExpertWorldSize: {
      // The product is left out where it is beyond any cluster.
      const std::optional<int64_t> ranks = ExpertRanksWithin(d, int64_t{1} << 31);
      return FieldFault{
          "config.expert_parallel",
          absl::StrCat("(", d.ep, ") x config.expert_tensor_parallel (", ExpertTensorParallel(d),
                       d.etp == 0 ? ", config.tensor_parallel's" : "",
                       ") x config.pipeline_parallel (", d.pp, ")",
                       ranks.has_value() ? absl::StrCat(" = ", *ranks) : "",
                       " does not divide the cluster's ", cluster.world_size(),
                       " GPUs; the expert layers' etp x ep x expert data parallel x pp must "
                       "use them all")};
    }
    case Rejection::kExpertTensorParallelFfn:
      return FieldFault{
          "config.expert_tensor_parallel",
          absl::StrCat("(", ExpertTensorParallel(d), d.etp == 0 ? ", config.tensor_parallel's" : "",
                       ") does not divide model.moe.expert_ffn_hidden_size (",
                       model.moe().expert_ffn_hidden_size, ")")};
    case Rejection::kMoeSequenceParallel:
      return FieldFault{"config.sequence_parallel",
                        absl::StrCat("(false) with config.tensor_parallel (", d.tp,
                                     ") > 1 is refused for a mixture-of-experts model: "
                                     "Megatron-LM's MoE layers train only with sequence "
                                     "parallelism there")};
    case Rejection::kFlexDeepEpGroup:
      return FieldFault{
          "config.expert_parallel",
          absl::StrCat("(", d.ep, ") x config.expert_tensor_parallel (", ExpertTensorParallel(d),
                       ") = 1 leaves training.moe_token_dispatcher flex_deepep "
                       "nothing to dispatch: DeepEP needs etp x ep > 1")};
    case Rejection::kDpShardGroup:
      if (d.dp_shard_group > 0 && d.dp_sharding == DataParallelSharding::kNone) {
        return FieldFault{"config.dp_shard_group",
                          absl::StrCat("(", d.dp_shard_group,
                                       ") needs sharded states to group; config.dp_sharding is "
                                       "none")};
      }
      return FieldFault{
          "config.dp_shard_group",
          absl::StrCat("(", d.dp_shard_group, ") must be 0 (shard over all ",
                       "config.data_parallel ranks) or a divisor of config.data_parallel (", d.dp,
                       ") smaller than it (hybrid sharding)")};
    case Rejection::kFrameworkSharding:
      return FieldFault{"config.dp_sharding",
                        absl::StrCat("(", DataParallelShardingName(d.dp_sharding),
                                     ") is not a "
                                     "mode of training.framework (",
                                     FrameworkName(training.framework()),
                                     "): its FSDP shards the gradients with the optimizer "
                                     "states; use gradients, full or none")};
    case Rejection::kFp8ParamGatherSharding:
      return FieldFault{
          "config.dp_sharding",
          absl::StrCat("(", DataParallelShardingName(d.dp_sharding),
                       ") cannot gather fp8 weights (training.fp8_param_gather true) under "
                       "training.framework ",
                       FrameworkName(training.framework()), ": it needs ",
                       training.framework() == Framework::kTorchTitan
                           ? "full (FSDP's float8 all-gather)"
                           : "sharded optimizer states (the distributed optimizer)")};
    case Rejection::kCount:
      break;
  }
  return std::nullopt;
}

}  // namespace

int64_t DataParallelShardRanks(const ParallelDims& dims) {
  if (dims.dp_sharding == DataParallelSharding::kNone) return 1;
  return dims.dp_shard_group > 0 ? dims.dp_shard_group : dims.dp;
}

int64_t ExpertTensorParallel(const ParallelDims& dims) {
  return dims.etp == 0 ? dims.tp : dims.etp;
}

ParallelDims MakeParallelDims(int64_t dp, int64_t tp, int64_t pp, int64_t cp, int64_t micro_batch) {
  ParallelDims dims;
  dims.dp = dp;
  dims.tp = tp;
  dims.pp = pp;
  dims.cp = cp;
  dims.micro_batch = micro_batch;
  dims.sequence_parallel = tp > 1;
  return dims;
}

const char* RecomputeName(Recompute recompute) {
  switch (recompute) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "none";
}

const char* RejectionRule(Rejection rejection) {
  switch (rejection) {
    case Rejection::kValid:
      return "valid";
    case Rejection::kWorldSizeMismatch:
      return "data_parallel x tensor_parallel x pipeline_parallel x context_parallel does not "
             "equal the GPU count";
    case Rejection::kTpHeads:
      return "tensor_parallel does not divide heads";
    case Rejection::kTpKvHeads:
      return "tensor_parallel and kv heads: neither divides the other";
    case Rejection::kPpLayers:
      return "pipeline_parallel does not divide layers";
    case Rejection::kVirtualPipelineLayers:
      return "virtual_pipeline x pipeline_parallel does not divide layers";
    case Rejection::kCpSequence:
      return "2 x context_parallel does not divide seq_len";
    case Rejection::kBatchDivisibility:
      return "data_parallel x micro_batch_size does not divide global_batch_size";
    case Rejection::kInterleavedMicroBatches:
      return "pipeline_parallel does not divide the micro-batches of an interleaved schedule";
    case Rejection::kTpCpAcrossNodes:
      return "tensor_parallel x context_parallel does not fit in a node";
    case Rejection::kExpertParallelDense:
      return "expert_parallel > 1 needs a mixture-of-experts model";
    case Rejection::kExpertTensorParallelDense:
      return "expert_tensor_parallel other than tensor_parallel needs a mixture-of-experts model";
    case Rejection::kExpertParallelExperts:
      return "expert_parallel does not divide the experts";
    case Rejection::kExpertWorldSize:
      return "expert_tensor_parallel x expert_parallel x pipeline_parallel does not divide the "
             "GPU count";
    case Rejection::kExpertTensorParallelFfn:
      return "expert_tensor_parallel does not divide the expert FFN width";
    case Rejection::kMoeSequenceParallel:
      return "a mixture-of-experts model with tensor_parallel > 1 needs sequence_parallel";
    case Rejection::kFlexDeepEpGroup:
      return "the flex dispatcher's DeepEP backend needs expert_tensor_parallel x "
             "expert_parallel > 1";
    case Rejection::kDpShardGroup:
      return "dp_shard_group is not a proper divisor of data_parallel, or nothing is sharded";
    case Rejection::kFrameworkSharding:
      return "the framework has no such data-parallel sharding";
    case Rejection::kFp8ParamGatherSharding:
      return "fp8_param_gather needs the framework's sharding of the weights' gather";
    case Rejection::kCount:
      break;
  }
  return "unknown rule";
}

Rejection CheckRules(const ModelSpec& model, const TrainingSpec& training,
                     const ClusterSpec& cluster, const PlacementRules& rules,
                     const ParallelDims& d) {
  if (AnyFieldBelowOne(d) || GpusWithin(d, cluster.world_size()) != cluster.world_size()) {
    return Rejection::kWorldSizeMismatch;
  }
  // From here on dp, tp, pp and cp are each at most the GPU count.
  if (!Divides(d.tp, model.num_attention_heads())) return Rejection::kTpHeads;
  // Megatron replicates KV heads when tp exceeds them, so either direction is fine.
  if (!Divides(d.tp, model.num_kv_heads()) && !Divides(model.num_kv_heads(), d.tp)) {
    return Rejection::kTpKvHeads;
  }
  const int64_t layers = model.num_layers();
  const bool uneven = rules.allow_uneven_pipeline;
  if (!EvenPipelineSplitFits(layers, d.pp, 1) &&
      !(uneven && UnevenPipelineSplitFits(layers, d.pp, 1))) {
    return Rejection::kPpLayers;
  }
  // More chunks than layers never fits; checked first so that pp x vp cannot overflow.
  if (d.virtual_pipeline > 1 &&
      (d.pp == 1 || d.virtual_pipeline > layers ||
       (!EvenPipelineSplitFits(layers, d.pp, d.virtual_pipeline) &&
        !(uneven && UnevenPipelineSplitFits(layers, d.pp, d.virtual_pipeline))))) {
    return Rejection::kVirtualPipelineLayers;
  }
  // Load-balanced causal CP splits each sequence into 2 x cp chunks.
  if (d.cp > 1 && !Divides(2 * d.cp, training.seq_len())) return Rejection::kCpSequence;
  // A micro-batch larger than the global batch never divides it; checked first so that
  // dp x b cannot overflow.
  if (d.micro_batch > training.global_batch_size() ||
      !Divides(d.dp * d.micro_batch, training.global_batch_size())) {
    return Rejection::kBatchDivisibility;
  }
  // Megatron-LM's interleaved 1F1B runs the micro-batches in groups of pp per model chunk
  // (megatron/core/pipeline_parallel/schedules.py), so pp must divide their number.
  if (d.virtual_pipeline > 1 &&
      !Divides(d.pp, training.global_batch_size() / (d.dp * d.micro_batch))) {
    return Rejection::kInterleavedMicroBatches;
  }
  // TP and CP groups are the innermost ranks; inside a node they must tile it exactly.
  const int64_t tp_cp = d.tp * d.cp;
  if (!rules.allow_tp_cp_across_nodes &&
      (tp_cp > cluster.gpus_per_node() || !Divides(tp_cp, cluster.gpus_per_node()))) {
    return Rejection::kTpCpAcrossNodes;
  }
  const Rejection expert = CheckExpertRules(model, cluster, d);
  if (expert != Rejection::kValid) return expert;
  // megatron/core/transformer/moe/token_dispatcher.py:1770 at core_v0.19.0
  // (MoEFlexTokenDispatcher.__init__): "DeepEP dispatcher requires TPxEP > 1", over the expert
  // tensor-parallel group.
  if (model.is_moe() && training.moe_token_dispatcher() == TokenDispatcher::kFlexDeepEp &&
      ExpertTensorParallel(d) * d.ep == 1) {
    return Rejection::kFlexDeepEpGroup;
  }
  return CheckShardingRules(training, d);
}

std::string DescribeRejection(Rejection rejection, const ModelSpec& model,
                              const TrainingSpec& training, const ClusterSpec& cluster,
                              const ParallelDims& d) {
  if (rejection == Rejection::kValid) return "valid";
  const std::optional<FieldFault> fault = RejectionFault(rejection, model, training, cluster, d);
  if (!fault.has_value()) return "unknown rule";
  return absl::StrCat(fault->field, " ", fault->problem);
}

absl::StatusOr<ParallelConfig> ParallelConfig::Create(const ModelSpec& model,
                                                      const TrainingSpec& training,
                                                      const ClusterSpec& cluster,
                                                      const PlacementRules& rules,
                                                      const ParallelDims& dims) {
  const struct {
    const char* field;
    int64_t value;
  } fields[] = {
      {"config.data_parallel", dims.dp},
      {"config.tensor_parallel", dims.tp},
      {"config.pipeline_parallel", dims.pp},
      {"config.context_parallel", dims.cp},
      {"config.micro_batch_size", dims.micro_batch},
      {"config.virtual_pipeline", dims.virtual_pipeline},
      {"config.expert_parallel", dims.ep},
  };
  for (const auto& field : fields) {
    absl::Status status = CheckIntPositive(field.field, field.value);
    if (!status.ok()) return status;
  }
  if (dims.etp < 0) {
    return FieldError(
        "config.expert_tensor_parallel",
        absl::StrCat("(", dims.etp, ") must be >= 0; 0 means config.tensor_parallel"));
  }
  const std::optional<FieldFault> fault = RejectionFault(
      CheckRules(model, training, cluster, rules, dims), model, training, cluster, dims);
  if (fault.has_value()) return FieldError(fault->field, fault->problem);
  return ParallelConfig(dims);
}

std::string ParallelConfig::ToString() const {
  std::string out = absl::StrCat("dp", dims_.dp, " tp", dims_.tp, " pp", dims_.pp, " cp", dims_.cp,
                                 " mbs", dims_.micro_batch);
  if (dims_.virtual_pipeline > 1) absl::StrAppend(&out, " vp", dims_.virtual_pipeline);
  if (dims_.ep > 1) absl::StrAppend(&out, " ep", dims_.ep);
  if (etp() != dims_.tp) absl::StrAppend(&out, " etp", etp());
  if (dims_.recompute != Recompute::kNone) {
    absl::StrAppend(&out, " recompute=", RecomputeName(dims_.recompute));
  }
  if (dims_.dp_sharding != DataParallelSharding::kOptimizer) {
    absl::StrAppend(&out, " dp_sharding=", DataParallelShardingName(dims_.dp_sharding));
  }
  if (dims_.dp_shard_group > 0) absl::StrAppend(&out, " dp_shard_group=", dims_.dp_shard_group);
  return out;
}

}  // namespace paratune
