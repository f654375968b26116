// Peak memory per GPU of one configuration: the formulas of Fujii, Watanabe, Yokota 2024
// (arXiv 2411.06465) plus named overhead terms, and the 80% verdict (DESIGN.md §5.2).
#ifndef PARATUNE_ESTIMATOR_MEMORY_MODEL_H_
#define PARATUNE_ESTIMATOR_MEMORY_MODEL_H_

#include <array>
#include <cstdint>

#include "estimator/cluster_spec.h"
#include "estimator/model_spec.h"
#include "estimator/parallel_config.h"
#include "estimator/training_spec.h"

namespace paratune {

// The terms of a memory estimate, each in bytes on one GPU. The first six are the paper's
// formulas (with a mixture-of-experts model's experts, router and shared experts in the model
// states and their activations in kActivations: moe_memory.h); the next five are overheads,
// each set by (and zero-able in) MemoryOptions; the next two are Transformer Engine's fp8
// state, zero when the training precision is bf16; kMoeDispatcherBuffers is zero for a dense
// model, kGatheredWeights without sharded weights (model_states.h).
enum class MemoryTerm {
  kWeights = 0,           // bf16 parameters of the stage, TP-sharded
  kGradients,             // fp32 (or bf16) gradients
  kOptimizerStates,       // fp32 master weights + Adam moments, sharded by the dist. optimizer
  kActivations,           // transformer-layer activations of the micro-batches in flight
  kEmbeddingActivations,  // embedding output kept for backward (first stage)
  kOutputActivations,     // LM head input and fp32 cross-entropy logits (last stage)
  kCudaContext,           // CUDA context and cuBLAS workspace
  kNcclBuffers,           // NCCL channel buffers of every communicator the GPU is in
  kGradientBuckets,       // staging copy of the DDP / distributed-optimizer bucket in flight
  kPipelineBuffers,       // pipeline send/recv tensors (per micro-batch under TorchTitan)
  kFragmentation,         // caching-allocator fragmentation of the activation memory
  kFp8WeightCopies,       // fp8 copy and fp8 transpose of every linear weight of the stage
  kFp8ScalingState,       // fp8 scale, scale_inv and amax history of every linear's tensors
  kMoeDispatcherBuffers,  // token buffers of the MoE layer running (moe_memory.h)
  kGatheredWeights,       // weights a sharded replica holds gathered (GatheredWeightBytes)
  kCount,
};

// Stable snake_case name of a term ("weights", "optimizer_states", ...).
const char* MemoryTermName(MemoryTerm term);

enum class MemoryVerdict { kSafe, kRisky, kOutOfMemory };

// "SAFE", "RISKY", "OOM".
const char* MemoryVerdictName(MemoryVerdict verdict);

// The threshold and the overhead terms. Defaults and their sources are in docs/estimator.md.
struct MemoryOptions {
  // Fraction of capacity below which the verdict is SAFE (the paper's 80% rule).
  double safe_fraction = 0.80;
  // kCudaContext: CUDA context plus cuBLAS workspaces, as nvidia-smi shows for an idle
  // PyTorch process on A100/H100 (about 0.5 GiB).
  double cuda_context_bytes = 512.0 * 1024 * 1024;
  // kNcclBuffers: per communicator of more than one rank, buffer x channels x peers. NCCL's
  // default NCCL_BUFFSIZE is 4 MiB per channel and peer (NCCL environment documentation);
  // a ring has 2 peers (send and receive); 8 channels is a typical NVLink ring count.
  double nccl_buffer_bytes = 4.0 * 1024 * 1024;
  double nccl_channels = 8;
  // kGradientBuckets: Megatron-LM's DDP bucket of 40M parameters
  // (megatron/core/distributed: bucket_size = max(40000000, 1000000 x dp)), one bucket of
  // gradients staged while it is reduced; only when gradients are reduced (dp x cp > 1).
  double bucket_parameters = 40e6;
  // kPipelineBuffers: whether the pipeline send/recv tensors (one micro-batch's boundary
  // activation and its gradient, sent and received) are counted when pp > 1.
  bool pipeline_buffers = true;
  // kFragmentation: (factor - 1) x the activation terms; PyTorch's caching allocator
  // fragments the short-lived activation blocks, not the long-lived model states.
  double fragmentation_factor = 1.05;
  // kFp8ScalingState: amax history length of Transformer Engine's DelayedScaling recipe
  // (transformer_engine.common.recipe.DelayedScaling, amax_history_len=1024, the value NeMo's
  // recipes set; Megatron-LM's --fp8-amax-history-len defaults to 1).
  double fp8_amax_history_len = 1024;
  // Mixture-of-experts models, dropless routing: the tokens a rank's experts receive as a
  // multiple of their even share (MoeRouting::dropless_load_margin says why 1.0).
  double moe_dropless_load_margin = 1.0;

  // The paper's formulas alone: every overhead term zero (the reference values' setting).
  static MemoryOptions FormulasOnly() {
    MemoryOptions options;
    options.cuda_context_bytes = 0;
    options.nccl_buffer_bytes = 0;
    options.bucket_parameters = 0;
    options.pipeline_buffers = false;
    options.fragmentation_factor = 1.0;
    return options;
  }
};

// Memory of one GPU of one pipeline stage.
struct StageMemory {
  int64_t stage = 0;
  std::array<double, static_cast<int>(MemoryTerm::kCount)> bytes{};

  double term(MemoryTerm t) const { return bytes[static_cast<int>(t)]; }
  double Total() const;
};

// The three kinds of stage: stage 0 (embedding, the most micro-batches in flight), stage 1 as
// the largest of the middle stages 1 .. p - 2 (same parameters, fewer micro-batches in flight
// further down), and stage p - 1 (LM head and loss). Together they bound every stage.
struct MemoryEstimate {
  StageMemory first_stage;   // stage 0
  StageMemory middle_stage;  // stage 1 when pp > 2 (equal to first_stage otherwise)
  StageMemory last_stage;    // stage pp - 1 (equal to first_stage when pp = 1)
  double peak_bytes = 0;     // max over stages
  int64_t peak_stage = 0;    // the stage index of peak_bytes
  bool peak_is_last_stage = false;
  double capacity_bytes = 0;
  double fraction_of_capacity = 0;
  MemoryVerdict verdict = MemoryVerdict::kSafe;
};

// The verdict for a fraction of capacity: SAFE below safe_fraction, RISKY up to 1.0, OUT_OF_MEMORY
// above (Fujii et al. 2024: of 454 runs, none estimated below 80% ran out of memory).
MemoryVerdict VerdictForFraction(double fraction_of_capacity, double safe_fraction);

// Pure and allocation-free: safe to call millions of times per second.
MemoryEstimate EstimateMemory(const ModelSpec& model, const TrainingSpec& training,
                              const ClusterSpec& cluster, const ParallelConfig& config,
                              const MemoryOptions& options);

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_MEMORY_MODEL_H_
