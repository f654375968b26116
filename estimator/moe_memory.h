// Memory per GPU of the mixture-of-experts part of a pipeline stage (issue 26 §3): the routed
// experts, the router and the shared experts of the stage's MoE layers, sharded as Megatron-LM
// (core_v0.19.0) shards them, and the activations and dispatcher buffers of the routed tokens.
// Each term is its own function with its source; docs/estimator.md lists them. The rest of an
// MoE layer (attention, the two norms) is a dense layer's and stays with memory_model.h.
//
// Every term assumes sequence parallelism whenever tp > 1: Megatron-LM refuses to train an MoE
// layer with tensor parallelism and no sequence parallelism (megatron/core/transformer/moe/
// moe_layer.py, MoELayer.forward raises ValueError), so each rank routes its s b / (t c) tokens.
#ifndef PARATUNE_ESTIMATOR_MOE_MEMORY_H_
#define PARATUNE_ESTIMATOR_MOE_MEMORY_H_

#include <cstdint>

#include "estimator/model_spec.h"
#include "estimator/model_states.h"
#include "estimator/parallel_config.h"
#include "estimator/pipeline_layout.h"
#include "estimator/training_spec.h"

namespace paratune {

// The expert side of a configuration (Megatron-LM --expert-model-parallel-size and
// --expert-tensor-parallel-size). Both fold into the world of one pipeline stage with the
// attention side's tp x cp x dp ranks (parallel folding: megatron/core/parallel_state.py,
// initialize_model_parallel builds the expert grid as etp x ep x edp x pp over the same ranks).
struct ExpertParallelism {
  int64_t ep = 1;   // experts are split over ep ranks, E / ep on each
  int64_t etp = 1;  // each expert's f_e is split over etp ranks
};

// The configuration's ep and etp (etp resolved: tp where unset).
ExpertParallelism ExpertParallelismOf(const ParallelConfig& config);

// How the estimator routes tokens: the training's switches (TrainingOptions) and, for a
// dropless router, the load margin the estimator assumes.
struct MoeRouting {
  // 0: dropless (Megatron-LM's default, --moe-expert-capacity-factor unset); > 0: each expert
  // takes at most capacity_factor x its even share of a rank's routed tokens.
  double capacity_factor = 0;
  // Dropless only: the tokens a rank's experts receive, as a multiple of their even share.
  // 1.0: the activations held are those of many MoE layers and micro-batches, over which the
  // per-layer imbalance of a load-balanced router averages out; Megatron-LM's MoE guide says
  // EP's peak activation memory is "~1 (varies with EP balancing)" (megatron/core/transformer/
  // moe/README.md, parallel strategy table), and the measured runs paratune fits force-balance
  // tokens (data/measured/megatron_bridge_moe_h100.csv). Raise it for a router known to be
  // unbalanced.
  double dropless_load_margin = 1.0;
  // All-to-all, the dispatcher NVIDIA's MoE recipes set (Megatron-LM's TransformerConfig
  // default is allgather).
  TokenDispatcher dispatcher = TokenDispatcher::kAllToAll;
};

// The routing of `training`'s switches (TrainingOptions: capacity factor, dispatcher) with the
// dropless load margin the caller assumes.
MoeRouting MoeRoutingOf(const TrainingSpec& training, double dropless_load_margin);

// MoE layers among those that pipeline stage `stage` holds, `pp` stages of `vp` interleaved
// chunks each, laid out as LayoutPipeline (pipeline_layout.h) lays them out: chunk j of the
// stage is the model's chunk j pp + stage (Megatron-LM's interleaved schedule). For a valid
// (layers, pp, vp) only; 0 for a dense model.
int64_t MoeLayersOnStage(const ModelSpec& model, int64_t stage, int64_t pp, int64_t vp);

// The layers pipeline stage `stage` of `config` holds (`layout`'s count for the stage, the
// configuration's LayoutPipeline) and, of them, those with experts (MoeLayersOnStage), as
// doubles for the formulas. Inline: the estimates of dense models call it millions of times a
// second and it costs them a branch.
struct StageLayerCounts {
  double layers = 0;
  double moe_layers = 0;
};
inline StageLayerCounts StageLayerCountsOf(const ModelSpec& model, const PipelineLayout& layout,
                                           const ParallelConfig& config, int64_t stage) {
  const int64_t pp = config.pp();
  const int64_t layers = stage == 0        ? layout.first_stage_layers
                         : stage == pp - 1 ? layout.last_stage_layers
                                           : layout.middle_stage_layers;
  const int64_t moe_layers =
      model.is_moe() ? MoeLayersOnStage(model, stage, pp, config.virtual_pipeline()) : 0;
  return {static_cast<double>(layers), static_cast<double>(moe_layers)};
}

// Expert data-parallel size edp = tp x cp x dp / (etp x ep): the ranks of a stage that hold the
// same expert shard and share its gradients and optimizer states (megatron/core/
// parallel_state.py, initialize_model_parallel: expert_data_parallel_size = world_size //
// (etp x ep x pp)). Not an integer when etp x ep does not divide tp x cp x dp (invalid).
double ExpertDataParallelSize(const ParallelDims& dims, const ExpertParallelism& expert);

// Parameters on one GPU of `moe_layers` MoE layers, each kind sharded as Megatron-LM shards it
// (megatron/training/theoretical_memory_usage.py, compute_weight_and_optimizer_memory):
// routed experts (E / ep) M f_e h / etp per layer (TEGroupedMLP or SequentialMLP of E / ep local
// experts, megatron/core/transformer/moe/experts.py: linear_fc1, 2 f_e wide gated and f_e not,
// and linear_fc2, both split over the expert tensor-parallel group);
double ExpertParameters(const ModelSpec& model, const ExpertParallelism& expert,
                        int64_t moe_layers);
// the router h E per layer, whole on every rank (router.py, Router.__init__: a [E, h] weight
// in params_dtype, replicated and marked sequence_parallel so its gradient is all-reduced over
// the tensor group);
double RouterParameters(const ModelSpec& model, int64_t moe_layers);
// the shared experts n_s M f_s h / tp per layer, a dense MLP split over the attention side's
// tensor group (shared_experts.py, SharedExpertMLP).
double SharedExpertParameters(const ModelSpec& model, const ParallelDims& dims, int64_t moe_layers);

// The routed experts of `moe_layers` MoE layers: bf16 weights (1 byte for the fp8 model weights
// of fp8_param_gather, Transformer Engine's fp8_model_init covering the GroupedLinear experts),
// fp32 gradients (bf16 with fp32_gradients off) whole, as the distributed data-parallel grad
// buffer holds them, and Adam's 12 bytes per parameter sharded over the expert data-parallel
// group by the distributed optimizer (megatron/core/distributed/distributed_data_parallel.py:
// expert parameters, allreduce False, get their own buffers over intra_expt_dp_group).
ModelStateBytes ExpertModelStates(const ModelSpec& model, const TrainingSpec& training,
                                  const ParallelDims& dims, const ExpertParallelism& expert,
                                  int64_t moe_layers);
// The router: bf16 weights (never fp8: router_gating_linear is a plain GEMM), gradients as the
// experts', optimizer states sharded over dp x cp like every non-expert parameter.
ModelStateBytes RouterModelStates(const ModelSpec& model, const TrainingSpec& training,
                                  const ParallelDims& dims, int64_t moe_layers);
// The shared experts, as a dense MLP's linears (1-byte weights with fp8_param_gather).
ModelStateBytes SharedExpertModelStates(const ModelSpec& model, const TrainingSpec& training,
                                        const ParallelDims& dims, int64_t moe_layers);

// fp8 only (0 in bf16): the fp8 copy and fp8 transpose Transformer Engine caches for the step
// of every routed and shared expert weight, 2 bytes per parameter (1 with fp8_param_gather),
// as memory_model.h's kFp8WeightCopies counts the dense linears.
double MoeFp8WeightCopyBytes(const ModelSpec& model, const TrainingSpec& training,
                             const ParallelDims& dims, const ExpertParallelism& expert,
                             int64_t moe_layers);
// fp8 only: the fp32 scale, scale_inv and amax history (fp8_amax_history_len entries) of 3
// forward and 2 backward tensors of every expert GEMM: Transformer Engine's GroupedLinear keeps
// one fp8_meta per GEMM (transformer_engine/pytorch/module/grouped_linear.py,
// init_fp8_metadata(num_gemms=self.num_gemms)), so fc1 and fc2 of each of the E / ep local
// experts, plus the shared experts' fc1 and fc2.
double MoeFp8ScalingStateBytes(const ModelSpec& model, const TrainingSpec& training,
                               const ExpertParallelism& expert, double fp8_amax_history_len,
                               int64_t moe_layers);

// Tokens one GPU routes per micro-batch, T = s b / (t c): the MoE layer's input is the
// sequence-parallel shard of the attention side.
double MoeTokensPerRank(const TrainingSpec& training, const ParallelDims& dims);

// Token copies one GPU sends to the experts per MoE layer and micro-batch, S: T k dropless;
// with a capacity factor E C, each expert's capacity from the rank (moe_utils.py, get_capacity).
double SentTokensPerRank(const ModelSpec& model, const TrainingSpec& training,
                         const ParallelDims& dims, const MoeRouting& routing);

// Tokens the E / ep experts of one GPU receive per MoE layer and micro-batch, N. Dropless:
// T k etp x dropless_load_margin, each of the etp x ep ranks of the dispatcher's group routing
// T k tokens of which an even share 1 / ep lands on this rank's experts, gathered over etp.
// Capacity factor cf: each expert takes at most C = ceil(T k cf / E) tokens from each of the
// etp x ep ranks (moe_utils.py, get_capacity; router.py, apply_router_token_dropping), so
// N = E etp C; exact with --moe-pad-expert-input-to-capacity, an upper bound otherwise.
double RoutedTokensPerRank(const ModelSpec& model, const TrainingSpec& training,
                           const ParallelDims& dims, const ExpertParallelism& expert,
                           const MoeRouting& routing);

// Activation bytes of one MoE layer's MoE block (router, dispatch, experts, shared experts)
// for one micro-batch on one GPU, nothing recomputed. An MoE layer's activations are a dense
// layer's (memory_model.cc, LayerActivationBytes) with the MLP part replaced by these: on the
// FlashAttention path the first MLP linear's input 2sbh/(tc) (one of the 12 of
// Bf16LayerActivationBytes) and the MLP's mlp_factor sbf/(tc) are removed, and with fp8 the two
// MLP savings of Fp8SavedInputSavingsBytes (sbh/(tc) first linear, sbf/(tc) down projection)
// are not taken; on the path without FlashAttention, 18 sbh/(tc) of Korthikanti et al.'s 34 are
// removed (Table 2's MLP block at f = 4h less its dropout mask, which the layer keeps). The sum
// of the four functions below.
double MoeBlockActivationBytes(const ModelSpec& model, const TrainingSpec& training,
                               const ParallelDims& dims, const ExpertParallelism& expert,
                               const MoeRouting& routing);

// The block's input, 2h per token: the pre-MLP norm's output, saved in bf16 by the router GEMM
// (moe_utils.py RouterGatingLinearFunction.forward) and, the same tensor, by the shared
// experts' fc1; with fp8 that fc1 saves its own 1-byte cast instead, h more per token.
double MoeInputActivationBytes(const ModelSpec& model, const TrainingSpec& training,
                               const ParallelDims& dims);
// The router's tensors kept for backward, T (8E + 16k) with --moe-router-dtype fp32 (the dtype
// NVIDIA's MoE recipes set): the fp32 scores over all E experts that the score function keeps
// (a sigmoid, or a softmax before the top-k; a softmax after the top-k keeps only k: an upper
// bound there; moe_utils.py topk_routing_with_score_function), those the load-balancing loss
// keeps (compute_routing_scores_for_aux_loss), the int64 top-k indices (kept by the top-k and
// by the scatter of the probabilities) and the int64 indices of the T k permuted copies
// (permute's index_select, kept for backward).
double RouterActivationBytes(const ModelSpec& model, const TrainingSpec& training,
                             const ParallelDims& dims);
// The routed experts' saved tensors per received token (N of them): the fc1 input h (the
// permuted token the grouped GEMM saves, 1 byte with fp8, 2 in bf16), the f_e / etp-wide MLP
// tensors counted as memory_model counts a dense MLP's (mlp_factor f_e / etp: 8 gated, 4 not;
// the fc2 input among them at 1 byte with fp8; Megatron-LM's fused weighted SwiGLU keeps 6 of
// the 8, an upper bound shared with the dense model), and the fp32 routing probability the
// weighted activation saves (experts.py, TEGroupedMLP.forward: bias_act_func with
// permuted_probs).
double RoutedExpertActivationBytes(const ModelSpec& model, const TrainingSpec& training,
                                   const ParallelDims& dims, const ExpertParallelism& expert,
                                   const MoeRouting& routing);
// The shared experts' f-wide tensors, as a dense MLP of n_s f_s split over tp: of the T t =
// s b / c tokens the sequence-parallel all-gather hands the column-parallel fc1, f_s / t wide
// each (their fc1 input is MoeInputActivationBytes').
double SharedExpertActivationBytes(const ModelSpec& model, const TrainingSpec& training,
                                   const ParallelDims& dims);

// The dispatcher's h-wide token buffers at the peak of one MoE layer's forward, for the one
// layer running at a time (not per micro-batch in flight), beyond the fc1 input that
// RoutedExpertActivationBytes counts. MoELayer.forward (moe_layer.py, custom_forward) keeps the
// permuted tokens and the dispatched ones referenced until the layer returns.
//
// All-to-all (MoEAlltoAllTokenDispatcher), bf16: the S tokens sent (T k dropless, E C with a
// capacity factor; the output of permute, dispatch_preprocess), the N / etp received over ep
// (token_dispatch) unless they are the fc1 input itself (one local expert, etp 1), and the
// larger of two phases: the combine's preprocessing, the experts' N outputs, their copy sorted
// back by source rank (sort_chunks_by_idxs, more than one local expert) and the N / etp
// reduce-scattered over etp (etp > 1), all alive in combine_preprocess; and the combine itself,
// the tokens sent back (N / etp with etp > 1, N otherwise) and the S received (token_combine).
double AllToAllBufferBytes(const ModelSpec& model, const TrainingSpec& training,
                           const ParallelDims& dims, const ExpertParallelism& expert,
                           const MoeRouting& routing);
// All-gather (MoEAllGatherTokenDispatcher), over the etp x ep ranks, G = T etp ep tokens: the
// bf16 gathered tokens (token_dispatch's persistent global memory buffer), their gathered fp32
// probabilities G E and the G E / ep boolean map of the local experts (dispatch_postprocess),
// the bf16 unpermuted output G (combine_preprocess), and the larger of the experts' N outputs
// (alive while unpermuting) and the fp32 copy of the unpermuted output that is reduce-scattered
// back (token_combine, in the probabilities' dtype): G (4h + 4E + E / ep) + max(2hN, 4hG). With
// etp = ep = 1 it gathers nothing: the N outputs and the T unpermuted, 2h (N + T).
double AllGatherBufferBytes(const ModelSpec& model, const TrainingSpec& training,
                            const ParallelDims& dims, const ExpertParallelism& expert,
                            const MoeRouting& routing);
// The buffers of routing.dispatcher. A flex dispatcher's are taken as the all-to-all's, which
// hold the same tokens sent and received: DeepEP's and HybridEP's own communication buffers
// (registered NVLink and RDMA memory, fused_a2a.py get_buffer) are not counted.
double DispatcherBufferBytes(const ModelSpec& model, const TrainingSpec& training,
                             const ParallelDims& dims, const ExpertParallelism& expert,
                             const MoeRouting& routing);

// The MoE terms of one GPU of a pipeline stage, in bytes; all 0 for a stage without MoE layers.
struct MoeMemoryTerms {
  ModelStateBytes experts;
  ModelStateBytes router;
  ModelStateBytes shared_experts;
  double fp8_weight_copies = 0;  // routed and shared experts, fp8 only
  double fp8_scaling_state = 0;  // routed and shared experts, fp8 only
  // MoE blocks' activations of the micro-batches in flight under the recompute mode; they
  // replace the MLP part of these layers' dense activations (MoeBlockActivationBytes).
  double activations = 0;
  // Full recompute: one MoE block's activations, recomputed for backward (with the rest of its
  // layer, which memory_model counts).
  double recompute_working_set = 0;
  double dispatcher_buffers = 0;
};

// The stage's MoE part: `moe_layers` MoE layers, `moe_layer_micro_batches` the MoE layers
// times the micro-batches each holds in flight (memory_model.cc: moe_layers / v x
// ChunksInFlight for the stage). Full recompute keeps only layer inputs (memory_model's dense part)
// and one block's working set; selective recompute (Megatron-LM's default modules, core_attn) and
// none keep every block's activations.
MoeMemoryTerms EstimateMoeStageMemory(const ModelSpec& model, const TrainingSpec& training,
                                      const ParallelDims& dims, const ExpertParallelism& expert,
                                      const MoeRouting& routing, double fp8_amax_history_len,
                                      int64_t moe_layers, double moe_layer_micro_batches);

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_MOE_MEMORY_H_
