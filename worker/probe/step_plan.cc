#include "worker/probe/step_plan.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "worker/probe/fp8_state_layout.h"
#include "worker/probe/overlap_plan.h"
#include "worker/probe/pipeline_schedule.h"
#include "worker/probe/probe_report.h"
#include "worker/probe/tensor_parallel_overlap_plan.h"

namespace paratune {

int64_t BytesOf(ElementType type) {
  switch (type) {
    case ElementType::kBf16:
      return 2;
    case ElementType::kFloat32:
      return 4;
    case ElementType::kE4M3:
    case ElementType::kE5M2:
    case ElementType::kUint8:
      return 1;
  }
  return 0;
}

const char* ElementTypeName(ElementType type) {
  switch (type) {
    case ElementType::kBf16:
      return "bf16";
    case ElementType::kFloat32:
      return "f32";
    case ElementType::kE4M3:
      return "e4m3";
    case ElementType::kE5M2:
      return "e5m2";
    case ElementType::kUint8:
      return "u8";
  }
  return "?";
}

const char* CollectiveFamilyName(CollectiveFamily family) {
  switch (family) {
    case CollectiveFamily::kTensor:
      return "tp";
    case CollectiveFamily::kContext:
      return "cp";
    case CollectiveFamily::kData:
      return "dp";
    case CollectiveFamily::kPipeline:
      return "pp";
    case CollectiveFamily::kFp8Amax:
      return "amax";
  }
  return "?";
}

NormLinearBackwardPath NormLinearBackwardPathOf(bool fp8, bool overlapped) {
  if (fp8)
    return overlapped ? NormLinearBackwardPath::kFp8Overlapped : NormLinearBackwardPath::kFp8;
  return overlapped ? NormLinearBackwardPath::kBf16Overlapped : NormLinearBackwardPath::kBf16;
}

RowLinearBackwardPath RowLinearBackwardPathOf(bool fp8, bool overlapped, bool sequence_parallel) {
  if (overlapped) {
    return fp8 ? RowLinearBackwardPath::kFp8Overlapped : RowLinearBackwardPath::kBf16Overlapped;
  }
  if (fp8) {
    return sequence_parallel ? RowLinearBackwardPath::kFp8SequenceParallel
                             : RowLinearBackwardPath::kFp8;
  }
  return RowLinearBackwardPath::kBf16;
}

double GemmOp::Flops() const {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

double AttentionOp::ModelFlops() const {
  const double forward = 4.0 * static_cast<double>(batch) * static_cast<double>(queries) *
                         static_cast<double>(keys) * static_cast<double>(heads * head_dim);
  return backward ? 2 * forward : forward;
}

double PlanModelFlops(const StepPlan& plan) {
  double flops = 0;
  for (const StepOp& op : plan.ops) {
    if (const auto* gemm = std::get_if<GemmOp>(&op.detail)) flops += gemm->Flops();
    if (const auto* attention = std::get_if<AttentionOp>(&op.detail)) {
      flops += attention->ModelFlops();
    }
  }
  return flops;
}

namespace {

const char* LinearWeightName(LinearWeight weight) {
  switch (weight) {
    case LinearWeight::kQkv:
      return "qkv";
    case LinearWeight::kAttentionOutput:
      return "proj";
    case LinearWeight::kGateUp:
      return "fc1";
    case LinearWeight::kDown:
      return "fc2";
    case LinearWeight::kLmHead:
      return "lm_head";
  }
  return "?";
}

const char* GemmRoleName(GemmRole role) {
  switch (role) {
    case GemmRole::kForward:
      return "fprop";
    case GemmRole::kInputGradient:
      return "dgrad";
    case GemmRole::kWeightGradient:
      return "wgrad";
  }
  return "?";
}

const char* CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kSend:
      return "send";
    case CollectiveKind::kReceive:
      return "recv";
    case CollectiveKind::kExchange:
      return "exchange";
  }
  return "?";
}

const char* StreamName(StepStream stream) {
  switch (stream) {
    case StepStream::kCompute:
      return "compute";
    case StepStream::kDataParallel:
      return "dp_stream";
    case StepStream::kTensorParallel:
      return "tp_stream";
    case StepStream::kContextRing:
      return "ring_stream";
  }
  return "?";
}

const char* MaskName(RingMask mask) {
  switch (mask) {
    case RingMask::kCausal:
      return "causal";
    case RingMask::kNone:
      return "none";
    case RingMask::kCausalBottomRight:
      return "causal_br";
  }
  return "?";
}

const char* ExchangeName(AttentionExchange exchange) {
  switch (exchange) {
    case AttentionExchange::kNone:
      return "local";
    case AttentionExchange::kRing:
      return "ring";
    case AttentionExchange::kAllGather:
      return "all_gather";
  }
  return "?";
}

// Mirrors StageRunner (worker/cuda/stage_runner.cc) and the classes it calls (Fp8Linears,
// TensorParallelOverlap, Attention, DataParallelSync, Fp8Parameters) decision for decision;
// each method names the one it follows.
class Builder {
 public:
  Builder(const ProbeSpec& spec, const FootprintPlan& footprint, int64_t rank,
          int64_t micro_batches)
      : spec_(spec),
        footprint_(footprint),
        shapes_(footprint.shapes()),
        rank_(rank),
        stage_(spec.layout().CoordinatesOf(rank).pp),
        fp8_(footprint.fp8()),
        fp32_gradients_(spec.training().fp32_gradients()),
        reduce_gradients_(spec.layout().GroupSize(RankGroup::kDataContext) > 1 &&
                          !DataParallelModelled(spec)),
        shard_count_(spec.training().distributed_optimizer()
                         ? footprint.parameters().padded_elements /
                               footprint.parameters().shard_elements
                         : 1),
        overlap_(spec.data_parallel_overlap()),
        overlapped_(reduce_gradients_ &&
                    (overlap_.overlap_grad_reduce || overlap_.overlap_param_gather)),
        chunks_(ChunkUnitsOf(footprint.stage_layers())),
        weights_cast_(footprint.stage_layers().chunk_layers.size(), false) {
    plan_.rank = rank;
    plan_.stage = stage_;
    plan_.micro_batches = micro_batches;
    const RankLayout& layout = spec.layout();
    schedule_ =
        PipelineScheduleOf(layout.pp(), spec.config().virtual_pipeline(), micro_batches, stage_);
    if (overlapped_) {
      data_parallel_plan_ = DataParallelPlanOf(
          footprint.parameters(), footprint.stage_layers(), spec.model().tied_embeddings(),
          schedule_, stage_, layout.pp(), layout.GroupSize(RankGroup::kDataContext), overlap_);
    }
    optimizer_buckets_ =
        overlapped_ ? data_parallel_plan_.buckets : RegionBuckets(footprint.parameters());
  }

