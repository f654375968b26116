// Step-time terms of the mixture-of-experts part of a layer (issue 26 §3), per MoE layer and
// micro-batch on one GPU, and the model FLOPs of an MoE model: the router, the permutation of
// routed tokens, the routed experts' grouped GEMMs at an efficiency that falls with the tokens
// each expert receives, the shared experts, and the dispatch and combine communication of
// Megatron-LM (core_v0.19.0, megatron/core/transformer/moe/). Each term is its own function
// with its source; docs/estimator.md lists them. The rest of an MoE layer (attention, norms)
// is a dense layer's and stays with performance_model.h.
//
// As in moe_memory.h, every term assumes sequence parallelism whenever tp > 1 (Megatron-LM
// refuses an MoE layer with tensor parallelism and no sequence parallelism), so each rank
// routes T = s b / (t c) tokens (MoeTokensPerRank).
#ifndef PARATUNE_ESTIMATOR_MOE_PERFORMANCE_H_
#define PARATUNE_ESTIMATOR_MOE_PERFORMANCE_H_

#include "estimator/cluster_spec.h"
#include "estimator/model_spec.h"
#include "estimator/moe_memory.h"
#include "estimator/parallel_config.h"
#include "estimator/performance_parameters.h"
#include "estimator/training_spec.h"

