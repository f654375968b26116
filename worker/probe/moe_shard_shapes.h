// The shapes of one rank's MoE block for one micro-batch: the router, the routed token copies
// it sends and receives, its local experts' grouped GEMMs and the shared experts, for
// Megatron-Core core_v0.19.0's all-to-all dispatcher with grouped GEMM, dropless (the default
// the estimator models) or with a capacity factor and the experts' input padded to capacity
// (what paratune exports: --moe-expert-capacity-factor with --moe-pad-expert-input-to-capacity;
// megatron/core/transformer/moe/: router.py, token_dispatcher.py MoEAlltoAllTokenDispatcher,
// experts.py TEGroupedMLP, shared_experts.py SharedExpertMLP). Pure arithmetic on the estimator's
// values, as shard_shapes.h is for the dense layer; the probe's MoE layer is to allocate and launch
// from these numbers, and the tests check them against estimator/moe_memory.h's and
// moe_performance.h's closed forms.
//
// Routing is balanced exactly: each of a rank's R k token copies goes to the experts in turn,
// so that every expert receives R k / E copies from every rank of its expert group and every
// send and receive of the all-to-all has a size known before the step. Megatron-Bridge's MoE
// benchmarks force-balance the router too (--moe-router-force-load-balancing, which routes on
// random scores: balanced on average, not exactly), and the estimator's figures assume it
// (MoeRouting::dropless_load_margin 1, MoePerformanceParameters::expert_load_imbalance 1).
//
// With a capacity factor cf each expert has C = ceil(R k cf / E) slots for a rank's copies
// (moe_utils.py get_capacity on the rank's R k copies, apply_router_token_dropping), all of
// them sent with the input padded to capacity. Balanced, every expert is routed R k / E
// copies, so for cf >= 1 none is dropped and C - R k / E slots are padding; below 1 each
// expert keeps C and drops the rest. The estimator's capacity figures are these
// (SentTokensPerRank E C, RoutedTokensPerRank E etp C, "exact with
// --moe-pad-expert-input-to-capacity").
#ifndef PARATUNE_WORKER_PROBE_MOE_SHARD_SHAPES_H_
#define PARATUNE_WORKER_PROBE_MOE_SHARD_SHAPES_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "estimator/model_spec.h"
#include "estimator/parallel_config.h"
#include "estimator/training_spec.h"
#include "worker/probe/shard_shapes.h"

namespace paratune {

struct MoeShardShapes {
  int64_t experts = 0;                 // E
  int64_t top_k = 0;                   // k
  int64_t expert_parallel = 0;         // ep
  int64_t expert_tensor_parallel = 0;  // etp
  int64_t local_experts = 0;           // E / ep on this rank
  // R: the rows the rank routes, its sequence-parallel shard of the residual stream (an MoE
  // layer needs sequence parallelism whenever tp > 1: MoELayer.forward raises without it).
  int64_t routed_tokens = 0;
  // The slots each expert has for the rank's copies: R k / E dropless, C with a capacity factor.
  int64_t expert_capacity = 0;
  // S = E expert_capacity: the permuted copies the rank sends (R k dropless).
  int64_t routed_copies = 0;
  int64_t copies_per_peer = 0;  // S / ep: one message of the dispatch to each rank of the ep group
  // N = S etp: the copies this rank's experts compute, the ep group's S received and, with
  // etp > 1, all-gathered over the expert tensor group (dispatch_postprocess).
  int64_t received_copies = 0;
  int64_t copies_per_local_expert = 0;  // N / (E / ep)
  int64_t expert_ffn = 0;               // f_e / etp
  // The router's gating GEMM [R, E] from [R, h] (Router.gating, router_gating_linear).
  LinearShape router;
  // One local expert's fc1 [n, 2 f_e / etp] (gated; f_e / etp otherwise) and fc2 [n, h] from
  // [n, f_e / etp], n = copies_per_local_expert: the grouped GEMM runs local_experts of each.
  LinearShape expert_fc1;
  LinearShape expert_fc2;
  // The shared experts, a dense MLP of n_s f_s split over tp on the T tokens gathered over the
  // tensor group (SharedExpertMLP); rows 0 without shared experts.
  int64_t shared_ffn = 0;  // n_s f_s / tp
  LinearShape shared_fc1;
  LinearShape shared_fc2;

  // Forward FLOPs of the block's GEMMs: the router, every local expert's fc1 and fc2, the
  // shared experts. Backward is twice these.
  double ForwardFlops() const;
  // Weight elements of one MoE layer on the rank: the local experts' fc1 and fc2 (sharded over
  // the expert data-parallel group by the distributed optimizer), the router's [E, h] and the
  // shared experts' fc1 and fc2 (both over the data x context group, like a dense layer's).
  int64_t ExpertWeightElements() const;
  int64_t SharedWeightElements() const;
};

// The MoE block of any rank of `config` (the shapes do not depend on the rank's coordinates)
// under `training`'s routing, whose dense shapes are `shapes` (ComputeShardShapes). `model`
// must be a mixture-of-experts model, valid with `training` and `config` (CheckRules).
// INVALID_ARGUMENT naming the values when the routed copies R k are not a multiple of E, since
// the balanced routing needs every expert to receive the same count, or when the capacity C
// exceeds the rank's R rows (apply_router_token_dropping then routes every row to every
// expert, which the padded dispatch cannot hold).
absl::StatusOr<MoeShardShapes> ComputeMoeShardShapes(const ModelSpec& model,
                                                     const TrainingSpec& training,
                                                     const ParallelConfig& config,
                                                     const ShardShapes& shapes);

// Collective sizes in bytes, in nccl-tests' terms (the whole send buffer of an all-to-all, the
// whole gathered buffer of an all-gather, the whole input of a reduce-scatter).
//
// The dispatch all-to-all of the permuted tokens over the ep group, S x h bf16 (token_dispatch);
// the combine sends as many back (token_combine). (ep - 1) / ep of it leaves the rank.
int64_t DispatchTokenBytes(const MoeShardShapes& moe, const ShardShapes& shapes);
// The dispatch all-to-all of the copies' routing probabilities, S fp32 (token_dispatch's
// second all_to_all, --moe-router-dtype fp32).
int64_t DispatchProbabilityBytes(const MoeShardShapes& moe);
// With etp > 1, the all-gather of the received tokens over the expert tensor group after the
// dispatch, N x h bf16 (dispatch_postprocess, gather_from_sequence_parallel_region), and the
// reduce-scatter of the experts' output before the combine, as many bytes
// (combine_preprocess); 0 with etp = 1.
int64_t ExpertTensorGatherBytes(const MoeShardShapes& moe, const ShardShapes& shapes);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_MOE_SHARD_SHAPES_H_