  absl::StatusOr<StepPlan> Build() {
    if (spec_.tp_comm_overlap()) {
      PT_ASSIGN_OR_RETURN(tp_overlap_,
                          TensorParallelOverlapPlanOf(shapes_.tensor_parallel, shapes_.hidden));
    }
    if (shapes_.context_parallel > 1 && spec_.cp_comm_type() == CpCommType::kP2p) {
      PT_ASSIGN_OR_RETURN(
          ring_, ContextRingSteps(shapes_.context_parallel, spec_.layout().CoordinatesOf(rank_).cp,
                                  shapes_.sequence_per_rank));
    }
    Step();
    // DataParallelSync::Finish's check: a step at a point the runner never reaches.
    if (next_plan_step_ != data_parallel_plan_.steps.size()) {
      return absl::InternalError(absl::StrCat("data-parallel plan step ", next_plan_step_, " of ",
                                              data_parallel_plan_.steps.size(),
                                              " was never reached"));
    }
    return std::move(plan_);
  }

 private:
  ElementType GradientType() const {
    return fp32_gradients_ ? ElementType::kFloat32 : ElementType::kBf16;
  }
  int64_t AmaxGroupSize() const {
    const RankLayout& layout = spec_.layout();
    return layout.tp() * layout.cp() * layout.dp();
  }

  void Emit(StepOpDetail detail) { plan_.ops.push_back({context_, std::move(detail)}); }
  void Elementwise(std::string what, int64_t elements) {
    Emit(ElementwiseOp{std::move(what), elements});
  }
  void Collective(CollectiveFamily family, CollectiveKind kind, ElementType type, int64_t bytes,
                  StepStream stream, std::string what) {
    CollectiveOp op;
    op.family = family;
    op.kind = kind;
    op.type = type;
    op.bytes = bytes;
    op.stream = stream;
    op.what = std::move(what);
    Emit(std::move(op));
  }
  void Gemm(LinearWeight weight, GemmRole role, const LinearShape& shape, ElementType a,
            ElementType b, ElementType c, int64_t part = 0, int64_t parts = 1) {
    GemmOp op;
    op.weight = weight;
    op.role = role;
    switch (role) {
      case GemmRole::kForward:
        op.m = shape.rows / parts;
        op.n = shape.outputs;
        op.k = shape.inputs;
        break;
      case GemmRole::kInputGradient:
        op.m = shape.rows / parts;
        op.n = shape.inputs;
        op.k = shape.outputs;
        break;
      case GemmRole::kWeightGradient:
        op.m = shape.outputs;
        op.n = shape.inputs;
        op.k = shape.rows;
        break;
    }
    op.a = a;
    op.b = b;
    op.c = c;
    op.part = part;
    op.parts = parts;
    Emit(op);
  }

  const LinearShape& ShapeOf(LinearWeight weight) const {
    switch (weight) {
      case LinearWeight::kQkv:
        return shapes_.qkv;
      case LinearWeight::kAttentionOutput:
        return shapes_.attention_output;
      case LinearWeight::kGateUp:
        return shapes_.gate_up;
      case LinearWeight::kDown:
        return shapes_.down;
      case LinearWeight::kLmHead:
        return shapes_.lm_head;
    }
    return shapes_.qkv;
  }

  // DataParallelSync::Reach and Issue.
  void Reach(PlanPointKind kind, int64_t unit = 0) {
    if (!overlapped_) return;
    const PlanPoint point = PlanPointOf(kind, pass_, unit);
    const std::vector<PlanStep>& steps = data_parallel_plan_.steps;
    while (next_plan_step_ < steps.size() && steps[next_plan_step_].point == point) {
      const PlanStep& step = steps[next_plan_step_++];
      const ParameterBucket& bucket = optimizer_buckets_[step.bucket];
      const std::string name = absl::StrCat("bucket ", step.bucket);
      switch (step.operation) {
        case PlanOperation::kDispatchGather:
          Collective(CollectiveFamily::kData, CollectiveKind::kAllGather, ElementType::kUint8,
                     GatheredParameterBytes(bucket), StepStream::kDataParallel,
                     absl::StrCat(name, " parameters"));
          break;
        case PlanOperation::kWaitGather:
          Emit(WaitOp{StepStream::kDataParallel, absl::StrCat(name, " parameters")});
          break;
        case PlanOperation::kDispatchReduce:
          Collective(
              CollectiveFamily::kData,
              shard_count_ == 1 ? CollectiveKind::kAllReduce : CollectiveKind::kReduceScatter,
              GradientType(), (bucket.end - bucket.start) * BytesOf(GradientType()),
              StepStream::kDataParallel, absl::StrCat(name, " gradients"));
          break;
        case PlanOperation::kWaitReductions:
          Emit(WaitOp{StepStream::kDataParallel, "gradient reductions"});
          break;
      }
    }
  }

  // data_parallel_sync.cc AllGatherParameters: every shard of the bucket, in the bytes of its
  // region's weights.
  int64_t GatheredParameterBytes(const ParameterBucket& bucket) const {
    return (bucket.end - bucket.start) *
           footprint_.parameters().RegionOf(bucket.start).bytes_per_element;
  }

