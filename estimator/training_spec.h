// The shape and numerics of one training run.
#ifndef PARATUNE_ESTIMATOR_TRAINING_SPEC_H_
#define PARATUNE_ESTIMATOR_TRAINING_SPEC_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "estimator/data_parallel_sharding.h"

namespace paratune {

// The largest global batch (TrainingSpec::Create), in sequences.
inline constexpr int64_t kMaxGlobalBatchSize = 16'777'216;

// How context-parallel ranks exchange keys and values for attention: Megatron-LM's
// --cp-comm-type, handed to Transformer Engine's DotProductAttention as cp_comm_type
// (megatron/core/transformer/transformer_config.py:987-1000 and
// megatron/core/extensions/transformer_engine.py:1869-1882 at core_v0.19.0). Megatron-LM's
// other two, a2a (heads scattered over the context group) and a2a+p2p (hierarchical, with
// --hierarchical-context-parallel-sizes), are not offered: nothing here models them.
enum class CpCommType {
  // A ring of point-to-point exchanges of K/V chunks, each overlapped with the attention of
  // the chunk already received (Transformer Engine's AttnFuncWithCPAndKVP2P). Megatron-LM's
  // default.
  kP2p,
  // One all-gather of K and V before attention and again in the backward pass, not
  // overlapped with it ("KV all-gather between CP ranks is exposed": Transformer Engine's
  // AttnFuncWithCPAndKVAllGather; Llama 3, arXiv 2407.21783 §3.3.2).
  kAllGather,
};

// "p2p" or "all_gather": the value --cp-comm-type takes and Transformer Engine accepts
// (attn_forward_func_with_cp raises on any other spelling, "allgather" included).
const char* CpCommTypeName(CpCommType type);

// How a mixture-of-experts layer's routed tokens reach the ranks that hold their experts
// (Megatron-LM --moe-token-dispatcher-type, megatron/core/transformer/moe/token_dispatcher.py
// at core_v0.19.0). The flex dispatcher is one value per backend, so that a backend without
// flex, or flex without a backend, cannot be stated; its third backend, ncclep (NCCL EP
// through Transformer Engine), is not offered: nothing here models it.
enum class TokenDispatcher {
  // MoEAlltoAllTokenDispatcher: all-to-all over ep, all-gather over etp. The dispatcher
  // NVIDIA's MoE recipes set.
  kAllToAll,
  // MoEAllGatherTokenDispatcher: every token all-gathered over etp x ep. Megatron-LM's
  // TransformerConfig default.
  kAllGather,
  // MoEFlexTokenDispatcher with DeepEP's fused kernels (`--moe-token-dispatcher-type flex
  // --moe-flex-dispatcher-backend deepep`, _DeepepManager): one dispatch and one combine over
  // the etp x ep group, permuting into the send buffers inside the kernel; NVLink inside a node,
  // RDMA across nodes. Needs etp x ep > 1 (token_dispatcher.py:1770).
  kFlexDeepEp,
  // MoEFlexTokenDispatcher with HybridEP's kernels (`--moe-flex-dispatcher-backend hybridep`,
  // _HybridEPManager): the same dispatch and combine, TMA copies on NVLink and RDMA across
  // nodes.
  kFlexHybridEp,
};

// "alltoall", "allgather" or "flex": the value --moe-token-dispatcher-type takes.
const char* TokenDispatcherName(TokenDispatcher dispatcher);
// Whether `dispatcher` is Megatron-LM's flex dispatcher (either backend).
bool IsFlexDispatcher(TokenDispatcher dispatcher);
// "deepep" or "hybridep", the value --moe-flex-dispatcher-backend takes, for a flex dispatcher;
// nullptr for the others.
const char* FlexDispatcherBackendName(TokenDispatcher dispatcher);
// The dispatcher as one word, the CLI's and the replay tables' spelling: "alltoall",
// "allgather", "flex_deepep" or "flex_hybridep".
const char* TokenDispatcherChoice(TokenDispatcher dispatcher);

// The training framework a search measures and exports for. What it does differently is a
// term of the estimate or a rule, not another model (docs/estimator.md, "Frameworks").
enum class Framework {
  // Megatron-LM (Megatron-Core), and the NeMo and Megatron-Bridge recipes built on it.
  kMegatron,
  // TorchTitan, PyTorch's native stack: FSDP2, DTensor tensor parallelism, torch.distributed
  // pipelining and context parallelism.
  kTorchTitan,
};

// "megatron" or "torchtitan": the values --framework takes.
const char* FrameworkName(Framework framework);

// The largest capacity factor (TrainingSpec::Create): far beyond any recipe's (1 to 4), a bound
// that catches typos.
inline constexpr double kMaxMoeCapacityFactor = 1000;

struct TrainingOptions {
  int64_t global_batch_size = 0;  // sequences per optimizer step
  int64_t seq_len = 0;            // tokens per sequence
  bool fp8 = false;               // fp8 GEMMs (bf16 otherwise)
  // fp8 model weights (Megatron-LM --fp8-param-gather, Transformer Engine fp8_model_init):
  // the linear weights are kept, and gathered by the distributed optimizer, in fp8 instead of
  // bf16. Only with fp8 (transformer_config.py:1439-1440) and the distributed optimizer
  // (megatron/training/arguments.py:1060-1062).
  bool fp8_param_gather = false;
  // The data-parallel sharding of a configuration that names none, and of a search that lists
  // no sharding modes (DefaultDataParallelSharding): true is the framework's own default
  // (Megatron-LM's distributed optimizer, TorchTitan's FSDP), false plain data parallelism.
  // Kept from before sharding was a dimension of the configuration (ParallelDims::dp_sharding).
  bool distributed_optimizer = true;
  bool fp32_gradients = true;  // 4-byte gradients (2 when false)
  bool flash_attention = true;
  // Tensor-parallel communication overlapped with the GEMMs (Megatron-LM --tp-comm-overlap,
  // NeMo's tp_comm_overlap, Transformer Engine userbuffers); off by default, as in
  // Megatron-LM. It acts only where there is tensor parallelism: Megatron-LM requires
  // sequence parallelism for it (arguments.py:1401-1402), which it turns off at tp = 1
  // (arguments.py:1390-1399).
  bool tp_comm_overlap = false;
  // Matters only with context parallelism (cp > 1).
  CpCommType cp_comm_type = CpCommType::kP2p;
  // The routing switches below matter only for mixture-of-experts models.
  // 0: dropless, every routed token reaches its expert (Megatron-LM's default,
  // --moe-expert-capacity-factor unset); > 0: each expert takes at most capacity_factor times
  // its even share of a rank's routed tokens and drops the rest (--moe-expert-capacity-factor).
  double moe_capacity_factor = 0;
  TokenDispatcher moe_token_dispatcher = TokenDispatcher::kAllToAll;
  // The routed experts' GEMMs grouped into one kernel per linear (Megatron-LM
  // --moe-grouped-gemm: TEGroupedMLP) rather than one GEMM per local expert (SequentialMLP,
  // Megatron-LM's default). On by default, as in NVIDIA's MoE recipes.
  bool moe_grouped_gemm = true;
  // The dispatcher's all-to-all of one micro-batch overlapped with another's compute
  // (Megatron-LM --overlap-moe-expert-parallel-comm, with --delay-wgrad-compute as NVIDIA's
  // H100 recipes set it: the combined 1F1B schedule, megatron/core/pipeline_parallel/
  // combined_1f1b.py). Off by default, as in Megatron-LM. It acts only where ep > 1,
  // recompute is not full and, with pp > 1, the schedule is interleaved (Megatron-LM's
  // TransformerConfig refuses it otherwise: ExpertParallelOverlapApplies,
  // moe_performance.h), and needs the all-to-all or flex dispatcher
  // (transformer_config.py:2683-2686).
  bool moe_expert_parallel_overlap = false;
  // The shared experts run on a side stream beside the dispatcher, their first linear with the
  // dispatch all-to-all and their second with the combine (Megatron-LM
  // --moe-shared-expert-overlap, megatron/core/transformer/moe/token_dispatcher.py:651-712,
  // 853-866 and shared_experts.py at core_v0.19.0). Off by default, as in Megatron-LM. It
  // acts only on models with shared experts (SharedExpertOverlapApplies, moe_performance.h);
  // needs the all-to-all or flex dispatcher and excludes moe_expert_parallel_overlap.
  bool moe_shared_expert_overlap = false;
  Framework framework = Framework::kMegatron;
  // TorchTitan only: each transformer block compiled with torch.compile (--compile.enable,
  // torchtitan/models/llama3/infra/parallelize.py apply_compile at v0.2.2), which fuses its
  // norm, rotary and SwiGLU kernels (performance_parameters.h,
  // torchtitan_compiled_compute_efficiency). TorchTitan's async tensor parallelism needs it.
  bool torch_compile = false;
};

// Immutable and always valid.
class TrainingSpec {
 public:
  // INVALID_ARGUMENT naming the field ("training.seq_len (0) must be in [1, 4194304]"),
  // fp8_param_gather without fp8 or without the distributed optimizer, or a capacity factor
  // outside 0 (dropless) and (0, kMaxMoeCapacityFactor], or moe_expert_parallel_overlap with
  // the all-gather dispatcher, or a flex dispatcher under TorchTitan (which has none), or a
  // capacity factor with flex_deepep (DeepEP does not pad to capacity), or
  // moe_shared_expert_overlap with the all-gather dispatcher, with moe_expert_parallel_overlap
  // or under TorchTitan, or torch_compile under Megatron-LM, or tp_comm_overlap under
  // TorchTitan without torch_compile.
  static absl::StatusOr<TrainingSpec> Create(const TrainingOptions& options);