namespace paratune {

// Forward FLOPs of the MoE block of one MoE layer on `tokens` tokens (backward: twice these,
// the data- and weight-gradient GEMMs). 0 for a dense model.
// The router's gating GEMM, 2 T h E (router.py, Router.gating: router_gating_linear, an
// h x E linear).
double RouterForwardFlops(const ModelSpec& model, double tokens);
// The routed experts, 2 k T M f_e h: each token passes through k experts' MLPs of M = 3
// (gated) or 2 h x f_e matrices (experts.py, TEGroupedMLP: linear_fc1 then linear_fc2).
double RoutedExpertForwardFlops(const ModelSpec& model, double tokens);
// The shared experts, 2 T n_s M f_s h (shared_experts.py, SharedExpertMLP: a dense MLP).
double SharedExpertForwardFlops(const ModelSpec& model, double tokens);

// Model FLOPs per token of one training step in Megatron-LM core_v0.19.0's convention
// (megatron/training/training.py, num_floating_point_operations, transformer_flops, BSHD
// layout, no MTP, no multi-latent attention), with d the head width, n_e the MoE layers and
// L - n_e the dense ones,
//   6 [ L h d (2a + 2k)                       QKV and output projections
//     + L s a d                               QK^T and PV, halved by the causal mask
//     + h M ((L - n_e) f + n_e (k_r f_e + n_s f_s))   dense MLPs, routed and shared experts
//     + h V ]                                 logits
// with k_r = router_top_k and V unpadded (Megatron-LM pads it to a multiple of 128 tp). The
// router GEMM is not counted. For a dense model with d = h / a this is the same code's dense
// figure, which differs from ModelFlopsPerStep's pre-2025 convention (performance_model.h)
// only in halving the attention core (6 L s h instead of 12 L s h).
// The figure Megatron-Bridge's published model TFLOP/s of MoE runs use.
double MegatronCoreFlopsPerToken(const ModelSpec& model, int64_t seq_len);
// MegatronCoreFlopsPerToken x global batch x s.
double MegatronCoreFlopsPerStep(const ModelSpec& model, const TrainingSpec& training);

// Tokens each of a rank's E / ep local experts receives per MoE layer and micro-batch:
// RoutedTokensPerRank / (E / ep) (moe_memory.h), dropless T k etp ep x margin / E: the etp x ep
// ranks of the dispatcher's group route T k token copies each, spread over E experts. The n of
// the grouped GEMM's efficiency. 0 for a dense model.
double TokensPerLocalExpert(const ModelSpec& model, const TrainingSpec& training,
                            const ParallelDims& dims, const ExpertParallelism& expert,
                            const MoeRouting& routing);

// eff(n) = c n / (n + grouped_gemm_half_efficiency_tokens), with c the large-GEMM ceiling of
// the precision the experts run in: PerformanceParameters::fp8_gemm_efficiency_max with fp8
// training, gemm_efficiency_max otherwise. On Hopper Transformer Engine's GroupedLinear runs
// each local expert's GEMM as its own cuBLAS GEMM, spread over several streams
// (transformer_engine/pytorch/module/grouped_linear.py: general_grouped_gemm with
// get_multi_stream_cublas_workspace; common/gemm/cublaslt_gemm.cu,
// nvte_multi_stream_cublas_gemm), the kernels of the dense linears: an expert with many
// tokens reaches the dense ceiling and no more, while fewer tokens per expert leave the
// tensor cores computing tile padding. The measured runs (4,096 to 8,192 tokens per expert)
// cannot tell a ceiling of their own from the half point; the dense fit's ceiling is the
// sourced one.
double GroupedGemmEfficiency(double tokens_per_expert, const TrainingSpec& training,
                             const PerformanceParameters& params);

// Forward seconds of one rank's routed-expert GEMMs: 2 N M f_e h / etp FLOPs (its E / ep
// experts' fc1 and fc2 on the N tokens they receive, each weight split over etp) at
// GroupedGemmEfficiency of TokensPerLocalExpert against `peak_flops` (the dense peak of the
// precision the experts run in), times expert_load_imbalance. 0 for a dense model.
double GroupedGemmForwardSeconds(const ModelSpec& model, const TrainingSpec& training,
                                 const ParallelDims& dims, const ExpertParallelism& expert,
                                 const MoeRouting& routing, double peak_flops,
                                 const PerformanceParameters& params);
// The same GEMMs without --moe-grouped-gemm (TrainingOptions::moe_grouped_gemm false):
// SequentialMLP (experts.py) loops over the E / ep local experts, each an MLP whose fc1 and fc2
// run as two GEMMs on the tokens it received, every one at the dense GEMM curve of the
// experts' precision (SharedExpertForwardSeconds) for its own FLOPs;
// times expert_load_imbalance. 0 for a dense model. PredictMoeLayerSeconds takes the larger of
// this and the grouped time: grouping never makes the same GEMMs slower.
double SequentialExpertsForwardSeconds(const ModelSpec& model, const TrainingSpec& training,
                                       const ParallelDims& dims, const ExpertParallelism& expert,
                                       const MoeRouting& routing, double peak_flops,
                                       const PerformanceParameters& params);

// Forward seconds of one rank's shared experts on its T tokens gathered over tp (s b / c), a
// dense MLP of n_s f_s split over tp: fc1 and fc2 each at the dense GEMM curve of the
// precision they run in (PerformanceParameters::gemm_efficiency_max, gemm_half_efficiency_flops;
// with fp8 training fp8_gemm_efficiency_max, fp8_gemm_half_efficiency_flops, as the dense
// linears under Transformer Engine's fp8_autocast). 0 without shared experts.
double SharedExpertForwardSeconds(const ModelSpec& model, const TrainingSpec& training,
                                  const ParallelDims& dims, double peak_flops,
                                  const PerformanceParameters& params);

// Seconds of Transformer Engine's fp8 casts of the routed and shared experts' linears for one
// MoE layer and micro-batch, forward and backward, as the dense linears' (Fp8CastSeconds,
// performance_model.cc): each fp8 GEMM's bf16 input (every forward pass) and output gradient
// (backward) pass through one fused cast-transpose kernel that reads 2 bytes per value and
// writes the fp8 value and its fp8 transpose (transformer_engine/common/transpose/
// cast_transpose.cu; GroupedLinear casts each local expert's slice of the N routed tokens the
// same way): 4 bytes per value at fp8_cast_hbm_efficiency. Values per MoE layer: N (h + f_e /
// etp) inputs and N (h + (M - 1) f_e / etp) output gradients of the routed experts, and with
// shared experts s b / c (h + n_s f_s / t) and s b / c (h + (M - 1) n_s f_s / t). 0 without
// fp8 training or for a dense model.
double ExpertFp8CastSeconds(const ModelSpec& model, const TrainingSpec& training,
                            const ParallelDims& dims, const ExpertParallelism& expert,
                            const MoeRouting& routing, const GpuSpec& gpu,
                            const PerformanceParameters& params);

// Forward seconds of the router's gating GEMM on the rank's T tokens (RouterForwardFlops) at
// the dense GEMM curve. 0 for a dense model.
double RouterGemmForwardSeconds(const ModelSpec& model, const TrainingSpec& training,
                                const ParallelDims& dims, double peak_flops,
                                const PerformanceParameters& params);
// Forward seconds of the router's score function and top-k, memory-bound over the T x E fp32
// scores (--moe-router-dtype fp32): the score function reads the logits and writes the scores,
// top-k reads them, and the load-balancing loss's scores read the logits and write their own
// (moe_utils.py, topk_routing_with_score_function, compute_routing_scores_for_aux_loss):
// 20 T E bytes at moe_hbm_efficiency. 0 for a dense model.
double RouterTopKForwardSeconds(const ModelSpec& model, const TrainingSpec& training,
                                const ParallelDims& dims, const GpuSpec& gpu,
                                const PerformanceParameters& params);

// Forward seconds of the copies that reorder routed tokens, each reading and writing 2h bytes
// per token at moe_hbm_efficiency: permute before the dispatch and unpermute after the combine
// on the S tokens the rank sends (moe_utils.py, permute and unpermute; S = T k dropless, E C
// with a capacity factor), and with the all-to-all dispatcher and more than one local expert
// (whatever ep) the N tokens sorted by expert after the dispatch and back by source rank before the
// combine (token_dispatcher.py, MoEAlltoAllTokenDispatcher.dispatch_postprocess and
// combine_preprocess, sort_chunks_by_idxs). The all-gather dispatcher permutes and unpermutes the N
// tokens of its local experts out of the gathered ones
// (MoEAllGatherTokenDispatcher.dispatch_postprocess, combine_preprocess). The flex dispatcher
// permutes into its send buffers inside the dispatch kernel and copies only the N tokens into
// expert order and back (_DeepepManager.get_permuted_hidden_states_by_instances and
// get_restored_hidden_states_by_instances; HybridEP the same unless
// --moe-permute-fusion-into-hybridep, off by default and in NVIDIA's Qwen3 recipes). Backward moves
// the same bytes (a gather's gradient is a scatter of the same size). 0 for a dense model.
double PermutationForwardSeconds(const ModelSpec& model, const TrainingSpec& training,
                                 const ParallelDims& dims, const ExpertParallelism& expert,
                                 const MoeRouting& routing, const GpuSpec& gpu,
                                 const PerformanceParameters& params);

// Bytes one rank sends in the dispatch all-to-all over the ep group: its S routed token copies
// of 2h bytes, of which (ep - 1) / ep leave the rank under balanced routing
// (MoEAlltoAllTokenDispatcher.token_dispatch, all_to_all over ep_group; the fp32 routing
// probabilities, 4 bytes per copy, travel in a second all-to-all). The combine sends the same
// back (token_combine). 0 with ep = 1 or a dense model.
double AllToAllBytesLeavingRank(const ModelSpec& model, const TrainingSpec& training,
                                const ParallelDims& dims, const ExpertParallelism& expert,
                                const MoeRouting& routing);

// Forward seconds of the all-to-all dispatcher's communication, dispatch and combine: two
// all-to-alls (tokens, probabilities) over ep and, with etp > 1, the all-gather of the N / etp
// received tokens over etp (dispatch_postprocess, gather_from_sequence_parallel_region over
// tp_group, the expert tensor group) and the reduce-scatter of the experts' output back
// (combine_preprocess); the combine's all-to-all of the tokens. The expert grid puts etp
// innermost, then ep (megatron/core/parallel_state.py, initialize_model_parallel, the expert
// RankGenerator with order tp-cp-ep-dp-pp and tp = etp): the ep group spans etp x ep
// consecutive ranks, whatever the attention side's tp, and its all-to-all sends the shares for
// ranks of the same node over NVLink and the others over the network at once
// (AllToAllSeconds, link_model.h, at PerformanceParameters::all_to_all_network_efficiency).
// Backward sends the gradients the same way. Not reduced by the overlap (MoeLayerSeconds
// applies it). 0 with etp = ep = 1.
double AllToAllForwardSeconds(const ModelSpec& model, const TrainingSpec& training,
                              const ParallelDims& dims, const ExpertParallelism& expert,
                              const MoeRouting& routing, const ClusterSpec& cluster,
                              const PerformanceParameters& params);

// Forward seconds of the all-gather dispatcher's communication over the etp x ep ranks
// (MoEAllGatherTokenDispatcher.token_dispatch: gather_from_sequence_parallel_region over
// tp_ep_group of the T tokens' 2h bytes, fp32 probabilities 4E and boolean routing map E;
// token_combine: reduce_scatter_to_sequence_parallel_region of the G = T etp ep unpermuted
// outputs in fp32, 4h bytes), at nccl-tests' all-gather and reduce-scatter bus bandwidth
// over a group of etp x ep consecutive ranks. 0 with etp = ep = 1.
double AllGatherDispatchForwardSeconds(const ModelSpec& model, const TrainingSpec& training,
                                       const ParallelDims& dims, const ExpertParallelism& expert,
                                       const ClusterSpec& cluster,
                                       const PerformanceParameters& params);

// The chance that a token's k distinct experts, drawn uniformly from `experts`, include at least
// one of `held` given experts: 1 - C(experts - held, k) / C(experts, k) (the hypergeometric
// chance of no success). Under balanced routing this is the chance that a rank holding `held`
// experts, or a node holding them, receives a given token.
double ExpertShareHitProbability(double experts, double held, double k);

// Forward seconds of the flex dispatcher's dispatch and combine (TokenDispatcher::kFlexDeepEp,
// kFlexHybridEp; MoEFlexTokenDispatcher, token_dispatcher.py:1743-1800 at core_v0.19.0) over the
// G = etp x ep consecutive ranks of its tp_ep group, whose q ranks per node (G, or the node's
// GPUs when G spans nodes) sit on G / q nodes. DeepEP's and HybridEP's kernels send a token
// once to each rank that holds one of its experts, not once per expert (DeepEP's
// intranode/internode dispatch: one copy per destination rank, the k routed experts' indices
// and probabilities with it; _DeepepManager.dispatch, _HybridEPManager.dispatch), and across
// nodes once to each node over RDMA, forwarded there over NVLink (DeepEP README, "normal
// kernels ... asymmetric-domain bandwidth forwarding"; HybridEP's hierarchical dispatch,
// DeepEP hybrid-ep branch). With p_r = ExpertShareHitProbability(E, E / ep, k) the chance a
// rank (all etp ranks of an expert-parallel rank at once) receives a token and p_n the same
// for a node's q E / (etp ep) experts, each of the rank's T tokens of 2h + 12k bytes (bf16
// values; DeepEP's int64 indices and fp32 probabilities) crosses
//   NVLink (q - 1) p_r (G / q) times (to its own node's ranks, and forwarded in the others)
//   the network (G / q - 1) p_n times,
// both at once, each at PerformanceParameters::flex_link_efficiency of the GPU's link: one
// latency plus the slower. The combine sends the experts' outputs back the same way. A
// capacity factor scales the tokens by the copies kept (SentTokensPerRank / T k). The
// permutation into the send buffers is inside the kernels (PermutationForwardSeconds has no
// share of it). 0 with etp = ep = 1 or a dense model. Not reduced by the overlap.
double FlexDispatchForwardSeconds(const ModelSpec& model, const TrainingSpec& training,
                                  const ParallelDims& dims, const ExpertParallelism& expert,
                                  const MoeRouting& routing, const ClusterSpec& cluster,
                                  const PerformanceParameters& params);

// Forward seconds of routing.dispatcher's communication: AllToAllForwardSeconds,
// AllGatherDispatchForwardSeconds or FlexDispatchForwardSeconds.
double DispatcherForwardSeconds(const ModelSpec& model, const TrainingSpec& training,
                                const ParallelDims& dims, const ExpertParallelism& expert,
                                const MoeRouting& routing, const ClusterSpec& cluster,
                                const PerformanceParameters& params);

// Whether Megatron-LM overlaps the dispatcher's all-to-all in this run: an MoE model trained
// with TrainingOptions::moe_expert_parallel_overlap on ep > 1, without full recompute and,
// with pp > 1, interleaved (TransformerConfig.__post_init__ refuses the flag otherwise:
// megatron/core/transformer/transformer_config.py:2669-2690 at core_v0.19.0). The exports
// write the flag exactly where this holds.
bool ExpertParallelOverlapApplies(const ModelSpec& model, const TrainingSpec& training,
                                  const ParallelDims& dims);

// Whether Megatron-LM runs the shared experts beside the dispatcher in this run: an MoE model
// with shared experts trained with TrainingOptions::moe_shared_expert_overlap (the MoE layer
// then hands them to the dispatcher, moe_layer.py:344-345 and 508, which runs fc1 on
// SharedExpertMLP's side stream after the dispatch all-to-all is issued and fc2 after the
// combine's, token_dispatcher.py:651-712 and 853-866 at core_v0.19.0). The exports write the
// flag exactly where this holds.
bool SharedExpertOverlapApplies(const ModelSpec& model, const TrainingSpec& training);

// Seconds of one MoE layer's MoE block for one micro-batch on one GPU, forward and backward,
// with a second forward under full recompute: the GEMMs' backward is twice their forward, the
// copies', router's memory-bound part and communication's once. They replace the dense MLP's
// part of the layer (PredictPerformance, performance_model.cc).
struct MoeLayerSeconds {
  double router = 0;
  double permutation = 0;
  double routed_experts = 0;  // grouped or sequential GEMMs, load imbalance included
  double shared_experts = 0;
  double fp8_casts = 0;  // the experts' and shared experts' fp8 casts (ExpertFp8CastSeconds)
  // Dispatch and combine of routing.dispatcher, forward and backward.
  double communication = 0;
  // communication less the ep_comm_overlap fraction hidden where the training overlaps it
  // (TrainingOptions::moe_expert_parallel_overlap, ep > 1, recompute not full), or less the
  // shared experts' time where they run beside it (SharedExpertOverlapApplies): the layer then
  // takes the longer of the two. Counted over the whole pass, not per linear (fc1 meets the
  // dispatch, fc2 the combine), and without the SMs the NCCL kernels take from the GEMMs.
  double exposed_communication = 0;

  double Compute() const {
    return router + permutation + routed_experts + shared_experts + fp8_casts;
  }
};

// All terms 0 for a dense model. `peak_flops`: the dense bf16 peak; `expert_peak_flops`: that
// of the precision the expert GEMMs run in (DensePeakTflops x 1e12; the fp8 peak for fp8 on
// Hopper, Transformer Engine's GroupedLinear running under fp8_autocast like the dense
// linears). The MoE parameters are params.
MoeLayerSeconds PredictMoeLayerSeconds(const ModelSpec& model, const TrainingSpec& training,
                                       const ParallelDims& dims, const ExpertParallelism& expert,
                                       const MoeRouting& routing, const ClusterSpec& cluster,
                                       double peak_flops, double expert_peak_flops,
                                       const PerformanceParameters& params);

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_MOE_PERFORMANCE_H_
