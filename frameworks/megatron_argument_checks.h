// Megatron-LM's own checks of a launch's arguments, replayed in C++ for the release the launch
// templates are pinned to (core_v0.19.0, megatron_lm_core_v0.19.0_arguments.txt), so that a
// test can hold `paratune export --format=megatron` to them without Python or a GPU (issue 13).
//
// Replayed, in the order the release runs them (the first that fails is the one reported);
// files are at tag core_v0.19.0 of NVIDIA/Megatron-LM:
//   argparse (megatron/training/arguments.py:118-131, allow_abbrev=False): a switch takes no
//     value, an option takes one, of its type (int, float) and among its choices
//     (recompute granularity and method, fp8 format and recipe, normalization, position
//     embedding, transformer implementation, attention backend, gradient dtype, checkpoint
//     format, lr decay style: each flag's definition is cited in the .cc).
//   "world-size": world size divisible by tp x pp x cp (arguments.py:430;
//     megatron/core/parallel_state.py:822).
//   "hierarchical-context-parallel": their product is cp, and cp comm type a2a+p2p needs them
//     (arguments.py:562-567).
//   "micro-batch-size", "global-batch-size": given and positive; global defaults to micro x dp
//     (arguments.py:675-687).
//   "batch-divisibility": global batch divisible by micro-batch x dp, for the eval batch the
//     training one by default (arguments.py:689-696), then for training
//     (megatron/core/num_microbatches_calculator.py:381-391).
//   "required": --num-layers, --hidden-size, --num-attention-heads, --max-position-embeddings
//     (arguments.py:1264-1277; checked before the pipeline split, which reads --num-layers).
//   "virtual-pipeline-flags": at most one of --num-layers-per-virtual-pipeline-stage,
//     --num-virtual-stages-per-pipeline-rank, --pipeline-model-parallel-layout
//     (arguments.py:894-905).
//   "pipeline-split": num-layers (+1 with --account-for-embedding-in-pipeline-split, +1 with
//     --account-for-loss-in-pipeline-split) divisible by pp (arguments.py:934-935 with
//     interleaving by layers per virtual stage, 963-964 without interleaving).
//   "layers-per-virtual-stage": (layers + 1 + 1) / pp divisible by the layers per virtual
//     stage, which gives the virtual pipeline size; a size of 1 is no interleaving
//     (arguments.py:936-945). "virtual-stages": --num-virtual-stages-per-pipeline-rank >= 1
//     (arguments.py:943, a size of 0 divides by zero at transformer_block.py:170).
//   "interleaving-pipeline-size": interleaving needs pp > 1, pp > 2 with
//     --no-overlap-p2p-communication (arguments.py:966-975; parallel_state.py:827-831).
//   "overlap-param-gather": needs the distributed optimizer or Megatron-FSDP, and
//     --overlap-grad-reduce (arguments.py:990-995).
//   "overlap-param-gather-with-optimizer-step": needs the distributed optimizer,
//     --overlap-param-gather, interleaving and --ckpt-format=torch (arguments.py:1032-1040,
//     use_dist_ckpt from megatron/training/utils/common_utils.py:555-556).
//   "fp8-param-gather": needs the distributed optimizer or Megatron-FSDP
//     (arguments.py:1060-1062).
//   "fp4-fp8": not both (arguments.py:1064-1066; transformer_config.py:1454-1455).
//   Megatron-FSDP (--use-megatron-fsdp, arguments.py:1100-1168): it turns the distributed
//     optimizer on (1106-1112) and shards as --data-parallel-sharding-strategy says (choices
//     no_shard, optim, optim_grads, optim_grads_params; default optim_grads_params,
//     arguments.py:3023-3025); its optimizer must be adam or sgd (1127-1128, which the
//     UNIMPLEMENTED answer for other optimizers covers); "megatron-fsdp-weight-hash":
//     optim_grads_params takes no --check-weight-hash-across-dp-replicas-interval
//     (1139-1141); "megatron-fsdp-connections": the launch's CUDA_DEVICE_MAX_CONNECTIONS must
//     not be 1 (1143-1144); "megatron-fsdp-ckpt-format": --ckpt-format=fsdp_dtensor
//     (1146-1147).
//   "fp16-bf16": not both (arguments.py:1172-1182; transformer_config.py:1314-1317).
//   "main-grads-dtype": with --bf16, --accumulate-allreduce-grads-in-fp32 needs
//     --main-grads-dtype=fp32 (arguments.py:1186-1188). Not an error, as the release does it:
//     --grad-reduce-in-bf16 turns --accumulate-allreduce-grads-in-fp32 off, and without either
//     bf16 accumulates in fp32 (arguments.py:1190-1194); MegatronLaunch::fp32_gradients is
//     the outcome, so a test compares it with what the search asked for.
//   "kv-channels": without --kv-channels, hidden size divisible by heads
//     (arguments.py:1291-1293).
//   "context-parallel-sequence": with cp > 1, seq length divisible by 2 x cp
//     (arguments.py:1295-1298).
//   "seq-length": --seq-length or --encoder-seq-length given (arguments.py:1306-1311).
//   "max-position-embeddings": at least the seq length (arguments.py:1313-1316).
//   "min-lr": at most --lr when --lr is given (arguments.py:1319-1320).
//   "distribute-saved-activations": needs tp > 1, full granularity and a recompute method
//     (arguments.py:1370-1379), and no sequence parallelism (transformer_config.py:1757-1761).
//   "selective-recompute-method": selective granularity takes no --recompute-method
//     (arguments.py:1385-1388).
//   Sequence parallelism with tp = 1 is turned off, not rejected (arguments.py:1390-1399);
//     MegatronLaunch::sequence_parallel is the outcome.
//   "tp-comm-overlap": needs sequence parallelism (arguments.py:1401-1402).
//   "cuda-device-max-connections": with tp > 1 or cp > 1, on GPUs before Blackwell (the
//     catalog's), the launch's CUDA_DEVICE_MAX_CONNECTIONS must be 1, except with Megatron-FSDP
//     or --overlap-moe-expert-parallel-comm, which only warn (arguments.py:1413-1439).
//   Mixture of experts in validate_args: --expert-tensor-parallel-size defaults to tp
//     (arguments.py:569-570), --num-experts 0 is none and --moe-ffn-hidden-size defaults to
//     --ffn-hidden-size (arguments.py:1593-1597); "expert-model-parallel": ep > 1 needs
//     --num-experts, which it divides (arguments.py:1600-1603).
//   "fsdp-dtensor": --ckpt-format=fsdp_dtensor needs Megatron-FSDP (arguments.py:1620-1621).
//   "gloo-process-groups": --disable-gloo-process-groups with the distributed optimizer needs
//     a distributed checkpoint format (arguments.py:1689-1695).
//   "expert-world-size": the expert grid etp x ep x expert-dp x pp divides the world size,
//     each size >= 1 (initialize_model_parallel, megatron/core/parallel_state.py:874-883),
//     whether or not there are experts.
//   "distributed-optimizer-instances": --num-distributed-optimizer-instances (default 1,
//     arguments.py:3049; with Megatron-FSDP the replicas of hybrid sharding, HSDP:
//     megatron/core/distributed/fsdp/mcore_fsdp_adapter.py:343, 397-424) is >= 1 and divides
//     dp x cp (parallel_state.py:922-929) and the expert data-parallel size
//     (parallel_state.py:1447-1451).
//   "attention-heads": heads divisible by tp (transformer_config.py:1323-1327).
//   "query-groups": query groups (--num-query-groups, default 1, with --group-query-attention,
//     else the heads: megatron/training/argument_utils.py:330-333) a multiple or a divisor of
//     tp (transformer_config.py:1335-1345).
//   "fp8-param": --fp8-param-gather (the config's fp8_param, argument_utils.py:312) needs
//     --fp8-format (transformer_config.py:1439-1440).
//   MoE in TransformerConfig: "num-experts": not negative (transformer_config.py:1531-1532);
//     "moe-ffn-hidden-size": not without --num-experts unless --moe-layer-freq leaves a layer
//     dense (1538-1554); "moe-shared-expert-intermediate-size": > 0 (1637-1643);
//     "moe-shared-expert-overlap": with shared experts, the alltoall or flex dispatcher
//     (1644-1650) and, under selective recompute, no shared_experts in --recompute-modules
//     (1812-1819);
//     "moe-expert-capacity-factor": a negative factor is none (dropless), a factor needs an
//     aux_loss, seq_aux_loss, global_aux_loss or none balancing type (1660-1684);
//     "moe-pad-expert-input-to-capacity": needs a capacity factor (1686-1690);
//     "moe-flex-deepep": the flex dispatcher's deepep backend (its default) does not pad to
//     capacity (1600-1607) and needs etp x ep > 1 (moe/token_dispatcher.py:1770);
//     "moe-flex-ncclep": the ncclep backend needs the flex dispatcher (1609-1615), etp x ep > 1
//     and --moe-expert-rank-capacity-factor (moe/token_dispatcher.py:1788, 1563-1567), whose
//     own rules are not replayed (below); TransformerEngine built with NCCL EP is a property
//     of the install, not of the arguments.
//   "recompute": full granularity needs --recompute-method and --recompute-num-layers,
//     selective takes no --recompute-num-layers (transformer_config.py:1724-1755).
//   "account-for-pipeline-split": with the account-for flags, layers + 1 + 1 divisible by pp
//     and, interleaved, by pp x vp (transformer_config.py:2064-2109).
//   "moe-bias": with experts, linear biases (no --disable-bias-linear) need etp 1
//     (transformer_config.py:2279-2282); "moe-router-pre-softmax": top-1 softmax routing needs
//     --moe-router-pre-softmax unless the balancing is sinkhorn (2328-2336);
//     "moe-a2a-overlap": --overlap-moe-expert-parallel-comm needs a virtual pipeline size with
//     pp > 1, ep > 1, the alltoall or flex dispatcher and no full recompute (2669-2690) and
//     excludes --moe-shared-expert-overlap (2706-2708), and --delay-wgrad-compute needs it
//     (2748-2752).
//   "cp-comm-type": with cp > 1, several types name one per layer
//     (transformer_config.py:2778-2787).
//   At the model build, with experts: "moe-layer-freq": an integer k puts experts on layers
//     0, k, 2k, ... (k = 0 divides by zero), a list must hold one 0 or 1 per layer
//     (megatron/core/models/gpt/gpt_layer_specs.py:647-671, the layer specs of an MoE model,
//     gpt_builders.py:41-43); "expert-tensor-parallel-ffn": the expert FFN width divisible by
//     etp (TEGroupedLinear, megatron/core/extensions/transformer_engine.py:2192-2195).
//   At the first step: "chunk-layers": layers (+1 +1) divisible by pp and, interleaved, the
//     layers per pipeline rank by vp (megatron/core/transformer/transformer_block.py:150-172);
//     "interleaved-micro-batches": the interleaved schedule runs the micro-batches in groups of
//     --microbatch-group-size-per-virtual-pipeline-stage (default pp,
//     model_parallel_config.py:567-568), between pp and the micro-batch count, the last group
//     empty or at least pp (megatron/core/pipeline_parallel/schedules.py:1133-1153);
//     "sequence-parallel-split": with sequence parallelism, each context-parallel rank's
//     seq length / cp divisible by tp, as the embedding scatters it
//     (megatron/core/models/common/embeddings/language_model_embedding.py:141,
//     megatron/core/tensor_parallel/mappings.py:72-74);
//     "moe-sequence-parallel": with experts and tp > 1, sequence parallelism
//     (megatron/core/transformer/moe/moe_layer.py:629-633, MoELayer.forward in training);
//     "moe-router-topk": top-k in [1, experts] (torch.topk in
//     megatron/core/transformer/moe/moe_utils.py:823);
//     "cp-comm-type-value": with cp > 1, every --cp-comm-type is one Transformer Engine's
//     attention runs: p2p, all_gather, a2a or a2a+p2p (attn_forward_func_with_cp in
//     transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py raises
//     "Unsupported communication type" otherwise; Megatron-LM's --help says "allgather",
//     which fails there, its config docstring all_gather).
//
// Not replayed, and why:
//   - Flags that change the replayed rules in ways not modelled here make the check answer
//     UNIMPLEMENTED naming the flag (kUnreplayedFlags in the .cc): custom pipeline layouts and
//     first/last stage layer counts, hybrid (Mamba) patterns, multi-latent attention, GTP
//     weight shards, torch FSDP2, Megatron-FSDP's NCCL userbuffers, manual buffer registration,
//     meta-device initialisation, outer sharding and full sharding in HSDP, optimizers other
//     than adam and sgd, MoE switches an export never writes (router padding for
//     quantization, rank capacity, group-limited routing, the deprecated --moe-enable-deepep,
//     single grouped weights, latent projections, upcycling, MoE layer recompute, paged
//     stash), --moe-layer-freq expressions other than an integer or a written-out list, RL
//     steps, batch-size ramp-ups and schedules,
//     --decrease-batch-size-if-needed, and arguments taken from a YAML file, a checkpoint or a
//     heterogeneous-layers config.
//   - Rules on data, tokenizer, iterations or samples, learning-rate schedule, evaluation,
//     logging, checkpoints, RL, MTP, CUDA graphs, inference, fp4, FIM and offloading: an
//     export leaves data, iterations and checkpointing to the user and writes none of the
//     others; their flags, when present, are passed over.
//   - Software and hardware versions (is_te_min_version, is_torch_min_version, compute
//     capability, Transformer Engine's fp8 recipes by architecture): not arguments.
//   - Which flag names exist: framework_flags_test holds the templates to the release's list.
//   - Transformer Engine's userbuffers behind --tp-comm-overlap (CUDA multicast or IPC
//     between the tensor-parallel ranks, initialize_ub): the hardware, not an argument.
//   - What a2a needs beyond its name (heads divisible by cp in Transformer Engine): no
//     launch of ours writes it.
//   - MLP widths (dense or shared expert) divisible by tp, as Transformer Engine's linear
//     layers split them: not replayed for dense layers, and a shared expert is such an MLP.
//   - The grouped GEMM's compute capability >= 8 (arguments.py:1338-1340) and Transformer
//     Engine versions for MoE fp8: the hardware and software, not arguments.
//   - ModelParallelConfig's sequence parallelism without tp (model_parallel_config.py:502-504)
//     and get_num_layers_to_build's "Not enough layers" (transformer_block.py:185-195): they
//     cannot fire once validate_args turned sequence parallelism off and the split rules
//     hold (every chunk then holds at least one slot).
//
// Arguments are "--name=value", "--name value" or a bare "--name"; a repeated flag counts
// its last value, as argparse does. Flags outside the table are passed over (their values
// too): what they may add to the rules is not replayed.
#ifndef PARATUNE_FRAMEWORKS_MEGATRON_ARGUMENT_CHECKS_H_
#define PARATUNE_FRAMEWORKS_MEGATRON_ARGUMENT_CHECKS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace paratune {