  // StageRunner::SlotOf / ReleaseSlot, counting the slots held.
  int64_t SlotOf(int64_t chunk, int64_t micro_batch) {
    auto [it, added] = slots_.try_emplace({chunk, micro_batch}, -1);
    if (added) {
      if (free_slots_.empty()) {
        it->second = next_slot_++;
      } else {
        it->second = free_slots_.back();
        free_slots_.pop_back();
      }
      plan_.most_activation_slots =
          std::max<int64_t>(plan_.most_activation_slots, static_cast<int64_t>(slots_.size()));
    }
    return it->second;
  }
  void ReleaseSlot(int64_t chunk, int64_t micro_batch) {
    auto it = slots_.find({chunk, micro_batch});
    free_slots_.push_back(it->second);
    slots_.erase(it);
  }
  void HoldLossSlot(int64_t micro_batch) {
    loss_slots_.insert(micro_batch);
    plan_.most_loss_slots =
        std::max<int64_t>(plan_.most_loss_slots, static_cast<int64_t>(loss_slots_.size()));
  }

  // StageRunner::Step.
  void Step() {
    Elementwise("zero gradients", footprint_.parameters().padded_elements);
    pass_ = 0;
    Reach(PlanPointKind::kStepStart);
    for (const ScheduleStep& step : schedule_) RunScheduleStep(step);
    context_ = StepOpContext();
    Reach(PlanPointKind::kStepEnd);
    OptimizerStep();
  }

  // StageRunner::RunScheduleStep.
  void RunScheduleStep(const ScheduleStep& step) {
    context_ = StepOpContext();
    context_.pass = pass_;
    for (const Transfer& t : step.transfers) {
      const bool send =
          t.kind == TransferKind::kSendActivation || t.kind == TransferKind::kSendGradient;
      const bool activation =
          t.kind == TransferKind::kSendActivation || t.kind == TransferKind::kReceiveActivation;
      if (t.kind == TransferKind::kReceiveActivation) SlotOf(t.chunk, t.micro_batch);
      CollectiveOp op;
      op.family = CollectiveFamily::kPipeline;
      op.kind = send ? CollectiveKind::kSend : CollectiveKind::kReceive;
      op.bytes = PipelineBoundaryBytes(shapes_);
      op.what = activation ? "activation" : "gradient";
      op.peer = t.peer_stage;
      op.chunk = t.chunk;
      op.micro_batch = t.micro_batch;
      Emit(std::move(op));
    }
    if (!step.pass.has_value()) return;
    const PipelinePass& pass = *step.pass;
    context_.chunk = pass.chunk;
    context_.micro_batch = pass.micro_batch;
    context_.slot = SlotOf(pass.chunk, pass.micro_batch);
    Reach(PlanPointKind::kBeforePass);
    if (pass.direction == PassDirection::kForward) {
      Forward(pass);
    } else {
      Backward(pass);
    }
    context_.layer = -1;
    context_.recompute = false;
    Reach(PlanPointKind::kAfterPass);
    ++pass_;
  }

  bool IsLossChunk(int64_t chunk) const {
    const StageLayers& stage = footprint_.stage_layers();
    return stage.lm_head && chunk == static_cast<int64_t>(stage.chunk_layers.size()) - 1;
  }

  // StageRunner::Forward.
  void Forward(const PipelinePass& pass) {
    const StageLayers& stage = footprint_.stage_layers();
    const bool embedding = stage.embedding && pass.chunk == 0;
    const bool loss = IsLossChunk(pass.chunk);
    if (loss) HoldLossSlot(pass.micro_batch);
    const int64_t layers = stage.chunk_layers[pass.chunk];
    const ChunkUnits& units = chunks_[pass.chunk];
    if (embedding) {
      Reach(PlanPointKind::kBeforeForward, units.Embedding());
      EmbeddingForward();
    }
    if (layers == 0 && !embedding) {
      Elementwise("copy chunk of no layers", shapes_.residual_tokens * shapes_.hidden);
    }
    for (int64_t l = 0; l < layers; ++l) {
      Reach(PlanPointKind::kBeforeForward, units.Layer(l));
      LayerForward(pass.chunk, l, /*recompute=*/false);
    }
    context_.layer = -1;
    if (fp8_ && layers > 0) {
      weights_cast_[pass.chunk] = true;
      EndFp8Pass(footprint_.fp8_state().forward[pass.chunk], "forward");
    }
    if (loss) {
      Reach(PlanPointKind::kBeforeForward, units.Loss());
      NormLinearForward(LinearWeight::kLmHead, /*layer=*/false, /*fp8=*/false,
                        ElementType::kFloat32);
    }
  }

  // StageRunner::Backward.
  void Backward(const PipelinePass& pass) {
    const StageLayers& stage = footprint_.stage_layers();
    const bool embedding = stage.embedding && pass.chunk == 0;
    const ChunkUnits& units = chunks_[pass.chunk];
    bool received_gradient_pending = true;
    if (IsLossChunk(pass.chunk)) {
      LossBackward();
      Reach(PlanPointKind::kAfterBackward, units.Loss());
      loss_slots_.erase(pass.micro_batch);
      received_gradient_pending = false;
    }
    const int64_t layers = stage.chunk_layers[pass.chunk];
    for (int64_t l = layers - 1; l >= 0; --l) {
      if (footprint_.full_recompute()) LayerForward(pass.chunk, l, /*recompute=*/true);
      LayerBackward(pass.chunk, l);
      Reach(PlanPointKind::kAfterBackward, units.Layer(l));
      received_gradient_pending = false;
    }
    context_.layer = -1;
    if (fp8_ && layers > 0) EndFp8Pass(footprint_.fp8_state().backward[pass.chunk], "backward");
    if (received_gradient_pending) {
      Elementwise("copy chunk of no layers", shapes_.residual_tokens * shapes_.hidden);
    }
    if (embedding) {
      GatherResidual("embedding output gradient");
      Elementwise("embedding backward", shapes_.tokens * shapes_.hidden);
      Reach(PlanPointKind::kAfterBackward, units.Embedding());
    }
    ReleaseSlot(pass.chunk, pass.micro_batch);
  }

  // StageRunner::EmbeddingForward.
  void EmbeddingForward() {
    Elementwise("embedding lookup", shapes_.tokens * shapes_.hidden);
    ReduceResidual("embedding");
    Elementwise("copy embedding output", shapes_.residual_tokens * shapes_.hidden);
  }

