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

// The terms of a memory estimate, each in bytes on one GPU.
enum class MemoryTerm {
  kWeights = 0,           // bf16 parameters of the stage, TP-sharded
  kGradients,             // fp32 (or bf16) gradients
  kOptimizerStates,       // fp32 master weights + Adam moments, sharded by the dist. optimizer
  kActivations,           // transformer-layer activations of the micro-batches in flight
  kEmbeddingActivations,  // embedding output kept for backward (first stage)
  kOutputActivations,     // LM head input and fp32 cross-entropy logits (last stage)
  kCudaContext,           // CUDA context and cuBLAS workspace
  kCount,
};

// Stable snake_case name of a term ("weights", "optimizer_states", ...).
const char* MemoryTermName(MemoryTerm term);

enum class MemoryVerdict { kSafe, kRisky, kOutOfMemory };

// "SAFE", "RISKY", "OOM".
const char* MemoryVerdictName(MemoryVerdict verdict);

struct MemoryOptions {
  // Fraction of capacity below which the verdict is SAFE (the paper's 80% rule).
  double safe_fraction = 0.80;
  // Bytes of the kCudaContext term; 0 reproduces the paper's formulas exactly.
  double cuda_context_bytes = 512.0 * 1024 * 1024;
};

// Memory of one GPU of one pipeline stage.
struct StageMemory {
  int64_t stage = 0;
  std::array<double, static_cast<int>(MemoryTerm::kCount)> bytes{};

  double term(MemoryTerm t) const { return bytes[static_cast<int>(t)]; }
  double Total() const;
};

struct MemoryEstimate {
  StageMemory first_stage;  // stage 0
  StageMemory last_stage;   // stage pp - 1 (equal to first_stage when pp = 1)
  double peak_bytes = 0;    // max over stages
  bool peak_is_last_stage = false;
  double capacity_bytes = 0;
  double fraction_of_capacity = 0;
  MemoryVerdict verdict = MemoryVerdict::kSafe;
};

// Pure and allocation-free: safe to call millions of times per second.
MemoryEstimate EstimateMemory(const ModelSpec& model, const TrainingSpec& training,
                              const ClusterSpec& cluster, const ParallelConfig& config,
                              const MemoryOptions& options);

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_MEMORY_MODEL_H_
