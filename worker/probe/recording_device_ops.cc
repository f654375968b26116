#include "worker/probe/recording_device_ops.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/probe/fp8_state_layout.h"
#include "worker/probe/shard_shapes.h"

namespace paratune {
namespace {

LinearWeight WeightOf(Fp8Linear linear) {
  switch (linear) {
    case Fp8Linear::kQkv:
      return LinearWeight::kQkv;
    case Fp8Linear::kAttentionOutput:
      return LinearWeight::kAttentionOutput;
    case Fp8Linear::kGateUp:
      return LinearWeight::kGateUp;
    case Fp8Linear::kDown:
      return LinearWeight::kDown;
  }
  return LinearWeight::kQkv;
}

bool IsColumnParallel(LinearWeight weight) {
  return weight == LinearWeight::kQkv || weight == LinearWeight::kGateUp;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RecordingDeviceOps>> RecordingDeviceOps::Create(
    const ProbeSpec& spec, const FootprintPlan& footprint, const OptimizerLayout& optimizer,
    int64_t rank) {
  std::unique_ptr<RecordingDeviceOps> ops(new RecordingDeviceOps(spec, footprint, optimizer, rank));
  const ShardShapes& shapes = footprint.shapes();
  if (spec.tp_comm_overlap()) {
    PT_ASSIGN_OR_RETURN(ops->tp_overlap_,
                        TensorParallelOverlapPlanOf(shapes.tensor_parallel, shapes.hidden));
  }
  if (shapes.context_parallel > 1 && spec.cp_comm_type() == CpCommType::kP2p) {
    PT_ASSIGN_OR_RETURN(
        ops->ring_, ContextRingSteps(shapes.context_parallel, spec.layout().CoordinatesOf(rank).cp,
                                     shapes.sequence_per_rank));
  }
  return ops;
}

RecordingDeviceOps::RecordingDeviceOps(const ProbeSpec& spec, const FootprintPlan& footprint,
                                       const OptimizerLayout& optimizer, int64_t rank)
    : spec_(spec),
      footprint_(footprint),
      optimizer_(optimizer),
      shapes_(footprint.shapes()),
      rank_(rank),
      weights_cast_(footprint.stage_layers().chunk_layers.size(), false) {}

std::vector<StepOp> RecordingDeviceOps::TakeOps() { return std::exchange(ops_, {}); }

absl::Status RecordingDeviceOps::Operands(const std::vector<DeviceRef>& refs) {
  operands_.clear();
  for (const DeviceRef& ref : refs) {
    const int64_t bytes = footprint_.placement(ref.buffer).bytes;
    if (ref.offset < 0 || ref.offset >= bytes) {
      return absl::InternalError(absl::StrCat("the step uses byte ", ref.offset,
                                              " of probe buffer ", ProbeBufferName(ref.buffer),
                                              ", which holds ", bytes, " bytes"));
    }
    if (std::find(operands_.begin(), operands_.end(), ref.buffer) == operands_.end()) {
      operands_.push_back(ref.buffer);
    }
  }
  return absl::OkStatus();
}

void RecordingDeviceOps::WorksIn(std::vector<ProbeBuffer> buffers) {
  operands_ = std::move(buffers);
}

ElementType RecordingDeviceOps::GradientType() const {
  return GradientElementType(spec_.training().fp32_gradients());
}

const LinearShape& RecordingDeviceOps::ShapeOf(LinearWeight weight) const {
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
    case LinearWeight::kRouter:
      return footprint_.moe().router;
    case LinearWeight::kExpertFc1:
      return footprint_.moe().expert_fc1;
    case LinearWeight::kExpertFc2:
      return footprint_.moe().expert_fc2;
    case LinearWeight::kSharedFc1:
      return footprint_.moe().shared_fc1;
    case LinearWeight::kSharedFc2:
      return footprint_.moe().shared_fc2;
  }
  return shapes_.qkv;
}

void RecordingDeviceOps::Emit(StepOpDetail detail) {
  ops_.push_back({context_, std::move(detail), operands_});
}

void RecordingDeviceOps::Elementwise(std::string what, int64_t elements) {
  Emit(ElementwiseOp{std::move(what), elements});
}

void RecordingDeviceOps::Collective(CollectiveFamily family, CollectiveKind kind, ElementType type,
                                    int64_t bytes, StepStream stream, std::string what) {
  CollectiveOp op;
  op.family = family;
  op.kind = kind;
  op.type = type;
  op.bytes = bytes;
  op.stream = stream;
  op.what = std::move(what);
  Emit(std::move(op));
}

void RecordingDeviceOps::EmitGemm(LinearWeight weight, GemmRole role, const LinearShape& shape,
                                  ElementType a, ElementType b, ElementType c, int64_t part,
                                  int64_t parts) {
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

absl::Status RecordingDeviceOps::ZeroGradients() {
  WorksIn({ProbeBuffer::kGradients});
  Elementwise("zero gradients",
              footprint_.placement(ProbeBuffer::kGradients).bytes / BytesOf(GradientType()));
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::StartFp8Step() {
  weights_cast_.assign(weights_cast_.size(), false);
  return absl::OkStatus();
}

// DataParallelSync::Issue.
absl::Status RecordingDeviceOps::IssueDataParallel(const PlanStep& step) {
  const ParameterBucket& bucket = optimizer_.buckets[step.bucket];
  const std::string name = absl::StrCat("bucket ", step.bucket);
  const bool gather = step.operation == PlanOperation::kDispatchGather ||
                      step.operation == PlanOperation::kWaitGather;
  WorksIn({gather ? ProbeBuffer::kWeights : ProbeBuffer::kGradients});
  switch (step.operation) {
    case PlanOperation::kDispatchGather:
      Collective(FamilyOf(bucket), CollectiveKind::kAllGather, ElementType::kUint8,
                 GatheredParameterBytes(bucket), StepStream::kDataParallel,
                 absl::StrCat(name, " parameters"));
      break;
    case PlanOperation::kWaitGather:
      Emit(WaitOp{StepStream::kDataParallel, absl::StrCat(name, " parameters")});
      break;
    case PlanOperation::kDispatchReduce:
      Collective(FamilyOf(bucket),
                 optimizer_.PartitionOf(step.bucket).shard_count == 1
                     ? CollectiveKind::kAllReduce
                     : CollectiveKind::kReduceScatter,
                 GradientType(), (bucket.end - bucket.start) * BytesOf(GradientType()),
                 StepStream::kDataParallel, absl::StrCat(name, " gradients"));
      ReduceShardAcrossReplicas(step.bucket, StepStream::kDataParallel);
      break;
    case PlanOperation::kWaitReductions:
      Emit(WaitOp{StepStream::kDataParallel, "gradient reductions"});
      break;
  }
  return absl::OkStatus();
}

void RecordingDeviceOps::ReduceShardAcrossReplicas(int64_t bucket, StepStream stream) {
  if (!optimizer_.ReducesAcrossReplicas(bucket)) return;
  Collective(CollectiveFamily::kDataReplica, CollectiveKind::kAllReduce, GradientType(),
             optimizer_.ShardOf(bucket).count * BytesOf(GradientType()), stream,
             absl::StrCat("bucket ", bucket, " gradient shard"));
}

CollectiveFamily RecordingDeviceOps::FamilyOf(const ParameterBucket& bucket) {
  return bucket.group == RankGroup::kExpertData ? CollectiveFamily::kExpertData
                                                : CollectiveFamily::kData;
}

int64_t RecordingDeviceOps::GatheredParameterBytes(const ParameterBucket& bucket) const {
  // Every shard of the bucket, in the bytes of its region's weights.
  return (bucket.end - bucket.start) *
         footprint_.parameters().RegionOf(bucket.start).bytes_per_element;
}

absl::Status RecordingDeviceOps::SendReceive(const std::vector<PipelineTransfer>& transfers) {
  for (const PipelineTransfer& transfer : transfers) {
    PT_RETURN_IF_ERROR(Operands({transfer.buffer}));
    const Transfer& t = transfer.transfer;
    const bool send =
        t.kind == TransferKind::kSendActivation || t.kind == TransferKind::kSendGradient;
    const bool activation =
        t.kind == TransferKind::kSendActivation || t.kind == TransferKind::kReceiveActivation;
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
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::CopyRows(DeviceRef from, DeviceRef to, std::string_view what) {
  PT_RETURN_IF_ERROR(Operands({from, to}));
  Elementwise(std::string(what), shapes_.residual_tokens * shapes_.hidden);
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::TensorAllGather(DeviceRef rows, DeviceRef gathered,
                                                 std::string_view what) {
  return TensorCollective(CollectiveKind::kAllGather, {rows, gathered}, what);
}

absl::Status RecordingDeviceOps::TensorReduceScatter(DeviceRef partial, DeviceRef reduced,
                                                     std::string_view what) {
  return TensorCollective(CollectiveKind::kReduceScatter, {partial, reduced}, what);
}

absl::Status RecordingDeviceOps::TensorAllReduce(DeviceRef partial, std::string_view what) {
  return TensorCollective(CollectiveKind::kAllReduce, {partial}, what);
}

absl::Status RecordingDeviceOps::TensorCollective(CollectiveKind kind,
                                                  const std::vector<DeviceRef>& operands,
                                                  std::string_view what) {
  PT_RETURN_IF_ERROR(Operands(operands));
  Collective(CollectiveFamily::kTensor, kind, ElementType::kBf16,
             TensorParallelActivationBytes(shapes_), StepStream::kCompute, std::string(what));
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::EmbeddingForward(DeviceRef weight, DeviceRef partial) {
  PT_RETURN_IF_ERROR(Operands({weight, partial}));
  Elementwise("embedding lookup", shapes_.tokens * shapes_.hidden);
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::EmbeddingBackward(DeviceRef output_gradient,
                                                   DeviceRef weight_gradient) {
  PT_RETURN_IF_ERROR(Operands({output_gradient, weight_gradient}));
  Elementwise("embedding backward", shapes_.tokens * shapes_.hidden);
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::RmsNormForward(DeviceRef x, DeviceRef weight, DeviceRef out,
                                                DeviceRef rstd) {
  PT_RETURN_IF_ERROR(Operands({x, weight, out, rstd}));
  Elementwise("rmsnorm", shapes_.residual_tokens * shapes_.hidden);
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::RmsNormWeightGradient(DeviceRef x, DeviceRef rstd, DeviceRef d_out,
                                                       DeviceRef weight_gradient) {
  PT_RETURN_IF_ERROR(Operands({x, rstd, d_out, weight_gradient}));
  Elementwise("rmsnorm weight gradient", shapes_.residual_tokens * shapes_.hidden);
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::RmsNormBackward(DeviceRef x, DeviceRef weight, DeviceRef rstd,
                                                 DeviceRef d_out, const DeviceRef* residual,
                                                 DeviceRef d_x) {
  std::vector<DeviceRef> operands = {x, weight, rstd, d_out, d_x};
  if (residual != nullptr) operands.push_back(*residual);
  PT_RETURN_IF_ERROR(Operands(operands));
  Elementwise("rmsnorm backward", shapes_.residual_tokens * shapes_.hidden);
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::AddRows(DeviceRef a, DeviceRef b, DeviceRef out) {
  PT_RETURN_IF_ERROR(Operands({a, b, out}));
  Elementwise("residual add", shapes_.residual_tokens * shapes_.hidden);
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::SwigluForward(DeviceRef gate_up, DeviceRef out, int64_t ffn) {
  PT_RETURN_IF_ERROR(Operands({gate_up, out}));
  Elementwise("swiglu", shapes_.tokens * ffn);
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::SwigluBackward(DeviceRef gate_up, DeviceRef d_out,
                                                DeviceRef d_gate_up, int64_t ffn) {
  PT_RETURN_IF_ERROR(Operands({gate_up, d_out, d_gate_up}));
  Elementwise("swiglu backward", shapes_.tokens * ffn);
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::Gemm(const LinearProduct& product) {
  PT_RETURN_IF_ERROR(Operands({product.a, product.b, product.c}));
  const LinearShape shape{product.tokens, product.outputs, product.inputs};
  const ElementType c = !product.float_output                       ? ElementType::kBf16
                        : product.role == GemmRole::kWeightGradient ? GradientType()
                                                                    : ElementType::kFloat32;
  EmitGemm(product.weight, product.role, shape, ElementType::kBf16, ElementType::kBf16, c);
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::AllGatherGemm(const LinearProduct& product, DeviceRef own,
                                               bool keep_own) {
  PT_RETURN_IF_ERROR(Operands({product.a, product.b, product.c, own}));
  RingGemm(product.weight, product.role, ElementType::kBf16, ElementType::kBf16,
           product.role == GemmRole::kForward ? "input" : "output gradient");
  return absl::OkStatus();
}

// TensorParallelOverlap::AllGatherGemm: tp GEMMs of the rank's rows each, tp - 1 ring
// exchanges of one rank's rows beside them.
void RecordingDeviceOps::RingGemm(LinearWeight weight, GemmRole role, ElementType a, ElementType b,
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
    EmitGemm(weight, role, shape, a, b, ElementType::kBf16, step.compute_chunk, tp);
    if (step.send_chunk >= 0) Emit(WaitOp{StepStream::kTensorParallel, name});
  }
}

absl::Status RecordingDeviceOps::GemmReduceScatter(const LinearProduct& product, DeviceRef reduced,
                                                   DeviceRef out) {
  PT_RETURN_IF_ERROR(Operands({product.a, product.b, product.c, reduced, out}));
  PipelinedGemm(product.weight, ElementType::kBf16, ElementType::kBf16);
  return absl::OkStatus();
}

// TensorParallelOverlap::GemmReduceScatter: the forward GEMM in column chunks, each
// reduce-scattered as it is done.
void RecordingDeviceOps::PipelinedGemm(LinearWeight weight, ElementType a, ElementType b) {
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

absl::Status RecordingDeviceOps::BulkBackward(DeviceRef own, DeviceRef gathered,
                                              const LinearProduct& input_gradient,
                                              const LinearProduct& weight_gradient,
                                              DeviceRef reduced) {
  PT_RETURN_IF_ERROR(Operands({own, gathered, input_gradient.a, input_gradient.b, input_gradient.c,
                               weight_gradient.a, weight_gradient.b, weight_gradient.c, reduced}));
  Bulk(input_gradient.weight, ElementType::kBf16, ElementType::kBf16, ElementType::kBf16, 2,
       /*transpose=*/false);
  return absl::OkStatus();
}

// TensorParallelOverlap::BulkBackward: the input gathered again beside the input gradient,
// which is reduce-scattered beside the weight gradient.
void RecordingDeviceOps::Bulk(LinearWeight weight, ElementType gradient, ElementType input,
                              ElementType gather_type, int64_t input_bytes, bool transpose) {
  const LinearShape& shape = ShapeOf(weight);
  const std::string name = LinearWeightName(weight);
  Collective(CollectiveFamily::kTensor, CollectiveKind::kAllGather, gather_type,
             shape.rows * shape.inputs * input_bytes, StepStream::kTensorParallel,
             absl::StrCat(name, " input again"));
  EmitGemm(weight, GemmRole::kInputGradient, shape, gradient, input, ElementType::kBf16);
  Collective(CollectiveFamily::kTensor, CollectiveKind::kReduceScatter, ElementType::kBf16,
             shape.rows * shape.inputs * 2, StepStream::kTensorParallel,
             absl::StrCat(name, " input gradient"));
  Emit(WaitOp{StepStream::kTensorParallel, absl::StrCat(name, " input again")});
  if (transpose) {
    Emit(CastOp{weight, "gathered input transpose", shape.rows, shape.inputs, input});
  }
  EmitGemm(weight, GemmRole::kWeightGradient, shape, gradient, input, GradientType());
  Emit(WaitOp{StepStream::kTensorParallel, absl::StrCat(name, " input gradient")});
}

void RecordingDeviceOps::CastWeight(const Fp8Site& site) {
  if (weights_cast_[site.chunk]) return;
  const LinearWeight weight = WeightOf(site.linear);
  const LinearShape& shape = ShapeOf(weight);
  const bool fp8_parameters = footprint_.fp8_state().fp8_parameters;
  Emit(CastOp{weight, fp8_parameters ? "weight transpose" : "weight and transpose", shape.outputs,
              shape.inputs, ElementType::kE4M3});
}

// Fp8Linears::ColumnForward.
absl::Status RecordingDeviceOps::Fp8ColumnForward(const Fp8Site& site, DeviceRef normed,
                                                  DeviceRef out) {
  PT_RETURN_IF_ERROR(Operands({site.weight, site.kept, site.kept_scale_inverse, normed, out}));
  const LinearWeight weight = WeightOf(site.linear);
  const LinearShape& shape = ShapeOf(weight);
  const ElementType e4m3 = ElementType::kE4M3;
  CastWeight(site);
  if (shapes_.sequence_parallel) {
    Emit(CastOp{weight, "input", shapes_.residual_tokens, shape.inputs, e4m3});
    if (tp_overlap_.has_value()) {
      RingGemm(weight, GemmRole::kForward, e4m3, e4m3, "fp8 input");
      return absl::OkStatus();
    }
    Collective(CollectiveFamily::kTensor, CollectiveKind::kAllGather, ElementType::kUint8,
               shape.rows * shape.inputs, StepStream::kCompute,
               absl::StrCat(LinearWeightName(weight), " fp8 input"));
  } else {
    Emit(CastOp{weight, "input and transpose", shape.rows, shape.inputs, e4m3});
  }
  EmitGemm(weight, GemmRole::kForward, shape, e4m3, e4m3, ElementType::kBf16);
  return absl::OkStatus();
}

// Fp8Linears::RowForward.
absl::Status RecordingDeviceOps::Fp8RowForward(const Fp8Site& site, DeviceRef in,
                                               DeviceRef partial) {
  PT_RETURN_IF_ERROR(Operands({site.weight, site.kept, site.kept_scale_inverse, in, partial}));
  const LinearWeight weight = WeightOf(site.linear);
  const LinearShape& shape = ShapeOf(weight);
  const ElementType e4m3 = ElementType::kE4M3;
  CastWeight(site);
  Emit(CastOp{weight, "input and transpose", shape.rows, shape.inputs, e4m3});
  EmitGemm(weight, GemmRole::kForward, shape, e4m3, e4m3, ElementType::kBf16);
  return absl::OkStatus();
}

// Fp8Linears::RowForwardOverlapped.
absl::Status RecordingDeviceOps::Fp8RowForwardOverlapped(const Fp8Site& site, DeviceRef in,
                                                         DeviceRef partial, DeviceRef reduced,
                                                         DeviceRef out) {
  PT_RETURN_IF_ERROR(
      Operands({site.weight, site.kept, site.kept_scale_inverse, in, partial, reduced, out}));
  const LinearWeight weight = WeightOf(site.linear);
  const LinearShape& shape = ShapeOf(weight);
  CastWeight(site);
  Emit(CastOp{weight, "input and transpose", shape.rows, shape.inputs, ElementType::kE4M3});
  PipelinedGemm(weight, ElementType::kE4M3, ElementType::kE4M3);
  return absl::OkStatus();
}

// Fp8Linears::Backward: from the (gathered or whole) output gradient; a column-parallel
// linear's fp8 input gathered again with sequence parallelism.
absl::Status RecordingDeviceOps::Fp8Backward(const Fp8Site& site, DeviceRef d_out, DeviceRef d_in,
                                             DeviceRef weight_gradient) {
  PT_RETURN_IF_ERROR(
      Operands({site.weight, site.kept, site.kept_scale_inverse, d_out, d_in, weight_gradient}));
  Fp8Products(WeightOf(site.linear));
  return absl::OkStatus();
}

void RecordingDeviceOps::Fp8Products(LinearWeight weight) {
  const LinearShape& shape = ShapeOf(weight);
  const ElementType e4m3 = ElementType::kE4M3;
  const ElementType e5m2 = ElementType::kE5M2;
  Emit(CastOp{weight, "output gradient and transpose", shape.rows, shape.outputs, e5m2});
  if (IsColumnParallel(weight) && shapes_.sequence_parallel) {
    Collective(CollectiveFamily::kTensor, CollectiveKind::kAllGather, ElementType::kUint8,
               shape.rows * shape.inputs, StepStream::kCompute,
               absl::StrCat(LinearWeightName(weight), " fp8 input again"));
    Emit(CastOp{weight, "gathered input transpose", shape.rows, shape.inputs, e4m3});
  }
  EmitGemm(weight, GemmRole::kInputGradient, shape, e5m2, e4m3, ElementType::kBf16);
  EmitGemm(weight, GemmRole::kWeightGradient, shape, e5m2, e4m3, GradientType());
}

// Fp8Linears::ColumnBackwardOverlapped.
absl::Status RecordingDeviceOps::Fp8ColumnBackwardOverlapped(const Fp8Site& site, DeviceRef d_out,
                                                             DeviceRef partial, DeviceRef reduced,
                                                             DeviceRef weight_gradient) {
  PT_RETURN_IF_ERROR(Operands(
      {site.weight, site.kept, site.kept_scale_inverse, d_out, partial, reduced, weight_gradient}));
  const LinearWeight weight = WeightOf(site.linear);
  const LinearShape& shape = ShapeOf(weight);
  Emit(CastOp{weight, "output gradient and transpose", shape.rows, shape.outputs,
              ElementType::kE5M2});
  Bulk(weight, ElementType::kE5M2, ElementType::kE4M3, ElementType::kUint8, 1,
       /*transpose=*/true);
  return absl::OkStatus();
}

// Fp8Linears::RowBackwardOverlapped.
absl::Status RecordingDeviceOps::Fp8RowBackwardOverlapped(const Fp8Site& site, DeviceRef d_out,
                                                          DeviceRef d_in,
                                                          DeviceRef weight_gradient) {
  PT_RETURN_IF_ERROR(
      Operands({site.weight, site.kept, site.kept_scale_inverse, d_out, d_in, weight_gradient}));
  const LinearWeight weight = WeightOf(site.linear);
  const LinearShape& shape = ShapeOf(weight);
  const ElementType e4m3 = ElementType::kE4M3;
  const ElementType e5m2 = ElementType::kE5M2;
  Emit(CastOp{weight, "output gradient rows", shapes_.residual_tokens, shape.outputs, e5m2});
  RingGemm(weight, GemmRole::kInputGradient, e5m2, e4m3, "fp8 output gradient");
  Emit(CastOp{weight, "gathered output gradient transpose", shape.rows, shape.outputs, e5m2});
  EmitGemm(weight, GemmRole::kWeightGradient, shape, e5m2, e4m3, GradientType());
  return absl::OkStatus();
}

// Fp8Linears::RowBackwardSequenceParallel.
absl::Status RecordingDeviceOps::Fp8RowBackwardSequenceParallel(const Fp8Site& site,
                                                                DeviceRef d_out, DeviceRef d_in,
                                                                DeviceRef weight_gradient) {
  PT_RETURN_IF_ERROR(
      Operands({site.weight, site.kept, site.kept_scale_inverse, d_out, d_in, weight_gradient}));
  const LinearWeight weight = WeightOf(site.linear);
  const LinearShape& shape = ShapeOf(weight);
  const ElementType e4m3 = ElementType::kE4M3;
  const ElementType e5m2 = ElementType::kE5M2;
  Emit(CastOp{weight, "output gradient rows", shapes_.residual_tokens, shape.outputs, e5m2});
  Collective(CollectiveFamily::kTensor, CollectiveKind::kAllGather, ElementType::kUint8,
             shape.rows * shape.outputs, StepStream::kCompute,
             absl::StrCat(LinearWeightName(weight), " fp8 output gradient"));
  EmitGemm(weight, GemmRole::kInputGradient, shape, e5m2, e4m3, ElementType::kBf16);
  Emit(CastOp{weight, "gathered output gradient transpose", shape.rows, shape.outputs, e5m2});
  EmitGemm(weight, GemmRole::kWeightGradient, shape, e5m2, e4m3, GradientType());
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::EndFp8Forward(int64_t chunk) {
  weights_cast_[chunk] = true;
  EndFp8Pass(footprint_.fp8_state().forward[chunk], "forward");
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::EndFp8Backward(int64_t chunk) {
  EndFp8Pass(footprint_.fp8_state().backward[chunk], "backward");
  return absl::OkStatus();
}

void RecordingDeviceOps::EndFp8Pass(const Fp8ScalingGroup& group, const std::string& what) {
  if (group.tensors == 0) return;
  WorksIn({ProbeBuffer::kFp8ScalingState});
  // The amax group: the tensor x context x data ranks of the stage (Fp8AmaxGroup).
  const RankLayout& layout = spec_.layout();
  if (layout.tp() * layout.cp() * layout.dp() > 1) {
    Collective(CollectiveFamily::kFp8Amax, CollectiveKind::kAllReduce, ElementType::kFloat32,
               group.tensors * 4, StepStream::kCompute, absl::StrCat(what, " amaxes"));
  }
  Emit(AmaxUpdateOp{what, group.tensors});
}

absl::Status RecordingDeviceOps::AttentionForward(DeviceRef qkv, DeviceRef out,
                                                  const AttentionKept& kept) {
  PT_RETURN_IF_ERROR(Operands({qkv, out, kept.query, kept.key_value, kept.softmax_lse}));
  AttentionPass(/*backward=*/false);
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::AttentionBackward(DeviceRef d_out, DeviceRef out, DeviceRef d_qkv,
                                                   const AttentionKept& kept) {
  PT_RETURN_IF_ERROR(Operands({d_out, out, d_qkv, kept.query, kept.key_value, kept.softmax_lse}));
  AttentionPass(/*backward=*/true);
  return absl::OkStatus();
}

// Attention::Forward and Backward: the rotary embedding and the split, then the products over
// the keys and values the exchange brings.
void RecordingDeviceOps::AttentionPass(bool backward) {
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
      Collective(CollectiveFamily::kContext, CollectiveKind::kReduceScatter, ElementType::kFloat32,
                 c * kv_values * 4, StepStream::kCompute, "key and value gradients");
    }
  }
  if (!backward) {
    Elementwise("heads to tokens", shapes_.tokens * shapes_.query_heads * shapes_.head_dim);
  }
}

// Attention::RingForward / RingBackward: the forward passes each block on c - 1 times; the
// backward as well, and each block's fp32 gradients c times (one step behind their block,
// and home after the last step).
void RecordingDeviceOps::RingExchanges(bool backward, int64_t kv_values) {
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

absl::Status RecordingDeviceOps::LogitsRowMax(DeviceRef logits, DeviceRef row_max) {
  PT_RETURN_IF_ERROR(Operands({logits, row_max}));
  Elementwise("logits row max", shapes_.tokens * shapes_.vocab);
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::AllReduceLogitStatistic(DeviceRef values, Reduction reduction,
                                                         std::string_view what) {
  PT_RETURN_IF_ERROR(Operands({values}));
  Collective(CollectiveFamily::kTensor, CollectiveKind::kAllReduce, ElementType::kFloat32,
             shapes_.tokens * 4, StepStream::kCompute, std::string(what));
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::LogitsRowSumExp(DeviceRef logits, DeviceRef row_max,
                                                 DeviceRef row_sum) {
  PT_RETURN_IF_ERROR(Operands({logits, row_max, row_sum}));
  Elementwise("logits sum exp", shapes_.tokens * shapes_.vocab);
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::CrossEntropyBackward(DeviceRef logits, DeviceRef row_max,
                                                      DeviceRef row_sum, DeviceRef d_logits,
                                                      DeviceRef loss) {
  PT_RETURN_IF_ERROR(Operands({logits, row_max, row_sum, d_logits, loss}));
  Elementwise("cross entropy backward", shapes_.tokens * shapes_.vocab);
  return absl::OkStatus();
}

// The MoE block's kernels (worker/cuda/moe_kernels.h), each one elementwise pass over the
// values it writes (the router's over the logits).
absl::Status RecordingDeviceOps::RouterTopK(DeviceRef logits, DeviceRef probabilities,
                                            DeviceRef indices) {
  PT_RETURN_IF_ERROR(Operands({logits, probabilities, indices}));
  const MoeShardShapes& moe = footprint_.moe();
  Elementwise("router top-k", moe.routed_tokens * moe.experts);
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::RouterTopKBackward(DeviceRef logits, DeviceRef probabilities,
                                                    DeviceRef indices, DeviceRef d_probabilities,
                                                    DeviceRef d_logits) {
  PT_RETURN_IF_ERROR(Operands({logits, probabilities, indices, d_probabilities, d_logits}));
  const MoeShardShapes& moe = footprint_.moe();
  Elementwise("router top-k backward", moe.routed_tokens * moe.experts);
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::PermuteTokens(DeviceRef rows, DeviceRef probabilities,
                                               DeviceRef permuted,
                                               DeviceRef permuted_probabilities) {
  PT_RETURN_IF_ERROR(Operands({rows, probabilities, permuted, permuted_probabilities}));
  Elementwise("permute tokens", footprint_.moe().routed_copies * shapes_.hidden);
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::ScatterRowGradients(DeviceRef d_rows, DeviceRef d_permuted) {
  PT_RETURN_IF_ERROR(Operands({d_rows, d_permuted}));
  Elementwise("permute token gradients", footprint_.moe().routed_copies * shapes_.hidden);
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::UnpermuteTokens(DeviceRef permuted, DeviceRef rows) {
  PT_RETURN_IF_ERROR(Operands({permuted, rows}));
  Elementwise("unpermute tokens", footprint_.moe().routed_tokens * shapes_.hidden);
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::UnpermuteProbabilities(DeviceRef d_permuted_probabilities,
                                                        DeviceRef d_probabilities) {
  PT_RETURN_IF_ERROR(Operands({d_permuted_probabilities, d_probabilities}));
  const MoeShardShapes& moe = footprint_.moe();
  Elementwise("unpermute probability gradients", moe.routed_tokens * moe.top_k);
  return absl::OkStatus();
}

// communicators.h AllToAll: the whole send buffer, nccl-tests' alltoall size.
absl::Status RecordingDeviceOps::ExpertAllToAll(DeviceRef send, DeviceRef receive, int64_t rows,
                                                int64_t width, ElementType type,
                                                std::string_view what) {
  PT_RETURN_IF_ERROR(Operands({send, receive}));
  Collective(CollectiveFamily::kExpert, CollectiveKind::kAllToAll, type,
             rows * width * BytesOf(type), StepStream::kCompute, std::string(what));
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::ExpertTensorAllGather(DeviceRef own, DeviceRef gathered,
                                                       int64_t rows, int64_t width,
                                                       ElementType type, std::string_view what) {
  PT_RETURN_IF_ERROR(Operands({own, gathered}));
  Collective(CollectiveFamily::kExpertTensor, CollectiveKind::kAllGather, type,
             footprint_.moe().expert_tensor_parallel * rows * width * BytesOf(type),
             StepStream::kCompute, std::string(what));
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::ExpertTensorReduceScatter(DeviceRef partial, DeviceRef reduced,
                                                           int64_t rows, int64_t width,
                                                           ElementType type,
                                                           std::string_view what) {
  PT_RETURN_IF_ERROR(Operands({partial, reduced}));
  Collective(CollectiveFamily::kExpertTensor, CollectiveKind::kReduceScatter, type,
             footprint_.moe().expert_tensor_parallel * rows * width * BytesOf(type),
             StepStream::kCompute, std::string(what));
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::SortChunks(DeviceRef in, DeviceRef out, int64_t groups,
                                            int64_t local_experts, int64_t chunk_rows,
                                            int64_t width, ElementType type) {
  PT_RETURN_IF_ERROR(Operands({in, out}));
  Elementwise(absl::StrCat("sort chunks ", ElementTypeName(type)),
              groups * local_experts * chunk_rows * width);
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::WeightedSwigluForward(DeviceRef gate_up, DeviceRef probabilities,
                                                       DeviceRef out, int64_t rows) {
  PT_RETURN_IF_ERROR(Operands({gate_up, probabilities, out}));
  Elementwise("weighted swiglu", rows * footprint_.moe().expert_ffn);
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::WeightedSwigluBackward(DeviceRef gate_up, DeviceRef probabilities,
                                                        DeviceRef d_out, DeviceRef d_gate_up,
                                                        DeviceRef d_probabilities, int64_t rows) {
  PT_RETURN_IF_ERROR(Operands({gate_up, probabilities, d_out, d_gate_up, d_probabilities}));
  Elementwise("weighted swiglu backward", rows * footprint_.moe().expert_ffn);
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::ReduceScatterGradients(int64_t bucket) {
  ReduceGradients(bucket, CollectiveKind::kReduceScatter);
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::AllReduceGradients(int64_t bucket) {
  ReduceGradients(bucket, CollectiveKind::kAllReduce);
  return absl::OkStatus();
}

void RecordingDeviceOps::ReduceGradients(int64_t bucket, CollectiveKind kind) {
  WorksIn({ProbeBuffer::kGradients});
  const ParameterBucket& range = optimizer_.buckets[bucket];
  Collective(FamilyOf(range), kind, GradientType(),
             (range.end - range.start) * BytesOf(GradientType()), StepStream::kCompute,
             absl::StrCat("bucket ", bucket, " gradients"));
  if (kind == CollectiveKind::kReduceScatter)
    ReduceShardAcrossReplicas(bucket, StepStream::kCompute);
}

absl::Status RecordingDeviceOps::DispatchWeightGather(const WeightGather& gather) {
  WorksIn({ProbeBuffer::kWeights, ProbeBuffer::kGatheredWeights});
  const ParameterBucket& range = optimizer_.buckets[gather.bucket];
  const std::string what = absl::StrCat("bucket ", gather.bucket, " weights to slot ", gather.slot);
  if (optimizer_.Reduces(gather.bucket)) {
    Collective(FamilyOf(range), CollectiveKind::kAllGather, ElementType::kBf16,
               GatheredParameterBytes(range), StepStream::kDataParallel, what);
  } else {
    Elementwise(absl::StrCat("copy ", what), optimizer_.ShardOf(gather.bucket).count);
  }
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::WaitWeightGather(const WeightGather& gather) {
  if (!optimizer_.Reduces(gather.bucket)) return absl::OkStatus();
  WorksIn({ProbeBuffer::kGatheredWeights});
  Emit(WaitOp{StepStream::kDataParallel, absl::StrCat("bucket ", gather.bucket, " weights")});
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::ZeroStagedGradients(int64_t bucket) {
  WorksIn({ProbeBuffer::kGradientStaging});
  const ParameterBucket& range = optimizer_.buckets[bucket];
  Elementwise(absl::StrCat("zero bucket ", bucket, " staged gradients"), range.end - range.start);
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::ReduceStagedGradients(int64_t bucket) {
  WorksIn({ProbeBuffer::kGradientStaging, ProbeBuffer::kGradients});
  if (optimizer_.Reduces(bucket)) {
    const ParameterBucket& range = optimizer_.buckets[bucket];
    Collective(FamilyOf(range), CollectiveKind::kReduceScatter, GradientType(),
               (range.end - range.start) * BytesOf(GradientType()), StepStream::kCompute,
               absl::StrCat("bucket ", bucket, " gradients"));
    ReduceShardAcrossReplicas(bucket, StepStream::kCompute);
  }
  Elementwise(absl::StrCat("accumulate bucket ", bucket, " gradient shard"),
              optimizer_.ShardOf(bucket).count);
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::Adam(const AdamUpdate& update) {
  PT_RETURN_IF_ERROR(Operands({update.gradients, update.master_weights, update.first_moment,
                               update.second_moment, update.weights}));
  Emit(OptimizerOp{absl::StrCat("adam bucket ", update.bucket), update.shard.count});
  return absl::OkStatus();
}

// Fp8Parameters::CastMasterWeights: the rank's master shards cast into the fp8 weights, then
// every weight's amax reduced over the data x context group where the probe runs it.
absl::Status RecordingDeviceOps::CastMasterWeights() {
  WorksIn({ProbeBuffer::kMasterWeights, ProbeBuffer::kWeights, ProbeBuffer::kFp8ScalingState});
  int64_t elements = 0;
  for (int64_t i = 0; i < static_cast<int64_t>(optimizer_.buckets.size()); ++i) {
    if (!footprint_.parameters().RegionOf(optimizer_.buckets[i].start).fp8) continue;
    elements += optimizer_.ShardOf(i).count;
  }
  Emit(OptimizerOp{"cast master weights to fp8", elements});
  const std::vector<Fp8ScalingGroup>& groups = footprint_.fp8_state().forward;
  for (size_t chunk = 0; chunk < groups.size(); ++chunk) {
    const Fp8ScalingGroup& group = groups[chunk];
    if (group.tensors == 0) continue;
    if (optimizer_.reduce_gradients) {
      Collective(CollectiveFamily::kFp8Amax, CollectiveKind::kAllReduce, ElementType::kFloat32,
                 group.tensors * 4, StepStream::kCompute,
                 absl::StrCat("chunk ", chunk, " weight amaxes"));
    }
    Elementwise(absl::StrCat("chunk ", chunk, " weight scale inverses"),
                group.tensors / group.tensors_per_linear);
  }
  return absl::OkStatus();
}

absl::Status RecordingDeviceOps::GatherParameters(int64_t bucket) {
  WorksIn({ProbeBuffer::kWeights});
  Collective(FamilyOf(optimizer_.buckets[bucket]), CollectiveKind::kAllGather, ElementType::kUint8,
             GatheredParameterBytes(optimizer_.buckets[bucket]), StepStream::kCompute,
             absl::StrCat("bucket ", bucket, " parameters"));
  return absl::OkStatus();
}

}  // namespace paratune