// The Megatron-LM release the checks are replayed from.
inline constexpr char kMegatronChecksRelease[] = "core_v0.19.0";

// What the release makes of arguments that pass its checks: the parallel layout, the batch
// and the switches as validate_args leaves them.
struct MegatronLaunch {
  int64_t world_size = 0;
  int64_t data_parallel = 0;  // world size / (tp x pp x cp)
  int64_t tensor_parallel = 1;
  int64_t pipeline_parallel = 1;
  int64_t context_parallel = 1;
  int64_t virtual_pipeline = 1;  // model chunks per pipeline rank; 1 without interleaving
  bool uneven_pipeline = false;  // the embedding or the loss counts as a layer in the split
  int64_t micro_batch_size = 0;
  int64_t global_batch_size = 0;
  int64_t micro_batches = 0;  // global batch / (micro-batch x dp)
  int64_t query_groups = 0;
  bool sequence_parallel = false;     // after tp = 1 turned it off
  std::string recompute_granularity;  // "", "selective" or "full"
  std::string fp8_format;             // "" without fp8, else "e4m3" or "hybrid"
  bool bf16 = false;
  bool distributed_optimizer = false;  // also on with Megatron-FSDP (arguments.py:1112)
  bool megatron_fsdp = false;
  // --data-parallel-sharding-strategy, read by Megatron-FSDP only; "" without it.
  std::string data_parallel_sharding_strategy;
  int64_t distributed_optimizer_instances = 1;  // --num-distributed-optimizer-instances
  bool fp32_gradients = false;  // accumulate_allreduce_grads_in_fp32 after validate_args
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  bool fp8_param_gather = false;
  bool tp_comm_overlap = false;
  // --cp-comm-type's values, ["p2p"] by default (arguments.py:3054): one for every layer, or
  // one per layer.
  std::vector<std::string> cp_comm_types;
  // The head width: --kv-channels, or hidden size / heads (arguments.py:1291-1293).
  int64_t kv_channels = 0;

