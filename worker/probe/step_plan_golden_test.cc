// Golden checks of the step plan (issue 24, section 2): for each spec of GoldenSpecs(), one
// rank's step against closed forms written here from the model's dimensions, with the
// Megatron-LM (or Transformer Engine) function each comes from, and against the golden file
// of its whole sequence (testdata/*.steps; docs/probe.md says how to regenerate them).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "estimator/model_states.h"
#include "estimator/moe_memory.h"
#include "estimator/moe_performance.h"
#include "gtest/gtest.h"
#include "worker/probe/step_plan.h"
#include "worker/probe/step_plan_specs.h"
#include "worker/probe/weight_gather_plan.h"

namespace paratune {
namespace {

// The spec's dimensions, from its model, training and configuration alone.
struct Dimensions {
  double b, s, h, f, a, k, V, d;  // micro-batch, sequence, hidden, ffn, heads, kv heads, vocab
  double t, c, p, v, m;           // tp, cp, pp, virtual stages, micro-batches per step
  double T;                       // tokens per rank of a micro-batch, b s / c
  double kv;                      // kv heads per tensor rank: k / t, at least 1
  double Vt;                      // vocabulary rows per tensor rank, ceil(V / t)
  bool sp, fp8, overlap, full_recompute, first_stage, last_stage;
  // A mixture-of-experts model's (0 for a dense one), from the estimator's closed forms
  // (estimator/moe_memory.h, moe_performance.h) with its dropless, balanced routing: the
  // stage's MoE layers, the rank's forward FLOPs of one MoE block (router, routed experts with
  // top-k, shared experts), the copies S it sends, etp, the expert parameters on the rank, and
  // the shared experts' (0 without them).
  double moe_layers = 0;
  double moe_block_flops = 0;
  double S = 0;
  double etp = 1;
  double expert_parameters = 0;
  double edp = 1;
  double E = 0;
  double shared_parameters = 0;
};

Dimensions DimensionsOf(const ProbeSpec& spec, int64_t rank) {
  const ModelSpec& model = spec.model();
  const ParallelConfig& config = spec.config();
  Dimensions x;
  x.b = config.micro_batch();
  x.s = spec.training().seq_len();
  x.h = model.hidden_size();
  x.f = model.ffn_hidden_size();
  x.a = model.num_attention_heads();
  x.k = model.num_kv_heads();
  x.V = model.vocab_size();
  x.d = x.h / x.a;
  x.t = config.tp();
  x.c = config.cp();
  x.p = config.pp();
  x.v = config.virtual_pipeline();
  x.m = spec.micro_batches();
  x.T = x.b * x.s / x.c;
  x.kv = std::max(1.0, x.k / x.t);
  x.Vt = std::ceil(x.V / x.t);
  x.sp = config.sequence_parallel() && x.t > 1;
  x.fp8 = spec.training().fp8();
  x.overlap = spec.tp_comm_overlap();
  x.full_recompute = config.recompute() == Recompute::kFull;
  const int64_t stage = spec.layout().CoordinatesOf(rank).pp;
  x.first_stage = stage == 0;
  x.last_stage = stage == config.pp() - 1;
  if (model.is_moe()) {
    const ParallelDims dims = config.dims();
    const ExpertParallelism expert = ExpertParallelismOf(config);
    const double R = MoeTokensPerRank(spec.training(), dims);
    x.moe_layers =
        static_cast<double>(MoeLayersOnStage(model, stage, config.pp(), config.virtual_pipeline()));
    x.moe_block_flops = RouterForwardFlops(model, R) + RoutedExpertForwardFlops(model, R) +
                        SharedExpertForwardFlops(model, x.T) / x.t;
    x.S = SentTokensPerRank(model, spec.training(), dims, MoeRouting());
    x.etp = static_cast<double>(expert.etp);
    x.expert_parameters = ExpertParameters(model, expert, static_cast<int64_t>(x.moe_layers));
    x.edp = ExpertDataParallelSize(dims, expert);
    x.E = static_cast<double>(model.moe().num_experts);
    x.shared_parameters = SharedExpertParameters(model, dims, static_cast<int64_t>(x.moe_layers));
  }
  return x;
}

// Each golden spec's layers on the rank's stage: L / (p v) per chunk; the 405B's uneven split
// (Megatron-LM's --decoder-first/last-pipeline-num-layers as estimator/pipeline_layout.h
// models it) puts (126 + 2) / 64 = 2 in every chunk but stage 0's first and stage 7's last.
const std::map<std::string, double>& StageLayers() {
  static const auto* layers = new std::map<std::string, double>{
      {"llama8b_cp2_bf16", 32},
      {"llama8b_tp2_sp", 32},
      {"llama70b_tp8_pp2_sp_tpoverlap", 40},
      {"llama70b_tp4_pp8_vp5_fp8_paramgather", 10},
      {"llama405b_tp8_pp8_cp2_vp8_fp8_uneven_full", 15},
      {"llama8b_tp2_dp4_replica", 32},
      {"mixtral_shrunk_tp2_dp2_pp2_ep2", 2},
      {"llama8b_tp2_dp2_sharded_gradients", 32},
      {"llama8b_tp2_dp2_sharded_full", 32},
      {"llama4_shrunk_tp2_dp2_ep2_shared", 4},
      {"llama8b_tp2_dp4_hsdp2_full", 32},
      {"llama8b_tp2_dp4_hsdp2_optimizer", 32},
  };
  return *layers;
}

// The dense layer's MLP FLOPs, which an MoE layer replaces by its MoE block's.
double MlpForwardFlops(const Dimensions& x) {
  return 2 * x.T * x.h * (2 * x.f / x.t) + 2 * x.T * (x.f / x.t) * x.h;
}

// Model FLOPs of one layer's forward pass on one rank for one micro-batch: the four linears
// and attention's QK^T and PV over the whole sequence (Megatron-LM's
// num_floating_point_operations in megatron/training/training.py, without its causal
// discount; the estimator's convention, DESIGN.md section 5.3).
double LayerForwardFlops(const Dimensions& x) {
  const double qkv = 2 * x.T * x.h * (x.a / x.t + 2 * x.kv) * x.d;
  const double projection = 2 * x.T * (x.a / x.t) * x.d * x.h;
  const double mlp = MlpForwardFlops(x);
  const double attention = 4 * x.T * x.s * (x.a / x.t) * x.d;
  return qkv + projection + mlp + attention;
}

// Forward, backward (twice the forward) and, under full recomputation, the forward again.
double StepFlops(const Dimensions& x, double layers) {
  const double lm_head = x.last_stage ? 2 * x.T * x.h * x.Vt : 0;
  const double forward =
      layers * LayerForwardFlops(x) + x.moe_layers * (x.moe_block_flops - MlpForwardFlops(x));
  return x.m * (3 * (forward + lm_head) + (x.full_recompute ? forward : 0));
}

// Tensor-parallel bytes of one micro-batch. A = 2 T h, one bf16 [T, h] activation (Megatron-LM
// megatron/core/tensor_parallel/mappings.py: gather_from_sequence_parallel_region and
// reduce_scatter_to_sequence_parallel_region, whose backward passes are the reduce-scatter and
// all-gather; layers.py LinearWithGradAccumulationAndAsyncCommunication.backward gathers a
// column-parallel input again with sequence parallelism).
double TensorBytesPerMicroBatch(const Dimensions& x, double layers) {
  if (x.t == 1) return 0;
  const double A = 2 * x.T * x.h;
  double layer = 0;
  double recomputed = 0;
  if (x.overlap) {
    // Transformer Engine's userbuffers (comm_gemm_overlap.cpp): qkv_fprop, fc1_fprop,
    // proj_dgrad and fc2_dgrad ring-exchange t - 1 chunks of A / t each way
    // (split_overlap_ag); proj_fprop and fc2_fprop reduce-scatter A in column chunks
    // (split_overlap_rs); qkv and fc1 dgrad/wgrad gather A and reduce-scatter A (bulk).
    const double ring = 2 * (x.t - 1) * A / x.t;
    layer = 4 * ring + 2 * A + 2 * (A + A);
    recomputed = 2 * ring + 2 * A;
  } else if (x.fp8) {
    // Transformer Engine gathers fp8 (1 byte) inputs and output gradients: forward 2 x A/2
    // gathers + 2 A reduce-scatters; backward 2 fp8 output-gradient gathers
    // (grad_output_preprocess), 2 fp8 input re-gathers, 2 A reduce-scatters.
    layer = 3 * A + 4 * A;
    recomputed = 3 * A;
  } else {
    // Forward 2 gathers + 2 reduce-scatters; backward 2 gathers of output gradients, 2
    // re-gathers of inputs, 2 reduce-scatters of input gradients.
    layer = 10 * A;
    recomputed = 4 * A;
  }
  double total = layers * (layer + (x.full_recompute ? recomputed : 0));
  // An MoE layer (bf16, no overlap: CheckCudaProbeRuns) routes the rank's own rows: its routed
  // experts have no tensor-parallel collective (moe_layer.py, MoELayer.forward on the
  // sequence-parallel shard), half of the layer's: 5 A, 2 A recomputed. Shared experts are a
  // dense MLP over the tensor group (shared_experts.py, SharedExpertMLP) and keep them, as the
  // performance model's MoE layer keeps the dense layer's TP time with shared experts.
  if (x.shared_parameters == 0) total -= x.moe_layers * (5 * A + (x.full_recompute ? 2 * A : 0));
  // VocabParallelEmbedding: reduce-scatter forward, all-gather backward.
  if (x.first_stage) total += 2 * A;
  // The LM head's ColumnParallelLinear: gather forward, gather again and reduce-scatter
  // backward; vocab_parallel_cross_entropy's all-reduces of T fp32 maxima and sums
  // (megatron/core/tensor_parallel/cross_entropy.py). Megatron-LM also all-reduces the
  // predicted logits (T x 4 bytes more), which the probe's loss does not need: a named
  // difference (kPredictedLogitsBytes).
  if (x.last_stage) total += 3 * A + 2 * 4 * x.T;
  return total;
}

// Context-parallel bytes of one micro-batch, p2p ring. KV = one rank's K and V block,
// 2 b kv (s/c) d bf16 values. Transformer Engine's AttnFuncWithCPAndKVP2P
// (attention/dot_product_attention/context_parallel.py) exchanges the block c - 1 times forward
// and backward, and the block's dK/dV one step behind it; the probe's ring sends them in fp32
// and once more, home after the last step (context_parallel_ring.h): c exchanges of 2 KV bytes.
double ContextBytesPerMicroBatch(const Dimensions& x, double layers) {
  if (x.c == 1) return 0;
  const double KV = 2 * x.b * x.kv * (x.s / x.c) * x.d * 2;
  const double forward = 2 * (x.c - 1) * KV;
  const double backward = 2 * (x.c - 1) * KV + 2 * x.c * 2 * KV;
  return layers * (forward + backward + (x.full_recompute ? forward : 0));
}

// Pipeline bytes of one micro-batch: each chunk receives its input and sends its output
// gradient unless it is the model's first, and sends its output and receives its gradient
// unless it is the model's last, B = 2 (T / t) h bytes each with sequence parallelism
// (megatron/core/pipeline_parallel/p2p_communication.py, _communicate's tensor_shape).
double PipelineBytesPerMicroBatch(const Dimensions& x) {
  if (x.p == 1) return 0;
  const double B = 2 * (x.sp ? x.T / x.t : x.T) * x.h;
  return B * (4 * x.v - (x.first_stage ? 2 : 0) - (x.last_stage ? 2 : 0));
}

// fp8 amax bytes of one micro-batch: at each chunk's forward exit and backward end,
// Transformer Engine's FP8GlobalStateManager.reduce_and_update_fp8_tensors all-reduces the
// amaxes of its linears' forward (3 per linear) and backward (2 per linear) tensors, fp32.
double AmaxBytesPerMicroBatch(const Dimensions& x, double layers) {
  return x.fp8 ? layers * 4 * (3 + 2) * 4 : 0;
}

// Expert-parallel bytes of one micro-batch: per MoE layer the dispatch's and the combine's S
// tokens (2 h bytes each) and the dispatch's S fp32 probabilities, forward and backward, in
// nccl-tests' alltoall size, the whole send buffer (token_dispatcher.py,
// MoEAlltoAllTokenDispatcher.token_dispatch and token_combine, two all_to_all each way).
double ExpertBytesPerMicroBatch(const Dimensions& x) {
  return x.moe_layers * 2 * (2 * x.S * 2 * x.h + x.S * 4);
}

// Expert-tensor-parallel bytes of one micro-batch (etp > 1): per MoE layer the all-gather of
// the etp S received tokens and probabilities and the reduce-scatter of the experts' output,
// forward, and their backward (dispatch_postprocess, combine_preprocess).
double ExpertTensorBytesPerMicroBatch(const Dimensions& x) {
  if (x.etp == 1) return 0;
  return x.moe_layers * 2 * (2 * x.etp * x.S * 2 * x.h + x.etp * x.S * 4);
}

// A stage's parameters on one tensor rank, and the linear weights among them.
struct StageParameters {
  double all = 0;
  double linear = 0;
};

StageParameters StageParametersOf(const Dimensions& x, double layers) {
  const double linear =
      x.h * (x.a / x.t + 2 * x.kv) * x.d + (x.a / x.t) * x.d * x.h + 3 * (x.f / x.t) * x.h;
  StageParameters p;
  // An MoE layer's dense linears: its attention's, the router's [E, h] and the shared experts'
  // (moe_memory.h SharedExpertParameters) in place of the MLP (the routed experts are the
  // expert data-parallel group's).
  p.linear =
      layers * linear + x.moe_layers * (x.E * x.h - 3 * (x.f / x.t) * x.h) + x.shared_parameters;
  p.all = p.linear + layers * 2 * x.h;
  if (x.first_stage) p.all += x.Vt * x.h;
  if (x.last_stage) p.all += x.h + x.Vt * x.h;
  return p;
}

std::map<CollectiveFamily, double> BytesByFamily(const StepPlan& plan) {
  std::map<CollectiveFamily, double> bytes;
  for (const StepOp& op : plan.ops) {
    if (const auto* c = std::get_if<CollectiveOp>(&op.detail)) {
      bytes[c->family] += static_cast<double>(c->MovedBytes());
    }
  }
  return bytes;
}

std::vector<std::string> ReadLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class StepPlanGoldenTest : public testing::TestWithParam<GoldenSpec> {
 protected:
  void SetUp() override {
    absl::StatusOr<ProbeSpec> spec = PlanSpecOf(GetParam().options);
    ASSERT_TRUE(spec.ok()) << spec.status();
    spec_ = std::make_unique<ProbeSpec>(*spec);
    footprint_ = std::make_unique<FootprintPlan>(
        FootprintPlan::OfStage(*spec_, spec_->layout().CoordinatesOf(GetParam().rank).pp));
    absl::StatusOr<StepPlan> plan =
        StepPlanOf(*spec_, *footprint_, GetParam().rank, spec_->micro_batches());
    ASSERT_TRUE(plan.ok()) << plan.status();
    plan_ = *plan;
    x_ = DimensionsOf(*spec_, GetParam().rank);
    layers_ = StageLayers().at(GetParam().name);
  }

  std::unique_ptr<ProbeSpec> spec_;
  std::unique_ptr<FootprintPlan> footprint_;
  StepPlan plan_;
  Dimensions x_;
  double layers_ = 0;
};

TEST_P(StepPlanGoldenTest, FlopsAreTheModelFlopsPlusTheRecomputedForward) {
  const double expected = StepFlops(x_, layers_);
  const double planned = PlanModelFlops(plan_);
  std::printf("golden %s flops: plan %.6e closed form %.6e\n", GetParam().name.c_str(), planned,
              expected);
  EXPECT_NEAR(planned, expected, 1e-3 * expected);
}

TEST_P(StepPlanGoldenTest, CollectiveBytesAreTheClosedForms) {
  const std::map<CollectiveFamily, double> planned = BytesByFamily(plan_);
  std::map<CollectiveFamily, double> expected;
  expected[CollectiveFamily::kTensor] = x_.m * TensorBytesPerMicroBatch(x_, layers_);
  expected[CollectiveFamily::kContext] = x_.m * ContextBytesPerMicroBatch(x_, layers_);
  expected[CollectiveFamily::kPipeline] = x_.m * PipelineBytesPerMicroBatch(x_);
  expected[CollectiveFamily::kFp8Amax] = x_.m * AmaxBytesPerMicroBatch(x_, layers_);
  expected[CollectiveFamily::kExpert] = x_.m * ExpertBytesPerMicroBatch(x_);
  expected[CollectiveFamily::kExpertTensor] = x_.m * ExpertTensorBytesPerMicroBatch(x_);
  // Data x context parallel, distributed optimizer (Megatron-LM's param_and_grad_buffer.py,
  // _ParamAndGradBucketGroup.start_grad_sync's reduce_scatter_tensor and start_param_sync's
  // all_gather_into_tensor): fp32 gradients reduce-scattered and weights gathered in their own
  // bytes (1 for fp8 parameters, 2 else), over every parameter of the stage, as often as the
  // estimator's DataParallelTrafficPerStep says: once per step with the distributed optimizer;
  // under sharded gradients (Megatron-FSDP's optim_grads) each micro-batch's gradients, unit
  // by unit after its backward, and the weights once, after the optimizer step; under sharded
  // weights (optim_grads_params, FSDP2) each unit's weights before its forward and again
  // before its backward, 2 m gathers, and never after the step. A REPLICA probe models them.
  // Under hybrid sharding the reduce-scatters and gathers run within the shard group, and each
  // reduction's 1 / (dp_shard_group c) shard of the gradients is all-reduced over the dp /
  // dp_shard_group replicas (the estimator's GradientSyncSeconds; Megatron-LM's
  // start_grad_sync with distributed optimizer instances, FSDP2's HSDP).
  // ParameterLayout pads tensors to its alignment, none here.
  const bool data_parallel = !spec_->replica() && x_.c * spec_->config().dp() > 1;
  const StageParameters parameters = StageParametersOf(x_, layers_);
  const bool fp8_parameters = spec_->training().fp8_param_gather();
  const DataParallelTraffic traffic = DataParallelTrafficPerStep(
      spec_->training(), spec_->config().dp_sharding(), /*pipelined=*/x_.p > 1, x_.m);
  expected[CollectiveFamily::kData] =
      data_parallel ? traffic.gradient_reductions * 4 * parameters.all +
                          traffic.weight_gathers *
                              (2 * parameters.all - (fp8_parameters ? parameters.linear : 0))
                    : 0;
  const bool hybrid = spec_->config().dims().dp_shard_group > 0;
  expected[CollectiveFamily::kDataReplica] =
      data_parallel && hybrid ? traffic.gradient_reductions * 4 * parameters.all /
                                    (x_.c * spec_->config().dp_shard_ranks())
                              : 0;
  // The routed experts' gradients and weights, the same way over the expert data-parallel
  // group where it has more than one rank (distributed_data_parallel.py: expert parameters get
  // their own buffers over intra_expt_dp_group).
  expected[CollectiveFamily::kExpertData] =
      !spec_->replica() && x_.edp > 1 ? (4 + 2) * x_.expert_parameters : 0;
  // Fp8Parameters::CastMasterWeights all-reduces each chunk's forward amaxes (3 per linear)
  // over the data x context group once per step (Transformer Engine's
  // _cast_master_weights_to_fp8_delayed_scaling).
  if (fp8_parameters && data_parallel) {
    expected[CollectiveFamily::kFp8Amax] += layers_ * 4 * 3 * 4;
  }
  for (const auto& [family, bytes] : expected) {
    const double got = planned.count(family) ? planned.at(family) : 0;
    std::printf("golden %s %s bytes: plan %.0f closed form %.0f difference %.0f\n",
                GetParam().name.c_str(), CollectiveFamilyName(family), got, bytes, got - bytes);
    EXPECT_EQ(got, bytes) << CollectiveFamilyName(family);
  }
}

// Under data-parallel sharding, the model states the probe allocates against the estimator's
// closed forms (estimator/model_states.h): ShardedModelStates' bf16 weights (whole, or their
// shard under full sharding), fp32 gradients and optimizer states over dp x cp ranks
// (dp_shard_group x cp under hybrid sharding, DataParallelShardRanks), and
// GatheredWeightBytes' two gathered units under full sharding. The estimator's largest unit is
// a layer or the embedding table, h ceil(V / t); the probe's loss unit holds the final norm
// (h) beside the LM head's table: 2 slots of 2 h bytes more where it is the largest.
TEST_P(StepPlanGoldenTest, ShardedModelStatesAreTheClosedForms) {
  const DataParallelSharding sharding = spec_->config().dp_sharding();
  const bool hybrid = spec_->config().dims().dp_shard_group > 0;
  if (!ShardsGradients(sharding) && !hybrid) {
    GTEST_SKIP() << "the distributed optimizer's states over every rank only";
  }
  const StageParameters parameters = StageParametersOf(x_, layers_);
  const double shard_ranks = x_.c * spec_->config().dp_shard_ranks();
  const ModelStateBytes states =
      ShardedModelStates(spec_->training(), sharding, parameters.all, 2, shard_ranks);
  const double layer = (parameters.all - (x_.first_stage ? x_.Vt * x_.h : 0) -
                        (x_.last_stage ? x_.h + x_.Vt * x_.h : 0)) /
                       layers_;
  const double table = x_.Vt * x_.h;
  const double gathered = GatheredWeightBytes(spec_->training(), sharding, x_.p > 1, parameters.all,
                                              std::max(layer, table));
  const double final_norm = ShardsWeights(sharding) && x_.last_stage && table >= layer
                                ? kGatheredWeightSlots * 2 * x_.h
                                : 0;
  auto bytes = [&](ProbeBuffer buffer) {
    return static_cast<double>(footprint_->placement(buffer).bytes);
  };
  const std::vector<std::tuple<std::string, double, double>> checks = {
      {"weights", bytes(ProbeBuffer::kWeights), states.weights},
      {"gradients", bytes(ProbeBuffer::kGradients), states.gradients},
      {"optimizer_states",
       bytes(ProbeBuffer::kMasterWeights) + bytes(ProbeBuffer::kAdamFirstMoment) +
           bytes(ProbeBuffer::kAdamSecondMoment),
       states.optimizer_states},
      {"gathered_weights", bytes(ProbeBuffer::kGatheredWeights), gathered + final_norm},
  };
  for (const auto& [name, planned, closed_form] : checks) {
    std::printf("golden %s model states %s: plan %.0f closed form %.0f\n", GetParam().name.c_str(),
                name.c_str(), planned, closed_form);
    EXPECT_EQ(planned, closed_form) << name;
  }
}

// Terms the probe's plan holds at another size than the memory model, and why
// (docs/probe.md, "The step plan"): the runtime's own memory, transient buffers the model has
// no term for, and terms the model counts that the probe does not need.
const std::map<std::string, std::string>& NamedMemoryDifferences() {
  static const auto* named = new std::map<std::string, std::string>{
      {"cuda_context", "allocated by the CUDA runtime and cuBLAS, not by the plan"},
      {"nccl_buffers", "allocated by NCCL, not by the plan"},
      {"probe_workspace", "the probe's transient buffers; the model has no term"},
      {"embedding_activations", "Megatron keeps the embedding output; the probe does not"},
      {"gradient_buckets",
       "the probe reduces in place; Megatron stages a bucket copy. Under sharded gradients the "
       "probe stages the largest unit's gradients (the embedding's or a layer's), the model a "
       "bucket of 40M parameters"},
      {"fragmentation", "the probe allocates once: no caching-allocator fragmentation"},
      {"fp8_scaling_state", "amax history 1 (the exported recipe) against the model's 1024"},
      {"pipeline_buffers", "the model counts two boundary tensors each way, the probe one"},
      {"output_activations",
       "the plan holds the logits of every loss pass in flight (all m with an interleaved "
       "schedule whose warm-up covers the step); the model counts one micro-batch's"},
      {"activations",
       "a layer keeps the tensors its backward reads (activation_layout.h), 80 to 100 % of "
       "the model's count; under full recomputation one rebuilt layer block more"},
  };
  return *named;
}

TEST_P(StepPlanGoldenTest, MemoryIsTheEstimatorsTermsOrANamedDifference) {
  double planned_total = 0;
  double estimated_total = 0;
  for (const TermAllocation& term : footprint_->terms()) {
    double planned = static_cast<double>(term.needed_bytes);
    if (term.name == "activations") {
      // The slots the plan's step holds at once, and the recompute workspace.
      planned = static_cast<double>(plan_.most_activation_slots * footprint_->slot_bytes() +
                                    footprint_->placement(ProbeBuffer::kRecomputeWorkspace).bytes);
    }
    if (term.name == "output_activations") {
      planned = static_cast<double>(plan_.most_loss_slots * footprint_->loss_activations().bytes);
    }
    const double estimated = static_cast<double>(term.estimated_bytes);
    planned_total += planned;
    estimated_total += estimated;
    const double difference = planned - estimated;
    const bool within = std::abs(difference) <= 0.02 * estimated;
    std::printf("golden %s memory %s: plan %.0f estimate %.0f difference %.0f%s\n",
                GetParam().name.c_str(), term.name.c_str(), planned, estimated, difference,
                within ? "" : " (named)");
    if (!within) {
      EXPECT_TRUE(NamedMemoryDifferences().count(term.name)) << term.name;
    }
  }
  std::printf("golden %s memory total: plan %.0f estimate %.0f difference %.0f\n",
              GetParam().name.c_str(), planned_total, estimated_total,
              planned_total - estimated_total);
}

TEST_P(StepPlanGoldenTest, StepMatchesTheGoldenFile) {
  const std::string path = absl::StrCat("worker/probe/testdata/", GetParam().name, ".steps");
  const std::vector<std::string> golden = ReadLines(path);
  ASSERT_FALSE(golden.empty()) << path;
  const std::vector<std::string> lines = DescribeSteps(plan_);
  for (size_t i = 0; i < std::min(golden.size(), lines.size()); ++i) {
    ASSERT_EQ(lines[i], golden[i]) << path << ":" << i + 1;
  }
  EXPECT_EQ(lines.size(), golden.size()) << path;
}

INSTANTIATE_TEST_SUITE_P(Goldens, StepPlanGoldenTest, testing::ValuesIn(GoldenSpecs()),
                         [](const testing::TestParamInfo<GoldenSpec>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace paratune