  // StageRunner::LossBackward: Megatron-LM's vocab_parallel_cross_entropy.
  void LossBackward() {
    Elementwise("logits row max", shapes_.tokens * shapes_.vocab);
    if (shapes_.tensor_parallel > 1) {
      Collective(CollectiveFamily::kTensor, CollectiveKind::kAllReduce, ElementType::kFloat32,
                 shapes_.tokens * 4, StepStream::kCompute, "logits max");
    }
    Elementwise("logits sum exp", shapes_.tokens * shapes_.vocab);
    if (shapes_.tensor_parallel > 1) {
      Collective(CollectiveFamily::kTensor, CollectiveKind::kAllReduce, ElementType::kFloat32,
                 shapes_.tokens * 4, StepStream::kCompute, "logits sum");
    }
    Elementwise("cross entropy backward", shapes_.tokens * shapes_.vocab);
    NormLinearBackward(LinearWeight::kLmHead, /*layer=*/false, /*fp8=*/false);
  }

  // StageRunner::GatherResidual.
  void GatherResidual(const std::string& what) {
    if (!shapes_.sequence_parallel) return;
    Collective(CollectiveFamily::kTensor, CollectiveKind::kAllGather, ElementType::kBf16,
               TensorParallelActivationBytes(shapes_), StepStream::kCompute, what);
  }

  // StageRunner::ReduceResidual.
  void ReduceResidual(const std::string& what) {
    if (shapes_.tensor_parallel == 1) return;
    Collective(
        CollectiveFamily::kTensor,
        shapes_.sequence_parallel ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce,
        ElementType::kBf16, TensorParallelActivationBytes(shapes_), StepStream::kCompute, what);
  }

  // StageRunner::LayerForward.
  void LayerForward(int64_t chunk, int64_t layer_in_chunk, bool recompute) {
    context_.layer = footprint_.parameters().first_layer[chunk] + layer_in_chunk;
    context_.recompute = recompute;
    NormLinearForward(LinearWeight::kQkv, /*layer=*/true, fp8_, ElementType::kBf16);
    AttentionForward();
    RowLinearForward(LinearWeight::kAttentionOutput);
    NormLinearForward(LinearWeight::kGateUp, /*layer=*/true, fp8_, ElementType::kBf16);
    Elementwise("swiglu", shapes_.tokens * shapes_.ffn);
    RowLinearForward(LinearWeight::kDown);
  }

  // StageRunner::LayerBackward.
  void LayerBackward(int64_t chunk, int64_t layer_in_chunk) {
    context_.layer = footprint_.parameters().first_layer[chunk] + layer_in_chunk;
    context_.recompute = false;
    RowLinearBackward(LinearWeight::kDown);
    Elementwise("swiglu backward", shapes_.tokens * shapes_.ffn);
    NormLinearBackward(LinearWeight::kGateUp, /*layer=*/true, fp8_);
    RowLinearBackward(LinearWeight::kAttentionOutput);
    AttentionBackward();
    NormLinearBackward(LinearWeight::kQkv, /*layer=*/true, fp8_);
  }

  bool Overlapped(bool layer) const { return layer && tp_overlap_.has_value(); }

  // Fp8Linears::CastWeight.
  void CastWeight(LinearWeight weight) {
    if (weights_cast_[context_.chunk]) return;
    const LinearShape& shape = ShapeOf(weight);
    const bool fp8_parameters = footprint_.fp8_state().fp8_parameters;
    Emit(CastOp{weight, fp8_parameters ? "weight transpose" : "weight and transpose", shape.outputs,
                shape.inputs, ElementType::kE4M3});
  }

  // StageRunner::NormLinearForward and Fp8Linears::ColumnForward.
  void NormLinearForward(LinearWeight weight, bool layer, bool fp8, ElementType out) {
    const LinearShape& shape = ShapeOf(weight);
    Elementwise("rmsnorm", shapes_.residual_tokens * shapes_.hidden);
    if (fp8) {
      CastWeight(weight);
      const ElementType e4m3 = ElementType::kE4M3;
      if (shapes_.sequence_parallel) {
        Emit(CastOp{weight, "input", shapes_.residual_tokens, shape.inputs, e4m3});
        if (Overlapped(layer)) {
          RingGemm(weight, GemmRole::kForward, e4m3, e4m3, "fp8 input");
          return;
        }
        Collective(CollectiveFamily::kTensor, CollectiveKind::kAllGather, ElementType::kUint8,
                   shape.rows * shape.inputs, StepStream::kCompute,
                   absl::StrCat(LinearWeightName(weight), " fp8 input"));
      } else {
        Emit(CastOp{weight, "input and transpose", shape.rows, shape.inputs, e4m3});
      }
      Gemm(weight, GemmRole::kForward, shape, e4m3, e4m3, out);
      return;
    }
    if (Overlapped(layer)) {
      RingGemm(weight, GemmRole::kForward, ElementType::kBf16, ElementType::kBf16, "input");
      return;
    }
    GatherResidual(absl::StrCat(LinearWeightName(weight), " input"));
    Gemm(weight, GemmRole::kForward, shape, ElementType::kBf16, ElementType::kBf16, out);
  }

  // TensorParallelOverlap::AllGatherGemm: tp GEMMs of the rank's rows each, tp - 1 ring
  // exchanges of one rank's rows beside them.
  void RingGemm(LinearWeight weight, GemmRole role, ElementType a, ElementType b,
                const std::string& what) {
    const LinearShape& shape = ShapeOf(weight);
    const int64_t tp = shapes_.tensor_parallel;
    const int64_t columns = role == GemmRole::kForward ? shape.inputs : shape.outputs;
    const int64_t chunk_bytes = shapes_.residual_tokens * columns * BytesOf(a);
    const std::string name = absl::StrCat(LinearWeightName(weight), " ", what);
    for (const RingExchangeStep& step :
         RingExchangeOrder(tp, spec_.layout().CoordinatesOf(rank_).tp)) {
      if (step.send_chunk >= 0) {
        Collective(CollectiveFamily::kTensor, CollectiveKind::kExchange, ElementType::kUint8,
                   chunk_bytes, StepStream::kTensorParallel,
                   absl::StrCat(name, " chunk ", step.send_chunk, " for ", step.receive_chunk));
      }
      Gemm(weight, role, shape, a, b, ElementType::kBf16, step.compute_chunk, tp);
      if (step.send_chunk >= 0) Emit(WaitOp{StepStream::kTensorParallel, name});
    }
  }

