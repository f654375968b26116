#include "estimator/memory_model.h"

#include <algorithm>

namespace paratune {
namespace {

// Sizes of one configuration as doubles, named as in DESIGN.md §5.2.
struct Symbols {
  double s, b, h, f, a, k, V, L, t, p, c, d, v, m;
  bool tied, sp;
};

Symbols MakeSymbols(const ModelSpec& model, const TrainingSpec& training,
                    const ParallelConfig& config) {
  Symbols x;
  x.s = static_cast<double>(training.seq_len());
  x.b = static_cast<double>(config.micro_batch());
  x.h = static_cast<double>(model.hidden_size());
  x.f = static_cast<double>(model.ffn_hidden_size());
  x.a = static_cast<double>(model.num_attention_heads());
  x.k = static_cast<double>(model.num_kv_heads());
  x.V = static_cast<double>(model.vocab_size());
  x.L = static_cast<double>(model.num_layers());
  x.t = static_cast<double>(config.tp());
  x.p = static_cast<double>(config.pp());
  x.c = static_cast<double>(config.cp());
  x.d = static_cast<double>(config.dp());
  x.v = static_cast<double>(config.virtual_pipeline());
  x.m = static_cast<double>(config.NumMicroBatches(training));
  x.tied = model.tied_embeddings();
  // Without TP there is nothing for sequence parallelism to shard, so both forms agree.
  x.sp = config.sequence_parallel() || config.tp() == 1;
  return x;
}

// Parameters of one transformer layer, Fujii et al. 2024 (arXiv 2411.06465), parameter
// formula (DESIGN.md §5.2): 2h^2 (1 + k/a + 1.5 f/h) + 2h (Q, O; K, V under GQA; SwiGLU
// gate, up, down; two RMSNorms).
double LayerParameters(const Symbols& x) {
  return 2 * x.h * x.h * (1 + x.k / x.a + 1.5 * x.f / x.h) + 2 * x.h;
}

// Parameters per GPU of the first stage, Fujii et al. 2024 (DESIGN.md §5.2):
// P1 = hV/t + (L/p) [layer]/t, plus the final norm and the untied LM head hV/t when p = 1.
// The final norm's h weights are replicated on every TP rank, as in Megatron; counting them
// whole (not h/t) is what reproduces the reference values of data/estimator/ exactly.
double FirstStageParameters(const Symbols& x) {
  double params = (x.h * x.V + (x.L / x.p) * LayerParameters(x)) / x.t;
  if (x.p == 1) params += x.h + (x.tied ? 0 : x.h * x.V / x.t);
  return params;
}

// The last stage (p > 1) holds its layers, the final norm and the LM head. With tied
// embeddings Megatron keeps a copy of the embedding there for the LM head, so hV/t either way.
double LastStageParameters(const Symbols& x) {
  return ((x.L / x.p) * LayerParameters(x) + x.h * x.V) / x.t + x.h;
}

// Activation bytes of one layer for one micro-batch on one GPU, nothing recomputed.
double LayerActivationBytes(const Symbols& x, const TrainingSpec& training, bool selective) {
  const double sbh = x.s * x.b * x.h;
  if (training.flash_attention()) {
    // Fujii et al. 2024, activations with FlashAttention, SP, SwiGLU and GQA:
    // sbh (12 + 4k/a + 8f/h) / (tc). Of the 12, the inputs of the two RMSNorms (2 + 2) and of
    // the QKV and gate/up linears (2 + 2) are what Megatron's TP without SP keeps whole on
    // every rank (Korthikanti et al. 2022, arXiv 2205.05198, on tensor and sequence parallelism);
    // the rest is TP-sharded. Selective recompute frees nothing: FlashAttention stores no s x s
    // matrix.
    const double sharded = 4 + 4 * x.k / x.a + 8 * x.f / x.h;
    if (x.sp) return sbh * (8 + sharded) / (x.t * x.c);
    return sbh * (8 + sharded / x.t) / x.c;
  }
  // Korthikanti et al. 2022 Table 2 (GPT layer, no FlashAttention), per rank of s/c tokens
  // whose attention scores cover the whole sequence: sbh (34/t + 5as/(ht)) with SP,
  // sbh (10 + 24/t + 5as/(ht)) without; selective recompute drops the 5as/(ht) term.
  const double scores = selective ? 0 : 5 * x.a * x.s / (x.h * x.t);
  if (x.sp) return sbh * (34 / x.t + scores) / x.c;
  return sbh * (10 + 24 / x.t + scores) / x.c;
}

// Bytes per layer per micro-batch kept under full recompute: only the layer input, 2sbh/(tc)
// with SP (Korthikanti et al. 2022, full recomputation), 2sbh/c without.
double LayerInputBytes(const Symbols& x) {
  const double sbh = x.s * x.b * x.h;
  return x.sp ? 2 * sbh / (x.t * x.c) : 2 * sbh / x.c;
}

// Micro-batches in flight on the first stage, relative to p: 1F1B keeps min(p, m) of them,
// and the interleaved schedule 1 + (p-1)/(pv) times more (Korthikanti et al. 2022 on
// pipeline parallelism; Fujii et al. 2024). The reference values (data/estimator/) confirm the
// factor p.
double FirstStageInFlight(const Symbols& x) {
  double in_flight = std::min(x.p, x.m);
  if (x.v > 1) in_flight *= 1 + (x.p - 1) / (x.p * x.v);
  return in_flight;
}

// Model chunks (of L/(pv) layers) in flight on the last stage: 1 in 1F1B; in Megatron's
// interleaved schedule the last rank's warm-up is (v-1)p chunks, plus the one in flight.
double LastStageChunksInFlight(const Symbols& x) {
  if (x.v == 1) return 1;
  return std::min(x.m * x.v, (x.v - 1) * x.p + 1);
}

double LayerActivationsHeld(const Symbols& x, const TrainingSpec& training, Recompute recompute,
                            double layer_micro_batches) {
  if (recompute == Recompute::kFull) {
    // Layer inputs of everything in flight, plus the working set of the one layer being
    // recomputed and back-propagated.
    return layer_micro_batches * LayerInputBytes(x) + LayerActivationBytes(x, training, false);
  }
  return layer_micro_batches *
         LayerActivationBytes(x, training, recompute == Recompute::kSelective);
}

// Embedding output kept for backward, Fujii et al. 2024: 8sbh/(tc) per micro-batch
// (8sbh/c without SP, where the embedding output is replicated over TP ranks).
double EmbeddingActivationBytes(const Symbols& x) {
  const double sbh = x.s * x.b * x.h;
  return (x.sp ? 8 * sbh / (x.t * x.c) : 8 * sbh / x.c) * FirstStageInFlight(x);
}

// LM head input and fp32 logits for the cross-entropy, Fujii et al. 2024:
// 4sbh (1 + V/h)/(tc) for the one micro-batch in flight on the last stage. Without SP the
// LM head input is whole on every TP rank; the logits stay vocab-sharded.
double OutputActivationBytes(const Symbols& x) {
  const double sbh = x.s * x.b * x.h;
  const double input = x.sp ? 4 * sbh / (x.t * x.c) : 4 * sbh / x.c;
  return input + 4 * x.s * x.b * x.V / (x.t * x.c);
}

// Bytes per parameter: bf16 weights 2, gradients 4 (fp32) or 2, Adam's fp32 master weights
// and two moments 12, sharded over d x c by the distributed optimizer (Fujii et al. 2024;
// DESIGN.md §5.2).
void AddModelStates(const Symbols& x, const TrainingSpec& training, double params,
                    StageMemory& stage) {
  stage.bytes[static_cast<int>(MemoryTerm::kWeights)] = 2 * params;
  stage.bytes[static_cast<int>(MemoryTerm::kGradients)] =
      (training.fp32_gradients() ? 4 : 2) * params;
  stage.bytes[static_cast<int>(MemoryTerm::kOptimizerStates)] =
      (training.distributed_optimizer() ? 12 / (x.d * x.c) : 12) * params;
}

}  // namespace

const char* MemoryTermName(MemoryTerm term) {
  switch (term) {
    case MemoryTerm::kWeights:
      return "weights";
    case MemoryTerm::kGradients:
      return "gradients";
    case MemoryTerm::kOptimizerStates:
      return "optimizer_states";
    case MemoryTerm::kActivations:
      return "activations";
    case MemoryTerm::kEmbeddingActivations:
      return "embedding_activations";
    case MemoryTerm::kOutputActivations:
      return "output_activations";
    case MemoryTerm::kCudaContext:
      return "cuda_context";
    case MemoryTerm::kCount:
      break;
  }
  return "unknown";
}

const char* MemoryVerdictName(MemoryVerdict verdict) {
  switch (verdict) {
    case MemoryVerdict::kSafe:
      return "SAFE";
    case MemoryVerdict::kRisky:
      return "RISKY";
    case MemoryVerdict::kOutOfMemory:
      return "OOM";
  }
  return "UNKNOWN";
}

double StageMemory::Total() const {
  double total = 0;
  for (double term_bytes : bytes) total += term_bytes;
  return total;
}

MemoryEstimate EstimateMemory(const ModelSpec& model, const TrainingSpec& training,
                              const ClusterSpec& cluster, const ParallelConfig& config,
                              const MemoryOptions& options) {
  const Symbols x = MakeSymbols(model, training, config);
  const Recompute recompute = config.recompute();
  MemoryEstimate estimate;

  StageMemory& first = estimate.first_stage;
  first.stage = 0;
  AddModelStates(x, training, FirstStageParameters(x), first);
  // The first stage holds min(1, m/p) x p micro-batches of L/p layers each.
  first.bytes[static_cast<int>(MemoryTerm::kActivations)] =
      LayerActivationsHeld(x, training, recompute, (x.L / x.p) * FirstStageInFlight(x));
  first.bytes[static_cast<int>(MemoryTerm::kEmbeddingActivations)] = EmbeddingActivationBytes(x);
  first.bytes[static_cast<int>(MemoryTerm::kCudaContext)] = options.cuda_context_bytes;

  if (config.pp() == 1) {
    first.bytes[static_cast<int>(MemoryTerm::kOutputActivations)] = OutputActivationBytes(x);
    estimate.last_stage = first;
  } else {
    StageMemory& last = estimate.last_stage;
    last.stage = config.pp() - 1;
    AddModelStates(x, training, LastStageParameters(x), last);
    last.bytes[static_cast<int>(MemoryTerm::kActivations)] = LayerActivationsHeld(
        x, training, recompute, (x.L / (x.p * x.v)) * LastStageChunksInFlight(x));
    last.bytes[static_cast<int>(MemoryTerm::kOutputActivations)] = OutputActivationBytes(x);
    last.bytes[static_cast<int>(MemoryTerm::kCudaContext)] = options.cuda_context_bytes;
  }

  const double first_total = first.Total();
  const double last_total = estimate.last_stage.Total();
  estimate.peak_is_last_stage = config.pp() > 1 && last_total > first_total;
  estimate.peak_bytes = std::max(first_total, last_total);
  estimate.capacity_bytes = static_cast<double>(cluster.gpu().memory_bytes);
  estimate.fraction_of_capacity = estimate.peak_bytes / estimate.capacity_bytes;
  // Fujii et al. 2024: of 454 runs, none estimated below 80% of capacity ran out of memory.
  if (estimate.fraction_of_capacity < options.safe_fraction) {
    estimate.verdict = MemoryVerdict::kSafe;
  } else if (estimate.fraction_of_capacity <= 1.0) {
    estimate.verdict = MemoryVerdict::kRisky;
  } else {
    estimate.verdict = MemoryVerdict::kOutOfMemory;
  }
  return estimate;
}

}  // namespace paratune