  const TrainingOptions& options() const { return options_; }
  int64_t global_batch_size() const { return options_.global_batch_size; }
  int64_t seq_len() const { return options_.seq_len; }
  bool fp8() const { return options_.fp8; }
  bool fp8_param_gather() const { return options_.fp8_param_gather; }
  bool distributed_optimizer() const { return options_.distributed_optimizer; }
  bool fp32_gradients() const { return options_.fp32_gradients; }
  bool flash_attention() const { return options_.flash_attention; }
  bool tp_comm_overlap() const { return options_.tp_comm_overlap; }
  CpCommType cp_comm_type() const { return options_.cp_comm_type; }
  double moe_capacity_factor() const { return options_.moe_capacity_factor; }
  TokenDispatcher moe_token_dispatcher() const { return options_.moe_token_dispatcher; }
  bool moe_grouped_gemm() const { return options_.moe_grouped_gemm; }
  bool moe_expert_parallel_overlap() const { return options_.moe_expert_parallel_overlap; }
  bool moe_shared_expert_overlap() const { return options_.moe_shared_expert_overlap; }
  Framework framework() const { return options_.framework; }
  bool torch_compile() const { return options_.torch_compile; }
  // What distributed_optimizer stands for under the framework: kOptimizer for Megatron-LM and
  // kFull for TorchTitan (which has no optimizer-only sharding) when true, kNone when false.
  DataParallelSharding DefaultDataParallelSharding() const;

 private:
  explicit TrainingSpec(const TrainingOptions& options) : options_(options) {}

  TrainingOptions options_;
};

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_TRAINING_SPEC_H_