  // TensorParallelOverlap::GemmReduceScatter: the forward GEMM in column chunks, each
  // reduce-scattered as it is done.
  void PipelinedGemm(LinearWeight weight, ElementType a, ElementType b) {
    const LinearShape& shape = ShapeOf(weight);
    const int64_t splits = tp_overlap_->pipeline_splits;
    for (const ColumnChunk& columns : PipelineChunks(shape.outputs, splits)) {
      GemmOp op;
      op.weight = weight;
      op.role = GemmRole::kForward;
      op.m = shape.rows;
      op.n = columns.count;
      op.k = shape.inputs;
      op.a = a;
      op.b = b;
      op.part = columns.first / columns.count;
      op.parts = splits;
      Emit(op);
      Collective(CollectiveFamily::kTensor, CollectiveKind::kReduceScatter, ElementType::kBf16,
                 shape.rows * columns.count * 2, StepStream::kTensorParallel,
                 absl::StrCat(LinearWeightName(weight), " output columns ", columns.first));
    }
    Emit(WaitOp{StepStream::kTensorParallel, absl::StrCat(LinearWeightName(weight), " output")});
  }

  // StageRunner::RowLinearForward and Fp8Linears::RowForward(Overlapped).
  void RowLinearForward(LinearWeight weight) {
    const LinearShape& shape = ShapeOf(weight);
    const ElementType in = fp8_ ? ElementType::kE4M3 : ElementType::kBf16;
    if (fp8_) {
      CastWeight(weight);
      Emit(CastOp{weight, "input and transpose", shape.rows, shape.inputs, ElementType::kE4M3});
    }
    if (tp_overlap_.has_value()) {
      PipelinedGemm(weight, in, in);
    } else {
      Gemm(weight, GemmRole::kForward, shape, in, in, ElementType::kBf16);
      ReduceResidual(absl::StrCat(LinearWeightName(weight), " output"));
    }
    Elementwise("residual add", shapes_.residual_tokens * shapes_.hidden);
  }

  // StageRunner::NormLinearBackward, with Fp8Linears::Backward / ColumnBackwardOverlapped and
  // TensorParallelOverlap::BulkBackward.
  void NormLinearBackward(LinearWeight weight, bool layer, bool fp8) {
    const LinearShape& shape = ShapeOf(weight);
    const NormLinearBackwardPath path = NormLinearBackwardPathOf(fp8, Overlapped(layer));
    plan_.norm_linear_backward_paths.push_back(path);
    const std::string name = LinearWeightName(weight);
    const ElementType e4m3 = ElementType::kE4M3;
    const ElementType e5m2 = ElementType::kE5M2;
    const ElementType gradient = GradientType();
    switch (path) {
      case NormLinearBackwardPath::kFp8Overlapped:
        Emit(CastOp{weight, "output gradient and transpose", shape.rows, shape.outputs, e5m2});
        BulkBackward(weight, e5m2, e4m3, ElementType::kUint8, 1, /*transpose=*/true);
        break;
      case NormLinearBackwardPath::kFp8:
        Fp8Backward(weight);
        ReduceResidual(absl::StrCat(name, " input gradient"));
        break;
      case NormLinearBackwardPath::kBf16Overlapped:
        BulkBackward(weight, ElementType::kBf16, ElementType::kBf16, ElementType::kBf16, 2,
                     /*transpose=*/false);
        break;
      case NormLinearBackwardPath::kBf16:
        GatherResidual(absl::StrCat(name, " input again"));
        Gemm(weight, GemmRole::kWeightGradient, shape, ElementType::kBf16, ElementType::kBf16,
             gradient);
        Gemm(weight, GemmRole::kInputGradient, shape, ElementType::kBf16, ElementType::kBf16,
             ElementType::kBf16);
        ReduceResidual(absl::StrCat(name, " input gradient"));
        break;
    }
    Elementwise("rmsnorm weight gradient", shapes_.residual_tokens * shapes_.hidden);
    Elementwise("rmsnorm backward", shapes_.residual_tokens * shapes_.hidden);
  }

  // Fp8Linears::Backward: from the (gathered or whole) output gradient; a column-parallel
  // linear's fp8 input gathered again with sequence parallelism.
  void Fp8Backward(LinearWeight weight) {
    const LinearShape& shape = ShapeOf(weight);
    const ElementType e4m3 = ElementType::kE4M3;
    const ElementType e5m2 = ElementType::kE5M2;
    Emit(CastOp{weight, "output gradient and transpose", shape.rows, shape.outputs, e5m2});
    const bool column = weight == LinearWeight::kQkv || weight == LinearWeight::kGateUp;
    if (column && shapes_.sequence_parallel) {
      Collective(CollectiveFamily::kTensor, CollectiveKind::kAllGather, ElementType::kUint8,
                 shape.rows * shape.inputs, StepStream::kCompute,
                 absl::StrCat(LinearWeightName(weight), " fp8 input again"));
      Emit(CastOp{weight, "gathered input transpose", shape.rows, shape.inputs, e4m3});
    }
    Gemm(weight, GemmRole::kInputGradient, shape, e5m2, e4m3, ElementType::kBf16);
    Gemm(weight, GemmRole::kWeightGradient, shape, e5m2, e4m3, GradientType());
  }