  // Mixture of experts; num_experts 0 (None in the release) for a dense model.
  int64_t num_experts = 0;
  int64_t expert_parallel = 1;
  int64_t expert_tensor_parallel = 1;  // tp unless given (arguments.py:569-570)
  int64_t expert_data_parallel = 0;    // world size / (etp x ep x pp)
  // Which layers hold experts, one per layer (gpt_layer_specs.py:647-671); empty when dense.
  std::vector<bool> moe_layers;
  int64_t moe_ffn_hidden_size = 0;  // --ffn-hidden-size unless given (arguments.py:1595-1597)
  int64_t moe_shared_expert_intermediate_size = 0;  // 0: no shared expert (None)
  int64_t moe_router_topk = 0;                      // 2 unless given
  std::string moe_router_score_function;            // "softmax" unless given
  bool moe_router_pre_softmax = false;
  std::string moe_router_dtype;  // "" (the activations' dtype) unless given
  bool moe_grouped_gemm = false;
  std::string moe_token_dispatcher_type;  // "allgather" unless given
  // The flex dispatcher's backend: "deepep" unless given (transformer_config.py:869).
  std::string moe_flex_dispatcher_backend;
  // 0: dropless (None, or negative, which TransformerConfig makes None).
  double moe_expert_capacity_factor = 0;
  bool moe_pad_expert_input_to_capacity = false;
  // --overlap-moe-expert-parallel-comm (the all-to-all behind another micro-batch's compute).
  bool moe_expert_parallel_overlap = false;
  // --moe-shared-expert-overlap on a model with shared experts (TransformerConfig ignores it
  // without them).
  bool moe_shared_expert_overlap = false;
};

// Replays the release's checks on `arguments` (the elements after pretrain_gpt.py) for a
// launch of `world_size` ranks (nodes x GPUs per node) with `environment` (the variables the
// checks read: CUDA_DEVICE_MAX_CONNECTIONS). INVALID_ARGUMENT naming the first rule
// that fails (rule "NAME" as listed above), its source line and the values; INVALID_ARGUMENT
// naming world_size when it is below 1; UNIMPLEMENTED naming the flag when an argument needs
// rules this replay does not model. Pure; thread-safe.
absl::StatusOr<MegatronLaunch> CheckMegatronArguments(
    const std::vector<std::string>& arguments, int64_t world_size,
    const std::map<std::string, std::string>& environment);

}  // namespace paratune

#endif  // PARATUNE_FRAMEWORKS_MEGATRON_ARGUMENT_CHECKS_H_
