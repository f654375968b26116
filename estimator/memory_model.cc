#include "estimator/memory_model.h"

#include <algorithm>

#include "estimator/config_symbols.h"
#include "estimator/model_states.h"
#include "estimator/moe_memory.h"
#include "estimator/torchtitan_memory.h"

namespace paratune {
namespace {

constexpr int Term(MemoryTerm term) { return static_cast<int>(term); }

// The configuration's symbols and the two the memory formulas add.
struct Symbols : ConfigSymbols {
  double mlp_factor;  // activation bytes of the MLP per f: 8 gated, 4 not
  bool sp;            // sequence parallelism shards the norm and dropout inputs
};

Symbols MakeSymbols(const ModelSpec& model, const TrainingSpec& training,
                    const ParallelConfig& config) {
  Symbols x{MakeConfigSymbols(model, training, config), model.gated_mlp() ? 8.0 : 4.0,
            // Without TP there is nothing for sequence parallelism to shard: both forms agree.
            config.sequence_parallel() || config.tp() == 1};
  return x;
}

// Parameters of a stage's layers that every TP rank shards over t: whole dense layers, and of
// an MoE layer its attention and norms, which are a dense layer's less the MLP (the experts,
// router and shared experts are sharded their own way: moe_memory.h).
double DenseLayerParameters(const Symbols& x, const StageLayerCounts& stage) {
  return stage.layers * x.layer_params - stage.moe_layers * MlpParameters(x);
}

// Parameters per GPU of the first stage, Fujii et al. 2024 (arXiv 2411.06465; DESIGN.md
// §5.2): P1 = hV/t + (L/p) [layer]/t, plus the final norm and the untied LM head hV/t when
// p = 1. The final norm's h weights are replicated on every TP rank, as in Megatron; counting
// them whole (not h/t) is what reproduces the reference values of data/estimator/ exactly.
double FirstStageParameters(const Symbols& x, const StageLayerCounts& stage) {
  double params = (x.h * x.V + DenseLayerParameters(x, stage)) / x.t;
  if (x.p == 1) params += x.h + (x.tied ? 0 : x.h * x.V / x.t);
  return params;
}

// A middle stage holds only its layers.
double MiddleStageParameters(const Symbols& x, const StageLayerCounts& stage) {
  return DenseLayerParameters(x, stage) / x.t;
}

// The last stage (p > 1) holds its layers, the final norm and the LM head. With tied
// embeddings Megatron keeps a copy of the embedding there for the LM head, so hV/t either way.
double LastStageParameters(const Symbols& x, const StageLayerCounts& stage) {
  return (DenseLayerParameters(x, stage) + x.h * x.V) / x.t + x.h;
}

// Bytes per layer per micro-batch that fp8 saves on the saved activations: Transformer
// Engine casts the input of each of the four linear layers (QKV, attention projection, first
// MLP linear, down projection) to fp8 for the forward GEMM and saves that fp8 copy for the
// weight-gradient GEMM (transformer_engine/pytorch/module/layernorm_linear.py and linear.py:
// ctx.save_for_backward of the fp8 input), 1 byte instead of 2 per value. Those inputs are
// sbh (2 QKV + 2 first MLP), kept whole over TP without SP, and sbh (2 projection + 2f/h down
// projection), TP-sharded; the same four tensors in Korthikanti et al. 2022's and Fujii et
// al. 2024's counts, so halving them is sbh (1 + 1) and sbh (1 + f/h). Everything else
// (norm inputs, attention, the activation function) stays bf16.
double Fp8SavedInputSavingsBytes(const Symbols& x) {
  const double sbh = x.s * x.b * x.h;
  const double sharded = 1 + x.f / x.h;
  if (x.sp) return sbh * (2 + sharded) / (x.t * x.c);
  return sbh * (2 + sharded / x.t) / x.c;
}

// Activation bytes of one layer for one micro-batch on one GPU in bf16, nothing recomputed.
double Bf16LayerActivationBytes(const Symbols& x, const TrainingSpec& training, bool selective) {
  const double sbh = x.s * x.b * x.h;
  if (training.flash_attention()) {
    // Fujii et al. 2024, activations with FlashAttention, SP, SwiGLU and GQA:
    // sbh (12 + 4k/a + 8f/h) / (tc); a non-gated MLP keeps its two f-wide tensors (the
    // activation input and the down projection's input), 4f/h instead of 8f/h (Korthikanti et
    // al. 2022, MLP block). Of the 12, the inputs of the two norms (2 + 2) and of the QKV and
    // first MLP linears (2 + 2) are what Megatron's TP without SP keeps whole on every rank
    // (Korthikanti et al. 2022, arXiv 2205.05198, on tensor and sequence parallelism); the rest
    // is TP-sharded. Selective recompute frees nothing: FlashAttention stores no s x s matrix.
    // The 4 and 4k/a are the queries and attention output (2 + 2) and the keys and values,
    // h and hk/a wide, a d and k d with heads of width d (ConfigSymbols).
    const double sharded =
        4 * x.attention_width / x.h + 4 * x.kv_width / x.h + x.mlp_factor * x.f / x.h;
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

// What TorchTitan's layer saves beyond Megatron-LM's, per micro-batch on one GPU: its TP
// sub-block inputs gathered whole (in float8 under Float8) and, with FlashAttention (SDPA),
// its keys and values expanded to every head (torchtitan_memory.h).
double TorchTitanLayerExtraBytes(const Symbols& x, const TrainingSpec& training) {
  const double gathered_value_bytes = training.fp8() ? 1 : 2;
  const double gathered = x.sp ? TorchTitanGatheredLinearInputBytes(x, gathered_value_bytes) : 0;
  return gathered + (training.flash_attention() ? TorchTitanExpandedKeyValueBytes(x) : 0);
}

// Activation bytes of one layer for one micro-batch on one GPU, nothing recomputed, in the
// training's precision and framework.
double LayerActivationBytes(const Symbols& x, const TrainingSpec& training, bool selective) {
  const double fp8_savings = training.fp8() ? Fp8SavedInputSavingsBytes(x) : 0;
  const double framework_extra =
      training.framework() == Framework::kTorchTitan ? TorchTitanLayerExtraBytes(x, training) : 0;
  return Bf16LayerActivationBytes(x, training, selective) - fp8_savings + framework_extra;
}

// The MLP's share of LayerActivationBytes, the part an MoE layer replaces by its MoE block
// (moe_memory.h, MoeBlockActivationBytes, which states these terms): with FlashAttention the
// first MLP linear's input 2sbh/(tc) and the MLP's mlp_factor sbf/(tc), less with fp8 the
// savings on the MLP's two linear inputs (Fp8SavedInputSavingsBytes: sbh/(tc) and sbf/(tc));
// without it 18 sbh/(tc) of Korthikanti et al.'s 34 (Table 2's MLP block at f = 4h less its
// dropout mask). MoE layers run with sequence parallelism whenever t > 1 (ParallelConfig's
// rules), the form these take.
double MlpActivationBytes(const Symbols& x, const TrainingSpec& training) {
  const double sbh = x.s * x.b * x.h;
  const double sbf = x.s * x.b * x.f;
  if (!training.flash_attention()) return 18 * sbh / (x.t * x.c);
  const double bf16 = 2 * sbh + x.mlp_factor * sbf;
  const double fp8_savings = training.fp8() ? sbh + sbf : 0;
  return (bf16 - fp8_savings) / (x.t * x.c);
}

// Bytes per layer per micro-batch kept under full recompute: only the layer input, 2sbh/(tc)
// with SP (Korthikanti et al. 2022, full recomputation), 2sbh/c without.
double LayerInputBytes(const Symbols& x) {
  const double sbh = x.s * x.b * x.h;
  return x.sp ? 2 * sbh / (x.t * x.c) : 2 * sbh / x.c;
}

// Model chunks in flight on stage i, Megatron-LM's schedules (megatron/core/pipeline_parallel/
// schedules.py): 1F1B warms up p - i - 1 micro-batches and runs one more, at most m; the
// interleaved schedule warms up 2 (p - i - 1) + (v - 1) p chunks, plus one, at most m v. For
// stage 0 and m >= p this is p (1 + (p - 1)/(p v)) micro-batches of all the stage's layers,
// Korthikanti et al. 2022's interleaving factor, which the reference values confirm.
double ChunksInFlight(const Symbols& x, double stage) {
  if (x.v == 1) return std::min(x.m, x.p - stage);
  return std::min(x.m * x.v, 2 * (x.p - stage - 1) + (x.v - 1) * x.p + 1);
}

// What each transformer layer keeps per micro-batch in flight under a recompute mode, and the
// one-off working set of the layer being recomputed (full recompute only).
struct LayerActivations {
  double per_micro_batch = 0;
  double working_set = 0;

  double Held(double layer_micro_batches) const {
    return layer_micro_batches * per_micro_batch + working_set;
  }
};

LayerActivations ActivationsOfRecompute(const Symbols& x, const TrainingSpec& training,
                                        Recompute recompute) {
  // TorchTitan's selective checkpointing recomputes more than the attention core: what it
  // does not save is recomputed, a layer at a time, in the backward.
  if (recompute == Recompute::kSelective && training.framework() == Framework::kTorchTitan) {
    const double saved = TorchTitanSelectiveLayerBytes(x);
    return {saved, LayerActivationBytes(x, training, false) - saved};
  }
  if (recompute == Recompute::kFull) {
    // Layer inputs of everything in flight, plus the working set of the one layer being
    // recomputed and back-propagated.
    return {LayerInputBytes(x), LayerActivationBytes(x, training, false)};
  }
  return {LayerActivationBytes(x, training, recompute == Recompute::kSelective), 0};
}

// The activations of a stage's layers, `chunks` chunks in flight: its dense layers' under the
// recompute mode (`layer`, ActivationsOfRecompute's), and for each MoE layer a dense layer's with
// the MLP part replaced by the MoE block (moe.activations, or under full recompute the larger of
// the working sets of the one layer recomputed at a time, dense or MoE).
double StageActivationBytes(const Symbols& x, const TrainingSpec& training, Recompute recompute,
                            const LayerActivations& layer, const StageLayerCounts& stage,
                            double chunks, const MoeMemoryTerms& moe) {
  const double layer_micro_batches = stage.layers / x.v * chunks;
  if (stage.moe_layers == 0) return layer.Held(layer_micro_batches);
  const double moe_layer_micro_batches = stage.moe_layers / x.v * chunks;
  const double mlp = MlpActivationBytes(x, training);
  if (recompute != Recompute::kFull) {
    return layer.Held(layer_micro_batches) - moe_layer_micro_batches * mlp + moe.activations;
  }
  const double moe_working_set = layer.working_set - mlp + moe.recompute_working_set;
  const double working_set = stage.moe_layers == stage.layers
                                 ? moe_working_set
                                 : std::max(layer.working_set, moe_working_set);
  return layer_micro_batches * layer.per_micro_batch + working_set;
}

// Embedding output kept for backward, Fujii et al. 2024: 8sbh/(tc) per micro-batch in flight
// (8sbh/c without SP, where the embedding output is replicated over TP ranks).
double EmbeddingActivationBytes(const Symbols& x) {
  const double sbh = x.s * x.b * x.h;
  return (x.sp ? 8 * sbh / (x.t * x.c) : 8 * sbh / x.c) * ChunksInFlight(x, 0) / x.v;
}

// LM head input and fp32 logits for the cross-entropy, Fujii et al. 2024:
// 4sbh (1 + V/h)/(tc) for the one micro-batch in flight on the last stage. Without SP the
// LM head input is whole on every TP rank; the logits stay vocab-sharded.
double OutputActivationBytes(const Symbols& x) {
  const double sbh = x.s * x.b * x.h;
  const double input = x.sp ? 4 * sbh / (x.t * x.c) : 4 * sbh / x.c;
  return input + 4 * x.s * x.b * x.V / (x.t * x.c);
}

// The ranks a replica's sharded states are spread over: the data-parallel shard ranks and the
// context-parallel ranks, which hold the same parameters (Megatron-LM's distributed optimizer
// shards over the data-parallel-with-context group; TorchTitan's FSDP over dp_shard x cp).
double ShardRanks(const Symbols& x, const ParallelConfig& config) {
  return static_cast<double>(config.dp_shard_ranks()) * x.c;
}

// The largest unit FSDP gathers at once on a stage: one dense layer's parameters or the
// embedding (and LM head) table, TP-sharded.
double LargestUnitParameters(const Symbols& x) { return std::max(x.layer_params, x.h * x.V) / x.t; }

// The model states of a stage's `params` parameters (ShardedModelStates: bf16 weights 2,
// gradients 4 or 2, Adam 12 per parameter, sharded as the configuration says, for
// Megatron-LM; Fujii et al. 2024, DESIGN.md §5.2, for its distributed optimizer), the
// weights that sharding keeps gathered (GatheredWeightBytes) and the unsharded gradients a
// pipeline accumulates (AccumulatedGradientBytes, with the gradients).
void AddModelStates(const Symbols& x, const TrainingSpec& training, const ParallelConfig& config,
                    double params, StageMemory& stage) {
  const ModelStateBytes states =
      ShardedModelStates(training, config.dp_sharding(), params, 2, ShardRanks(x, config));
  const bool pipelined = config.pp() > 1;
  stage.bytes[Term(MemoryTerm::kWeights)] = states.weights;
  stage.bytes[Term(MemoryTerm::kGradients)] =
      states.gradients +
      AccumulatedGradientBytes(training, config.dp_sharding(), pipelined, params);
  stage.bytes[Term(MemoryTerm::kOptimizerStates)] = states.optimizer_states;
  stage.bytes[Term(MemoryTerm::kGatheredWeights)] = GatheredWeightBytes(
      training, config.dp_sharding(), pipelined, params, LargestUnitParameters(x));
}

// The four linear layers of a transformer layer (QKV, attention projection, first MLP linear,
// down projection) in Transformer Engine's fp8 modules; the embedding, LM head and norms stay
// bf16 (Megatron-LM keeps the output layer out of fp8_autocast). An MoE layer has the first
// two; its experts' linears are moe_memory.h's (MoeFp8WeightCopyBytes, MoeFp8ScalingStateBytes).
constexpr double kFp8LinearsPerLayer = 4;
constexpr double kMlpLinears = 2;

// Linear weights of a stage's layers on one GPU, TP-sharded: the layers' dense parameters
// (DenseLayerParameters) less their two norm weights each.
double LinearParameters(const Symbols& x, const StageLayerCounts& stage) {
  return (DenseLayerParameters(x, stage) - stage.layers * 2 * x.h) / x.t;
}

// fp8 copies of the linear weights, held for the whole step: Transformer Engine casts each
// weight to fp8 once per step and caches the fp8 weight and its fp8 transpose across the
// micro-batches (transformer_engine/pytorch/module/linear.py: weight_fp8 and weight_t_fp8,
// refreshed when is_first_microbatch, which Megatron-LM sets under gradient accumulation;
// Hopper's fp8 GEMM takes only the TN layout, so the backward needs the transpose). One byte
// each per parameter, on top of the bf16 weights. With fp8 model weights
// (fp8_param_gather) the weight itself is the fp8 copy and only the transpose is extra.
double Fp8WeightCopyBytes(const Symbols& x, const TrainingSpec& training,
                          const StageLayerCounts& stage) {
  return (training.fp8_param_gather() ? 1 : 2) * LinearParameters(x, stage);
}

// fp8 scaling state of `layers` transformer layers: each linear's fp8_meta holds, in fp32, a
// scale, a scale_inv and an amax history of amax_history_len entries for each of its 3
// forward tensors (input, weight, output) and 2 backward tensors (output gradient, input
// gradient) (transformer_engine/pytorch/module/base.py, DelayedScaling recipe).
double Fp8ScalingStateBytes(const MemoryOptions& options, const StageLayerCounts& stage) {
  constexpr double kTensorsPerLinear = 3 + 2;
  const double linears = stage.layers * kFp8LinearsPerLayer - stage.moe_layers * kMlpLinears;
  return linears * kTensorsPerLinear * 4 * (2 + options.fp8_amax_history_len);
}

// The fp8 terms of a stage's transformer layers; zero in bf16, and under TorchTitan, whose
// Float8Linear (torchao) casts with dynamic scaling on each use: no fp8 copy cached across
// micro-batches, no amax history.
void AddFp8State(const Symbols& x, const TrainingSpec& training, const ParallelConfig& config,
                 const MemoryOptions& options, const StageLayerCounts& layers, StageMemory& stage) {
  if (!training.fp8() || training.framework() == Framework::kTorchTitan) return;
  stage.bytes[Term(MemoryTerm::kFp8WeightCopies)] = Fp8WeightCopyBytes(x, training, layers);
  // Megatron-LM's fp8 model weights store the linear weights in 1 byte instead of bf16's 2
  // (sharded with the weights under full sharding); TorchTitan's parameters stay fp32, only
  // their all-gather is fp8.
  if (training.fp8_param_gather() && training.framework() == Framework::kMegatron) {
    const double share = ShardsWeights(config.dp_sharding()) ? ShardRanks(x, config) : 1;
    stage.bytes[Term(MemoryTerm::kWeights)] -= LinearParameters(x, layers) / share;
  }
  stage.bytes[Term(MemoryTerm::kFp8ScalingState)] = Fp8ScalingStateBytes(options, layers);
}

// The MoE terms of a stage with MoE layers, added to the dense terms already filled: the
// experts', router's and shared experts' model states (each sharded its own way), their fp8
// state, and the dispatcher's buffers. The MoE blocks' activations are StageActivationBytes'.
void AddMoeTerms(const MoeMemoryTerms& moe, StageMemory& stage) {
  const ModelStateBytes* kinds[] = {&moe.experts, &moe.router, &moe.shared_experts};
  for (const ModelStateBytes* kind : kinds) {
    stage.bytes[Term(MemoryTerm::kWeights)] += kind->weights;
    stage.bytes[Term(MemoryTerm::kGradients)] += kind->gradients;
    stage.bytes[Term(MemoryTerm::kOptimizerStates)] += kind->optimizer_states;
  }
  stage.bytes[Term(MemoryTerm::kFp8WeightCopies)] += moe.fp8_weight_copies;
  stage.bytes[Term(MemoryTerm::kFp8ScalingState)] += moe.fp8_scaling_state;
  stage.bytes[Term(MemoryTerm::kMoeDispatcherBuffers)] = moe.dispatcher_buffers;
}

// The expert side of an MoE model: its parallel sizes and, per GPU, the communicators of more
// than one rank that its steps use beyond the dense ones (Megatron-LM core_v0.19.0,
// megatron/core/parallel_state.py builds them; NCCL sets a communicator up on its first
// collective): the all-to-all dispatcher's expert-parallel group (ep > 1) and expert tensor
// group (etp > 1), or the all-gather dispatcher's expert tensor-and-expert group (etp ep > 1),
// and the expert data-parallel group that reduces the experts' gradients (edp > 1). All 0 for
// a dense model.
struct ExpertSide {
  ExpertParallelism parallelism;
  double communicators = 0;
  bool expert_gradients_reduced = false;  // edp > 1: the experts have their own buckets
};

ExpertSide ExpertSideOf(const ModelSpec& model, const TrainingSpec& training,
                        const ParallelConfig& config) {
  ExpertSide side;
  side.parallelism = ExpertParallelismOf(config);
  if (!model.is_moe()) return side;
  const int64_t ep = side.parallelism.ep;
  const int64_t etp = side.parallelism.etp;
  side.expert_gradients_reduced = ExpertDataParallelSize(config.dims(), side.parallelism) > 1;
  if (training.moe_token_dispatcher() == TokenDispatcher::kAllGather) {
    side.communicators = etp * ep > 1;
  } else {
    side.communicators = (ep > 1) + (etp > 1);
  }
  side.communicators += side.expert_gradients_reduced;
  return side;
}

// Communicators of more than one rank that a GPU of `stage` belongs to in Megatron-LM's
// parallel_state: tensor, context, data, data-with-context (when both exist, for the
// distributed optimizer), pipeline, the embedding group tying the first and last stage, and
// the expert side's.
double Communicators(const Symbols& x, const ExpertSide& expert, int64_t stage) {
  double groups = (x.t > 1) + (x.c > 1) + (x.d > 1) + (x.c > 1 && x.d > 1) + (x.p > 1);
  if (x.p > 1 && (stage == 0 || stage == static_cast<int64_t>(x.p) - 1)) groups += 1;
  return groups + expert.communicators;
}

// The loss's activations on the last stage in the training's framework.
double OutputBytes(const Symbols& x, const TrainingSpec& training) {
  return training.framework() == Framework::kTorchTitan ? TorchTitanLossBytes(x)
                                                        : OutputActivationBytes(x);
}

// The overhead terms of MemoryOptions on a stage whose formula terms are already filled.
void AddOverheads(const Symbols& x, const TrainingSpec& training, const MemoryOptions& options,
                  const ExpertSide& expert, StageMemory& stage) {
  stage.bytes[Term(MemoryTerm::kCudaContext)] = options.cuda_context_bytes;
  // A ring channel has a send and a receive peer.
  stage.bytes[Term(MemoryTerm::kNcclBuffers)] =
      Communicators(x, expert, stage.stage) * options.nccl_buffer_bytes * options.nccl_channels * 2;
  // The experts' gradients are reduced from their own buffer over the expert data-parallel
  // group (megatron/core/distributed/distributed_data_parallel.py: expert parameters get their
  // own buffers and bucket groups), so their bucket in flight is a second one.
  const double buckets = (x.d * x.c > 1) + expert.expert_gradients_reduced;
  if (buckets > 0) {
    stage.bytes[Term(MemoryTerm::kGradientBuckets)] =
        buckets * options.bucket_parameters * (training.fp32_gradients() ? 4 : 2);
  }
  if (x.p > 1 && options.pipeline_buffers) {
    // Send and receive of the boundary activation and of its gradient: 4 tensors of
    // sbh/(tc) bf16 values with SP (sbh/c without); PyTorch's pipelining keeps its own per
    // micro-batch (torchtitan_memory.h).
    const double boundary = x.s * x.b * x.h / (x.sp ? x.t * x.c : x.c);
    const double rank = static_cast<double>(stage.stage);
    stage.bytes[Term(MemoryTerm::kPipelineBuffers)] =
        training.framework() == Framework::kTorchTitan
            ? TorchTitanPipelineBufferBytes(x, rank, ChunksInFlight(x, rank))
            : 4 * 2 * boundary;
  }
  const double activations =
      stage.term(MemoryTerm::kActivations) + stage.term(MemoryTerm::kEmbeddingActivations) +
      stage.term(MemoryTerm::kOutputActivations) + stage.term(MemoryTerm::kMoeDispatcherBuffers);
  stage.bytes[Term(MemoryTerm::kFragmentation)] = (options.fragmentation_factor - 1) * activations;
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
    case MemoryTerm::kNcclBuffers:
      return "nccl_buffers";
    case MemoryTerm::kGradientBuckets:
      return "gradient_buckets";
    case MemoryTerm::kPipelineBuffers:
      return "pipeline_buffers";
    case MemoryTerm::kFragmentation:
      return "fragmentation";
    case MemoryTerm::kFp8WeightCopies:
      return "fp8_weight_copies";
    case MemoryTerm::kFp8ScalingState:
      return "fp8_scaling_state";
    case MemoryTerm::kMoeDispatcherBuffers:
      return "moe_dispatcher_buffers";
    case MemoryTerm::kGatheredWeights:
      return "gathered_weights";
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

MemoryVerdict VerdictForFraction(double fraction_of_capacity, double safe_fraction) {
  if (fraction_of_capacity < safe_fraction) return MemoryVerdict::kSafe;
  if (fraction_of_capacity <= 1.0) return MemoryVerdict::kRisky;
  return MemoryVerdict::kOutOfMemory;
}

MemoryEstimate EstimateMemory(const ModelSpec& model, const TrainingSpec& training,
                              const ClusterSpec& cluster, const ParallelConfig& config,
                              const MemoryOptions& options) {
  const Symbols x = MakeSymbols(model, training, config);
  const ExpertSide expert = ExpertSideOf(model, training, config);
  const MoeRouting routing = MoeRoutingOf(training, options.moe_dropless_load_margin);
  const LayerActivations layer = ActivationsOfRecompute(x, training, config.recompute());
  const int64_t pp = config.pp();
  MemoryEstimate estimate;

  // The terms every stage has: model states (of `stage_parameters` dense ones and the MoE
  // ones), its layers' activations with `chunks` chunks in flight, the fp8 state, and the
  // dispatcher's buffers; the overheads once the rest is filled.
  auto fill_stage = [&](int64_t index, const StageLayerCounts& layers, double stage_parameters,
                        double chunks, StageMemory& stage) {
    stage.stage = index;
    const int64_t moe_layers = static_cast<int64_t>(layers.moe_layers);
    MoeMemoryTerms moe;
    if (moe_layers > 0) {
      moe = EstimateMoeStageMemory(model, training, config.dims(), expert.parallelism, routing,
                                   options.fp8_amax_history_len, moe_layers,
                                   layers.moe_layers / x.v * chunks);
    }
    AddModelStates(x, training, config, stage_parameters, stage);
    stage.bytes[Term(MemoryTerm::kActivations)] =
        StageActivationBytes(x, training, config.recompute(), layer, layers, chunks, moe);
    AddFp8State(x, training, config, options, layers, stage);
    if (moe_layers > 0) AddMoeTerms(moe, stage);
  };

  // Stage 0: chunks in flight of first_stage_layers / v layers each (the uneven first chunk,
  // one layer short, is averaged over the stage's chunks).
  StageMemory& first = estimate.first_stage;
  const StageLayerCounts first_layers = StageLayerCountsOf(model, x.layout, config, 0);
  fill_stage(0, first_layers, FirstStageParameters(x, first_layers), ChunksInFlight(x, 0), first);
  first.bytes[Term(MemoryTerm::kEmbeddingActivations)] = EmbeddingActivationBytes(x);
  if (pp == 1) first.bytes[Term(MemoryTerm::kOutputActivations)] = OutputBytes(x, training);
  AddOverheads(x, training, options, expert, first);
  estimate.middle_stage = first;
  estimate.last_stage = first;

  if (pp > 2) {
    StageMemory& middle = estimate.middle_stage;
    middle = StageMemory();
    const StageLayerCounts layers = StageLayerCountsOf(model, x.layout, config, 1);
    fill_stage(1, layers, MiddleStageParameters(x, layers), ChunksInFlight(x, 1), middle);
    AddOverheads(x, training, options, expert, middle);
  }
  if (pp > 1) {
    StageMemory& last = estimate.last_stage;
    last = StageMemory();
    const StageLayerCounts layers = StageLayerCountsOf(model, x.layout, config, pp - 1);
    fill_stage(pp - 1, layers, LastStageParameters(x, layers), ChunksInFlight(x, x.p - 1), last);
    last.bytes[Term(MemoryTerm::kOutputActivations)] = OutputBytes(x, training);
    AddOverheads(x, training, options, expert, last);
  }

  const double first_total = first.Total();
  const double middle_total = estimate.middle_stage.Total();
  const double last_total = estimate.last_stage.Total();
  estimate.peak_bytes = first_total;
  if (pp > 2 && middle_total > estimate.peak_bytes) {
    estimate.peak_bytes = middle_total;
    estimate.peak_stage = 1;
  }
  if (pp > 1 && last_total > estimate.peak_bytes) {
    estimate.peak_bytes = last_total;
    estimate.peak_stage = pp - 1;
  }
  estimate.peak_is_last_stage = pp > 1 && estimate.peak_stage == pp - 1;
  estimate.capacity_bytes = static_cast<double>(cluster.gpu().memory_bytes);
  estimate.fraction_of_capacity = estimate.peak_bytes / estimate.capacity_bytes;
  estimate.verdict = VerdictForFraction(estimate.fraction_of_capacity, options.safe_fraction);
  return estimate;
}

}  // namespace paratune