  // TensorParallelOverlap::BulkBackward: the input gathered again beside the input gradient,
  // which is reduce-scattered beside the weight gradient.
  void BulkBackward(LinearWeight weight, ElementType gradient, ElementType input,
                    ElementType gather_type, int64_t input_bytes, bool transpose) {
    const LinearShape& shape = ShapeOf(weight);
    const std::string name = LinearWeightName(weight);
    Collective(CollectiveFamily::kTensor, CollectiveKind::kAllGather, gather_type,
               shape.rows * shape.inputs * input_bytes, StepStream::kTensorParallel,
               absl::StrCat(name, " input again"));
    Gemm(weight, GemmRole::kInputGradient, shape, gradient, input, ElementType::kBf16);
    Collective(CollectiveFamily::kTensor, CollectiveKind::kReduceScatter, ElementType::kBf16,
               shape.rows * shape.inputs * 2, StepStream::kTensorParallel,
               absl::StrCat(name, " input gradient"));
    Emit(WaitOp{StepStream::kTensorParallel, absl::StrCat(name, " input again")});
    if (transpose) {
      Emit(CastOp{weight, "gathered input transpose", shape.rows, shape.inputs, input});
    }
    Gemm(weight, GemmRole::kWeightGradient, shape, gradient, input, GradientType());
    Emit(WaitOp{StepStream::kTensorParallel, absl::StrCat(name, " input gradient")});
  }

  // StageRunner::RowLinearBackward, with Fp8Linears::RowBackwardOverlapped,
  // RowBackwardSequenceParallel and Backward.
  void RowLinearBackward(LinearWeight weight) {
    const LinearShape& shape = ShapeOf(weight);
    const RowLinearBackwardPath path =
        RowLinearBackwardPathOf(fp8_, tp_overlap_.has_value(), shapes_.sequence_parallel);
    plan_.row_linear_backward_paths.push_back(path);
    const std::string name = LinearWeightName(weight);
    const ElementType e4m3 = ElementType::kE4M3;
    const ElementType e5m2 = ElementType::kE5M2;
    const ElementType bf16 = ElementType::kBf16;
    switch (path) {
      case RowLinearBackwardPath::kFp8Overlapped:
        Emit(CastOp{weight, "output gradient rows", shapes_.residual_tokens, shape.outputs, e5m2});
        RingGemm(weight, GemmRole::kInputGradient, e5m2, e4m3, "fp8 output gradient");
        Emit(CastOp{weight, "gathered output gradient transpose", shape.rows, shape.outputs, e5m2});
        Gemm(weight, GemmRole::kWeightGradient, shape, e5m2, e4m3, GradientType());
        break;
      case RowLinearBackwardPath::kBf16Overlapped:
        RingGemm(weight, GemmRole::kInputGradient, bf16, bf16, "output gradient");
        Gemm(weight, GemmRole::kWeightGradient, shape, bf16, bf16, GradientType());
        break;
      case RowLinearBackwardPath::kFp8SequenceParallel:
        Emit(CastOp{weight, "output gradient rows", shapes_.residual_tokens, shape.outputs, e5m2});
        Collective(CollectiveFamily::kTensor, CollectiveKind::kAllGather, ElementType::kUint8,
                   shape.rows * shape.outputs, StepStream::kCompute,
                   absl::StrCat(name, " fp8 output gradient"));
        Gemm(weight, GemmRole::kInputGradient, shape, e5m2, e4m3, bf16);
        Emit(CastOp{weight, "gathered output gradient transpose", shape.rows, shape.outputs, e5m2});
        Gemm(weight, GemmRole::kWeightGradient, shape, e5m2, e4m3, GradientType());
        break;
      case RowLinearBackwardPath::kFp8:
        GatherResidual(absl::StrCat(name, " output gradient"));
        Fp8Backward(weight);
        break;
      case RowLinearBackwardPath::kBf16:
        GatherResidual(absl::StrCat(name, " output gradient"));
        Gemm(weight, GemmRole::kInputGradient, shape, bf16, bf16, bf16);
        Gemm(weight, GemmRole::kWeightGradient, shape, bf16, bf16, GradientType());
        break;
    }
  }

  // Attention::Forward: the rotary embedding and the split, then the products over the keys
  // and values the exchange brings.
  void AttentionForward() { AttentionPass(/*backward=*/false); }
  void AttentionBackward() { AttentionPass(/*backward=*/true); }

  void AttentionPass(bool backward) {
    const int64_t c = shapes_.context_parallel;
    const int64_t n = shapes_.sequence_per_rank;
    // One rank's keys and values: [2, b, kv_heads, s/c, d] bf16.
    const int64_t kv_values = 2 * shapes_.micro_batch * shapes_.kv_heads * n * shapes_.head_dim;
    AttentionOp op;
    op.backward = backward;
    op.batch = shapes_.micro_batch;
    op.heads = shapes_.query_heads;
    op.kv_heads = shapes_.kv_heads;
    op.head_dim = shapes_.head_dim;
    op.queries = n;
    op.keys = shapes_.sequence;
    if (!backward) Elementwise("rope and split", shapes_.qkv.rows * shapes_.qkv.outputs);
    if (c == 1) {
      op.products.push_back({0, n, 0, n, RingMask::kCausal, false});
      Emit(std::move(op));
    } else if (!ring_.empty()) {
      op.exchange = AttentionExchange::kRing;
      for (const RingStep& step : ring_) {
        for (const RingProduct& product : step.products) op.products.push_back(product);
      }
      RingExchanges(backward, kv_values);
      Emit(std::move(op));
    } else {
      op.exchange = AttentionExchange::kAllGather;
      // attention_graph.h AllGatherProducts: each query half against every position up to
      // its last, causal aligned bottom-right.
      const int64_t rank = spec_.layout().CoordinatesOf(rank_).cp;
      const int64_t half = n / 2;
      op.products.push_back({0, half, 0, (rank + 1) * half, RingMask::kCausalBottomRight, true});
      op.products.push_back(
          {half, half, 0, (2 * c - rank) * half, RingMask::kCausalBottomRight, true});
      Collective(CollectiveFamily::kContext, CollectiveKind::kAllGather, ElementType::kBf16,
                 c * kv_values * 2, StepStream::kCompute, "keys and values");
      Emit(std::move(op));
      if (backward) {
        Collective(CollectiveFamily::kContext, CollectiveKind::kReduceScatter,
                   ElementType::kFloat32, c * kv_values * 4, StepStream::kCompute,
                   "key and value gradients");
      }
    }
    if (!backward)
      Elementwise("heads to tokens", shapes_.tokens * shapes_.query_heads * shapes_.head_dim);
  }

