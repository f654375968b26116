#include "estimator/moe_memory.h"

#include <algorithm>
#include <cmath>

#include "estimator/pipeline_layout.h"

namespace paratune {
namespace {

double D(int64_t value) { return static_cast<double>(value); }

constexpr double kBf16Bytes = 2;

// --moe-router-dtype fp32 (NVIDIA's MoE recipes): router logits, scores and probabilities in
// fp32.
constexpr double kRouterValueBytes = 4;

// Bytes of one saved input of a Transformer Engine linear: its fp8 cast with fp8 (1), bf16
// otherwise; memory_model.cc's Fp8SavedInputSavingsBytes.
double LinearInputBytes(const TrainingSpec& training) { return training.fp8() ? 1 : 2; }

// `params` parameters stored in `weight_bytes` each, sharded as `dims` says over
// `shard_ranks` (model_states.h).
ModelStateBytes StatesOf(double params, double weight_bytes, const TrainingSpec& training,
                         const ParallelDims& dims, double shard_ranks) {
  return ShardedModelStates(training, dims.dp_sharding, params, weight_bytes, shard_ranks);
}

// The ranks a non-expert parameter's states are sharded over: DataParallelShardRanks x cp.
double DenseShardRanks(const ParallelDims& dims) {
  return D(DataParallelShardRanks(dims) * dims.cp);
}

// Weight bytes per parameter of a Transformer Engine linear: fp8 model weights store it in 1.
double LinearWeightBytesPerParameter(const TrainingSpec& training) {
  return training.fp8_param_gather() ? 1 : 2;
}

// Activation bytes per token and inner value (one of f) of an MLP, memory_model.cc's mlp_factor:
// 8 gated (fc1's 2f-wide output, the SiLU output kept for the product and fc2's input; Fujii et
// al. 2024), 4 not (fc1's output and fc2's input; Korthikanti et al. 2022), the same tensors
// for an expert as for the dense MLP; with fp8, fc2's input is saved as its 1-byte cast.
double MlpActivationBytesPerInnerValue(const ModelSpec& model, const TrainingSpec& training) {
  const double mlp_factor = model.gated_mlp() ? 8 : 4;
  return mlp_factor - 2 + LinearInputBytes(training);
}

// Tokens each expert takes from one rank under a capacity factor, C = ceil(T k cf / E)
// (moe_utils.py get_capacity, called by router.py apply_router_token_dropping on the rank's
// T tokens).
double ExpertCapacity(const ModelSpec& model, double tokens, double capacity_factor) {
  const double experts = D(model.moe().num_experts);
  return std::ceil(tokens * D(model.moe().router_top_k) * capacity_factor / experts);
}

// The layers of chunk `chunk` of `chunks`: [first, first + count).
struct LayerRange {
  int64_t first = 0;
  int64_t count = 0;
};

LayerRange ChunkLayers(const PipelineLayout& layout, int64_t layers, int64_t chunk,
                       int64_t chunks) {
  if (!layout.uneven) {
    const int64_t per_chunk = layers / chunks;
    return {chunk * per_chunk, per_chunk};
  }
  // n slots per chunk; the first chunk's first slot is the embedding and the last chunk's last
  // slot the loss (pipeline_layout.h).
  const int64_t slots = (layers + 2) / chunks;
  const int64_t first = chunk == 0 ? 0 : chunk * slots - 1;
  const int64_t count = slots - (chunk == 0 ? 1 : 0) - (chunk == chunks - 1 ? 1 : 0);
  return {first, count};
}

}  // namespace

ExpertParallelism ExpertParallelismOf(const ParallelConfig& config) {
  return {config.ep(), config.etp()};
}

MoeRouting MoeRoutingOf(const TrainingSpec& training, double dropless_load_margin) {
  MoeRouting routing;
  routing.capacity_factor = training.moe_capacity_factor();
  routing.dropless_load_margin = dropless_load_margin;
  routing.dispatcher = training.moe_token_dispatcher();
  return routing;
}

int64_t MoeLayersOnStage(const ModelSpec& model, int64_t stage, int64_t pp, int64_t vp) {
  if (!model.is_moe()) return 0;
  const int64_t layers = model.num_layers();
  const PipelineLayout layout = LayoutPipeline(layers, pp, vp);
  int64_t moe_layers = 0;
  for (int64_t j = 0; j < vp; ++j) {
    const LayerRange range = ChunkLayers(layout, layers, j * pp + stage, pp * vp);
    for (int64_t layer = range.first; layer < range.first + range.count; ++layer) {
      if (model.IsMoeLayer(layer)) ++moe_layers;
    }
  }
  return moe_layers;
}

double ExpertDataParallelSize(const ParallelDims& dims, const ExpertParallelism& expert) {
  return D(dims.tp * dims.cp * dims.dp) / D(expert.etp * expert.ep);
}

double ExpertParameters(const ModelSpec& model, const ExpertParallelism& expert,
                        int64_t moe_layers) {
  const MoeDimensions& moe = model.moe();
  const double local_experts = D(moe.num_experts) / D(expert.ep);
  return D(moe_layers) * local_experts * model.MlpMatrices() * D(moe.expert_ffn_hidden_size) *
         D(model.hidden_size()) / D(expert.etp);
}

double RouterParameters(const ModelSpec& model, int64_t moe_layers) {
  return D(moe_layers) * D(model.hidden_size()) * D(model.moe().num_experts);
}

double SharedExpertParameters(const ModelSpec& model, const ParallelDims& dims,
                              int64_t moe_layers) {
  const MoeDimensions& moe = model.moe();
  return D(moe_layers) * D(moe.num_shared_experts) * model.MlpMatrices() *
         D(moe.shared_expert_ffn_hidden_size) * D(model.hidden_size()) / D(dims.tp);
}

ModelStateBytes ExpertModelStates(const ModelSpec& model, const TrainingSpec& training,
                                  const ParallelDims& dims, const ExpertParallelism& expert,
                                  int64_t moe_layers) {
  return StatesOf(ExpertParameters(model, expert, moe_layers),
                  LinearWeightBytesPerParameter(training), training, dims,
                  ExpertDataParallelSize(dims, expert));
}

ModelStateBytes RouterModelStates(const ModelSpec& model, const TrainingSpec& training,
                                  const ParallelDims& dims, int64_t moe_layers) {
  return StatesOf(RouterParameters(model, moe_layers), kBf16Bytes, training, dims,
                  DenseShardRanks(dims));
}

ModelStateBytes SharedExpertModelStates(const ModelSpec& model, const TrainingSpec& training,
                                        const ParallelDims& dims, int64_t moe_layers) {
  return StatesOf(SharedExpertParameters(model, dims, moe_layers),
                  LinearWeightBytesPerParameter(training), training, dims, DenseShardRanks(dims));
}

double MoeFp8WeightCopyBytes(const ModelSpec& model, const TrainingSpec& training,
                             const ParallelDims& dims, const ExpertParallelism& expert,
                             int64_t moe_layers) {
  if (!training.fp8()) return 0;
  // The fp8 weight and its transpose; with fp8 model weights the weight is itself the fp8 copy.
  const double copies = training.fp8_param_gather() ? 1 : 2;
  return copies * (ExpertParameters(model, expert, moe_layers) +
                   SharedExpertParameters(model, dims, moe_layers));
}

double MoeFp8ScalingStateBytes(const ModelSpec& model, const TrainingSpec& training,
                               const ExpertParallelism& expert, double fp8_amax_history_len,
                               int64_t moe_layers) {
  if (!training.fp8()) return 0;
  const MoeDimensions& moe = model.moe();
  const double local_experts = D(moe.num_experts) / D(expert.ep);
  const double shared_linears = moe.num_shared_experts > 0 ? 2 : 0;
  const double gemms = 2 * local_experts + shared_linears;
  constexpr double kTensorsPerGemm = 3 + 2;
  return D(moe_layers) * gemms * kTensorsPerGemm * 4 * (2 + fp8_amax_history_len);
}

double MoeTokensPerRank(const TrainingSpec& training, const ParallelDims& dims) {
  return D(training.seq_len()) * D(dims.micro_batch) / D(dims.tp * dims.cp);
}

double SentTokensPerRank(const ModelSpec& model, const TrainingSpec& training,
                         const ParallelDims& dims, const MoeRouting& routing) {
  const double tokens = MoeTokensPerRank(training, dims);
  if (routing.capacity_factor <= 0) return tokens * D(model.moe().router_top_k);
  return D(model.moe().num_experts) * ExpertCapacity(model, tokens, routing.capacity_factor);
}

double RoutedTokensPerRank(const ModelSpec& model, const TrainingSpec& training,
                           const ParallelDims& dims, const ExpertParallelism& expert,
                           const MoeRouting& routing) {
  const double tokens = MoeTokensPerRank(training, dims);
  if (routing.capacity_factor <= 0) {
    return tokens * D(model.moe().router_top_k) * D(expert.etp) * routing.dropless_load_margin;
  }
  return D(model.moe().num_experts) * D(expert.etp) *
         ExpertCapacity(model, tokens, routing.capacity_factor);
}

double MoeInputActivationBytes(const ModelSpec& model, const TrainingSpec& training,
                               const ParallelDims& dims) {
  const double tokens = MoeTokensPerRank(training, dims);
  const double h = D(model.hidden_size());
  // In bf16 the router and the shared fc1 save the same tensor; with fp8 the shared fc1 saves
  // its own fp8 cast.
  const bool shared_fp8_copy = training.fp8() && model.moe().num_shared_experts > 0;
  return tokens * h * (2 + (shared_fp8_copy ? 1 : 0));
}

double RouterActivationBytes(const ModelSpec& model, const TrainingSpec& training,
                             const ParallelDims& dims) {
  const double tokens = MoeTokensPerRank(training, dims);
  const double experts = D(model.moe().num_experts);
  constexpr double kIndexBytes = 8;
  // Score-function and load-balancing scores over all experts; top-k and permutation indices.
  return tokens * (2 * kRouterValueBytes * experts + 2 * kIndexBytes * D(model.moe().router_top_k));
}

double RoutedExpertActivationBytes(const ModelSpec& model, const TrainingSpec& training,
                                   const ParallelDims& dims, const ExpertParallelism& expert,
                                   const MoeRouting& routing) {
  const double received = RoutedTokensPerRank(model, training, dims, expert, routing);
  const double h = D(model.hidden_size());
  const double inner = D(model.moe().expert_ffn_hidden_size) / D(expert.etp);
  const double per_token = LinearInputBytes(training) * h +
                           MlpActivationBytesPerInnerValue(model, training) * inner +
                           kRouterValueBytes;
  return received * per_token;
}

double SharedExpertActivationBytes(const ModelSpec& model, const TrainingSpec& training,
                                   const ParallelDims& dims) {
  const MoeDimensions& moe = model.moe();
  const double inner =
      D(moe.num_shared_experts) * D(moe.shared_expert_ffn_hidden_size) / D(dims.tp);
  // The column-parallel fc1 runs on the s b / c tokens gathered over tp.
  const double gathered_tokens = MoeTokensPerRank(training, dims) * D(dims.tp);
  return gathered_tokens * MlpActivationBytesPerInnerValue(model, training) * inner;
}

double MoeBlockActivationBytes(const ModelSpec& model, const TrainingSpec& training,
                               const ParallelDims& dims, const ExpertParallelism& expert,
                               const MoeRouting& routing) {
  return MoeInputActivationBytes(model, training, dims) +
         RouterActivationBytes(model, training, dims) +
         RoutedExpertActivationBytes(model, training, dims, expert, routing) +
         SharedExpertActivationBytes(model, training, dims);
}

double AllToAllBufferBytes(const ModelSpec& model, const TrainingSpec& training,
                           const ParallelDims& dims, const ExpertParallelism& expert,
                           const MoeRouting& routing) {
  const double sent = SentTokensPerRank(model, training, dims, routing);
  const double experts_output = RoutedTokensPerRank(model, training, dims, expert, routing);
  const double etp = D(expert.etp);
  const bool sorted = model.moe().num_experts / expert.ep > 1;
  const bool gathered = expert.etp > 1;
  const double received = sorted || gathered ? experts_output / etp : 0;
  const double sorted_back = sorted ? experts_output : 0;
  const double scattered = gathered ? experts_output / etp : 0;
  const double preprocessing = experts_output + sorted_back + scattered;
  const double combining = (gathered ? scattered : experts_output) + sent;
  return kBf16Bytes * D(model.hidden_size()) *
         (sent + received + std::max(preprocessing, combining));
}

double AllGatherBufferBytes(const ModelSpec& model, const TrainingSpec& training,
                            const ParallelDims& dims, const ExpertParallelism& expert,
                            const MoeRouting& routing) {
  const double tokens = MoeTokensPerRank(training, dims);
  const double experts_output = RoutedTokensPerRank(model, training, dims, expert, routing);
  const double h = D(model.hidden_size());
  if (expert.etp * expert.ep == 1) return kBf16Bytes * h * (experts_output + tokens);
  const double gathered = tokens * D(expert.etp * expert.ep);
  const double experts = D(model.moe().num_experts);
  constexpr double kLocalMapBytes = 1;
  const double held = gathered * (2 * kBf16Bytes * h + kRouterValueBytes * experts +
                                  kLocalMapBytes * experts / D(expert.ep));
  return held + std::max(kBf16Bytes * h * experts_output, kRouterValueBytes * h * gathered);
}

double DispatcherBufferBytes(const ModelSpec& model, const TrainingSpec& training,
                             const ParallelDims& dims, const ExpertParallelism& expert,
                             const MoeRouting& routing) {
  if (routing.dispatcher == TokenDispatcher::kAllGather) {
    return AllGatherBufferBytes(model, training, dims, expert, routing);
  }
  return AllToAllBufferBytes(model, training, dims, expert, routing);
}

MoeMemoryTerms EstimateMoeStageMemory(const ModelSpec& model, const TrainingSpec& training,
                                      const ParallelDims& dims, const ExpertParallelism& expert,
                                      const MoeRouting& routing, double fp8_amax_history_len,
                                      int64_t moe_layers, double moe_layer_micro_batches) {
  MoeMemoryTerms terms;
  if (moe_layers == 0) return terms;
  terms.experts = ExpertModelStates(model, training, dims, expert, moe_layers);
  terms.router = RouterModelStates(model, training, dims, moe_layers);
  terms.shared_experts = SharedExpertModelStates(model, training, dims, moe_layers);
  terms.fp8_weight_copies = MoeFp8WeightCopyBytes(model, training, dims, expert, moe_layers);
  terms.fp8_scaling_state =
      MoeFp8ScalingStateBytes(model, training, expert, fp8_amax_history_len, moe_layers);
  const double block = MoeBlockActivationBytes(model, training, dims, expert, routing);
  if (dims.recompute == Recompute::kFull) {
    terms.recompute_working_set = block;
  } else {
    terms.activations = moe_layer_micro_batches * block;
  }
  terms.dispatcher_buffers = DispatcherBufferBytes(model, training, dims, expert, routing);
  return terms;
}

}  // namespace paratune