  // Attention::RingForward / RingBackward: the forward passes each block on c - 1 times; the
  // backward as well, and each block's fp32 gradients c times (one step behind their block,
  // and home after the last step).
  void RingExchanges(bool backward, int64_t kv_values) {
    const int64_t c = shapes_.context_parallel;
    auto exchange = [&](ElementType type, int64_t bytes, const std::string& what) {
      Collective(CollectiveFamily::kContext, CollectiveKind::kExchange, type, bytes,
                 StepStream::kContextRing, what);
    };
    for (int64_t i = 0; i < c; ++i) {
      if (i + 1 < c) exchange(ElementType::kBf16, kv_values * 2, absl::StrCat("kv block step ", i));
      if (backward && i > 0) {
        exchange(ElementType::kFloat32, kv_values * 4, absl::StrCat("kv gradients step ", i));
      }
    }
    if (backward) exchange(ElementType::kFloat32, kv_values * 4, "kv gradients home");
  }

  // Fp8Linears::EndPass.
  void EndFp8Pass(const Fp8ScalingGroup& group, const std::string& what) {
    if (group.tensors == 0) return;
    if (AmaxGroupSize() > 1) {
      Collective(CollectiveFamily::kFp8Amax, CollectiveKind::kAllReduce, ElementType::kFloat32,
                 group.tensors * 4, StepStream::kCompute, absl::StrCat(what, " amaxes"));
    }
    Emit(AmaxUpdateOp{what, group.tensors});
  }

  // StageRunner::OptimizerStep.
  void OptimizerStep() {
    const bool distributed = spec_.training().distributed_optimizer();
    const int64_t shard_index = spec_.layout().GroupRank(RankGroup::kDataContext, rank_);
    if (reduce_gradients_ && !overlapped_) {
      for (size_t i = 0; i < optimizer_buckets_.size(); ++i) {
        const ParameterBucket& bucket = optimizer_buckets_[i];
        Collective(CollectiveFamily::kData,
                   distributed ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce,
                   GradientType(), (bucket.end - bucket.start) * BytesOf(GradientType()),
                   StepStream::kCompute, absl::StrCat("bucket ", i, " gradients"));
      }
    }
    for (size_t i = 0; i < optimizer_buckets_.size(); ++i) {
      const OptimizerShard shard =
          OptimizerShardOf(optimizer_buckets_[i], shard_count_, shard_index);
      Emit(OptimizerOp{absl::StrCat("adam bucket ", i), shard.count});
    }
    if (footprint_.fp8_state().fp8_parameters) Fp8MasterCasts(shard_index);
    if (reduce_gradients_ && distributed && !(overlapped_ && overlap_.overlap_param_gather)) {
      for (size_t i = 0; i < optimizer_buckets_.size(); ++i) {
        Collective(CollectiveFamily::kData, CollectiveKind::kAllGather, ElementType::kUint8,
                   GatheredParameterBytes(optimizer_buckets_[i]), StepStream::kCompute,
                   absl::StrCat("bucket ", i, " parameters"));
      }
    }
  }

  // Fp8Parameters::CastMasterWeights: the rank's master shards cast into the fp8 weights,
  // then every weight's amax reduced over the data x context group where the probe runs it.
  void Fp8MasterCasts(int64_t shard_index) {
    int64_t elements = 0;
    for (const ParameterBucket& bucket : optimizer_buckets_) {
      if (!footprint_.parameters().RegionOf(bucket.start).fp8) continue;
      elements += OptimizerShardOf(bucket, shard_count_, shard_index).count;
    }
    Emit(OptimizerOp{"cast master weights to fp8", elements});
    const std::vector<Fp8ScalingGroup>& groups = footprint_.fp8_state().forward;
    for (size_t chunk = 0; chunk < groups.size(); ++chunk) {
      const Fp8ScalingGroup& group = groups[chunk];
      if (group.tensors == 0) continue;
      if (reduce_gradients_) {
        Collective(CollectiveFamily::kFp8Amax, CollectiveKind::kAllReduce, ElementType::kFloat32,
                   group.tensors * 4, StepStream::kCompute,
                   absl::StrCat("chunk ", chunk, " weight amaxes"));
      }
      Elementwise(absl::StrCat("chunk ", chunk, " weight scale inverses"),
                  group.tensors / group.tensors_per_linear);
    }
  }

  const ProbeSpec& spec_;
  const FootprintPlan& footprint_;
  const ShardShapes& shapes_;
  const int64_t rank_;
  const int64_t stage_;
  const bool fp8_;
  const bool fp32_gradients_;
  const bool reduce_gradients_;
  const int64_t shard_count_;
  const OverlapOptions overlap_;
  const bool overlapped_;
  const std::vector<ChunkUnits> chunks_;
  std::vector<ScheduleStep> schedule_;
  DataParallelPlan data_parallel_plan_;
  std::vector<ParameterBucket> optimizer_buckets_;
  std::optional<TensorParallelOverlapPlan> tp_overlap_;
  std::vector<RingStep> ring_;
  std::vector<bool> weights_cast_;

  StepPlan plan_;
  StepOpContext context_;
  int64_t pass_ = 0;
  size_t next_plan_step_ = 0;
  std::map<std::pair<int64_t, int64_t>, int64_t> slots_;
  std::vector<int64_t> free_slots_;
  int64_t next_slot_ = 0;
  std::set<int64_t> loss_slots_;
};

}  // namespace

absl::StatusOr<StepPlan> StepPlanOf(const ProbeSpec& spec, const FootprintPlan& footprint,
                                    int64_t rank, int64_t micro_batches) {
  if (rank < 0 || rank >= spec.layout().world_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " is not in [0, ", spec.layout().world_size(), ")"));
  }
  if (micro_batches < 1 || micro_batches > spec.micro_batches()) {
    return absl::InvalidArgumentError(absl::StrCat("micro_batches ", micro_batches,
                                                   " is not in [1, ", spec.micro_batches(), "]"));
  }
  return Builder(spec, footprint, rank, micro_batches).Build();
}

namespace {

// Where an op runs: "step", or "p<pass> c<chunk> mb<micro-batch> s<slot> <layers>[ recompute]"
// with `layers` "L<layer>" (empty outside a layer) or a folded run's range.
std::string DescribeContext(const StepOpContext& at, const std::string& layers) {
  if (at.pass < 0) return "step";
  std::string where = absl::StrCat("p", at.pass);
  if (at.chunk >= 0) absl::StrAppend(&where, " c", at.chunk, " mb", at.micro_batch, " s", at.slot);
  if (!layers.empty()) absl::StrAppend(&where, " ", layers);
  if (at.recompute) absl::StrAppend(&where, " recompute");
  return where;
}

// The op's line without its layer: equal for the same op of two layers.
std::string DescribeOpOfAnyLayer(const StepOp& op) {
  StepOp any_layer = op;
  any_layer.context.layer = -1;
  return DescribeOp(any_layer);
}

bool SameLayerBlock(const StepOpContext& a, const StepOpContext& b) {
  return a.pass == b.pass && a.chunk == b.chunk && a.micro_batch == b.micro_batch &&
         a.slot == b.slot && a.recompute == b.recompute && a.layer == b.layer;
}

}  // namespace

std::vector<std::string> DescribeSteps(const StepPlan& plan) {
  // Blocks of consecutive ops of one layer (or single ops outside a layer), each with its
  // lines without the layer.
  struct Block {
    size_t first = 0;
    size_t end = 0;
    std::vector<std::string> any_layer;
  };
  std::vector<Block> blocks;
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    const StepOpContext& at = plan.ops[i].context;
    if (blocks.empty() || at.layer < 0 || plan.ops[blocks.back().first].context.layer < 0 ||
        !SameLayerBlock(plan.ops[blocks.back().first].context, at)) {
      blocks.push_back({i, i, {}});
    }
    blocks.back().end = i + 1;
    blocks.back().any_layer.push_back(DescribeOpOfAnyLayer(plan.ops[i]));
  }
  std::vector<std::string> lines;
  for (size_t b = 0; b < blocks.size();) {
    const Block& block = blocks[b];
    for (size_t i = block.first; i < block.end; ++i) lines.push_back(DescribeOp(plan.ops[i]));
    // The blocks after it that repeat it in the same pass, chunk, micro-batch and slot.
    const StepOpContext& at = plan.ops[block.first].context;
    size_t next = b + 1;
    while (at.layer >= 0 && next < blocks.size() && blocks[next].any_layer == block.any_layer) {
      StepOpContext other = plan.ops[blocks[next].first].context;
      other.layer = at.layer;
      if (!SameLayerBlock(other, at)) break;
      ++next;
    }
    if (next > b + 1) {
      const int64_t first = plan.ops[blocks[b + 1].first].context.layer;
      const int64_t last = plan.ops[blocks[next - 1].first].context.layer;
      const size_t ops = block.end - block.first;
      lines.push_back(absl::StrCat(
          DescribeContext(
              at, first == last ? absl::StrCat("L", first) : absl::StrCat("L", first, "..L", last)),
          ": as L", at.layer, " (", ops, ops == 1 ? " op" : " ops", next > b + 2 ? " each)" : ")"));
    }
    b = next;
  }
  return lines;
}

std::string DescribeOp(const StepOp& op) {
  const StepOpContext& at = op.context;
  const std::string where =
      DescribeContext(at, at.layer >= 0 ? absl::StrCat("L", at.layer) : std::string());
  struct Visitor {
    std::string operator()(const GemmOp& g) const {
      std::string line =
          absl::StrCat("gemm ", LinearWeightName(g.weight), " ", GemmRoleName(g.role), " m", g.m,
                       " n", g.n, " k", g.k, " ", ElementTypeName(g.a), "x", ElementTypeName(g.b),
                       "->", ElementTypeName(g.c));
      if (g.parts > 1) absl::StrAppend(&line, " part ", g.part, "/", g.parts);
      return line;
    }
    std::string operator()(const AttentionOp& a) const {
      std::vector<std::string> products;
      for (const RingProduct& p : a.products) {
        products.push_back(absl::StrCat("q", p.first_query, "+", p.queries, ":k", p.first_key, "+",
                                        p.keys, ":", MaskName(p.mask)));
      }
      return absl::StrCat("attention ", a.backward ? "backward" : "forward", " b", a.batch, " h",
                          a.heads, " kv", a.kv_heads, " d", a.head_dim, " q", a.queries, " s",
                          a.keys, " ", ExchangeName(a.exchange), " [", absl::StrJoin(products, " "),
                          "]");
    }
    std::string operator()(const CollectiveOp& c) const {
      std::string line = absl::StrCat(CollectiveFamilyName(c.family), " ",
                                      CollectiveKindName(c.kind), " ", ElementTypeName(c.type), " ",
                                      c.bytes, "B ", StreamName(c.stream), " ", c.what);
      if (c.peer >= 0) {
        absl::StrAppend(&line, " peer ", c.peer, " c", c.chunk, " mb", c.micro_batch);
      }
      return line;
    }
    std::string operator()(const CastOp& c) const {
      return absl::StrCat("cast ", LinearWeightName(c.weight), " ", c.what, " ", c.rows, "x",
                          c.columns, "->", ElementTypeName(c.to));
    }
    std::string operator()(const AmaxUpdateOp& a) const {
      return absl::StrCat("amax update ", a.what, " ", a.tensors, " tensors");
    }
    std::string operator()(const OptimizerOp& o) const {
      return absl::StrCat("optimizer ", o.what, " ", o.elements);
    }
    std::string operator()(const ElementwiseOp& e) const {
      return absl::StrCat("elementwise ", e.what, " ", e.elements);
    }
    std::string operator()(const WaitOp& w) const {
      return absl::StrCat("wait ", StreamName(w.stream), " ", w.what);
    }
  };
  return absl::StrCat(where, ": ", std::visit(Visitor{}, op.detail));
}

}  // namespace paratune
