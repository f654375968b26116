#include "worker/cuda/cudnn_attention.h"

#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/cuda/cuda_status.h"

namespace paratune {

namespace {

cudnnDataType_t DataType(GraphDataType type) {
  switch (type) {
    case GraphDataType::kBfloat16:
      return CUDNN_DATA_BFLOAT16;
    case GraphDataType::kFloat:
      return CUDNN_DATA_FLOAT;
    case GraphDataType::kInt32:
      return CUDNN_DATA_INT32;
    case GraphDataType::kBoolean:
      return CUDNN_DATA_BOOLEAN;
  }
  return CUDNN_DATA_FLOAT;
}

cudnnPointwiseMode_t PointwiseMode(GraphOpKind kind) {
  switch (kind) {
    case GraphOpKind::kMultiply:
      return CUDNN_POINTWISE_MUL;
    case GraphOpKind::kAdd:
      return CUDNN_POINTWISE_ADD;
    case GraphOpKind::kSubtract:
      return CUDNN_POINTWISE_SUB;
    case GraphOpKind::kDivide:
      return CUDNN_POINTWISE_DIV;
    case GraphOpKind::kExp:
      return CUDNN_POINTWISE_EXP;
    case GraphOpKind::kLog:
      return CUDNN_POINTWISE_LOG;
    case GraphOpKind::kRowIndex:
    case GraphOpKind::kColumnIndex:
      return CUDNN_POINTWISE_GEN_INDEX;
    case GraphOpKind::kGreaterEqual:
      return CUDNN_POINTWISE_CMP_GE;
    case GraphOpKind::kSelect:
      return CUDNN_POINTWISE_BINARY_SELECT;
    case GraphOpKind::kIdentity:
    case GraphOpKind::kMatmul:
    case GraphOpKind::kReduceMax:
    case GraphOpKind::kReduceSum:
    case GraphOpKind::kReshape:
      break;
  }
  return CUDNN_POINTWISE_IDENTITY;
}

absl::Status Set(void* descriptor, cudnnBackendAttributeName_t name,
                 cudnnBackendAttributeType_t type, int64_t count, const void* values) {
  return CudnnStatus(cudnnBackendSetAttribute(descriptor, name, type, count, values),
                     absl::StrCat("cudnnBackendSetAttribute(", name, ")"));
}

absl::Status SetDescriptor(void* descriptor, cudnnBackendAttributeName_t name, void* value) {
  return Set(descriptor, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &value);
}

absl::Status Finalize(void* descriptor, absl::string_view what) {
  return CudnnStatus(cudnnBackendFinalize(descriptor),
                     absl::StrCat("cudnnBackendFinalize(", what, ")"));
}

int64_t Aligned(int64_t bytes) {
  return (bytes + kGraphWorkspaceAlignment - 1) / kGraphWorkspaceAlignment *
         kGraphWorkspaceAlignment;
}

}  // namespace

absl::Status CheckCudnnAttentionBackwardVersion(size_t version) {
  if (version == 91000 || version == 91001) {
    return absl::UnimplementedError(
        absl::StrCat("cuDNN ", version / 10000, ".", version / 100 % 100, ".", version % 100,
                     " has known bugs in the fp16/bf16 SDPA backward (cudnn-frontend refuses "
                     "9.10.0 and 9.10.1)"));
  }
  return absl::OkStatus();
}

void CudnnAttention::DescriptorDeleter::operator()(void* descriptor) const {
  cudnnBackendDestroyDescriptor(descriptor);
}

CudnnAttention::~CudnnAttention() {
  // Descriptors before the handle they were built on.
  plan_.reset();
  descriptors_.clear();
  if (handle_ != nullptr) cudnnDestroy(handle_);
}

absl::StatusOr<std::unique_ptr<CudnnAttention>> CudnnAttention::Create(const AttentionGraph& graph,
                                                                       int64_t workspace_bytes,
                                                                       cudaStream_t stream) {
  std::unique_ptr<CudnnAttention> attention(new CudnnAttention());
  attention->stream_ = stream;
  attention->executions_ = graph.executions;
  PT_RETURN_IF_ERROR(CudnnStatus(cudnnCreate(&attention->handle_), "cudnnCreate"));
  PT_RETURN_IF_ERROR(CudnnStatus(cudnnSetStream(attention->handle_, stream), "cudnnSetStream"));
  auto make = [&](cudnnBackendDescriptorType_t type) -> absl::StatusOr<void*> {
    void* descriptor = nullptr;
    PT_RETURN_IF_ERROR(CudnnStatus(cudnnBackendCreateDescriptor(type, &descriptor),
                                   absl::StrCat("cudnnBackendCreateDescriptor(", type, ")")));
    attention->descriptors_.emplace_back(descriptor);
    return descriptor;
  };

  std::map<int64_t, void*> tensors;
  for (const GraphTensor& t : graph.tensors) {
    PT_ASSIGN_OR_RETURN(void* tensor, make(CUDNN_BACKEND_TENSOR_DESCRIPTOR));
    const cudnnDataType_t type = DataType(t.type);
    const int64_t alignment = 16;
    const bool is_virtual = t.is_virtual;
    const bool by_value = t.value.has_value();
    PT_RETURN_IF_ERROR(Set(tensor, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type));
    PT_RETURN_IF_ERROR(Set(tensor, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64,
                           static_cast<int64_t>(t.dims.size()), t.dims.data()));
    PT_RETURN_IF_ERROR(Set(tensor, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64,
                           static_cast<int64_t>(t.strides.size()), t.strides.data()));
    PT_RETURN_IF_ERROR(Set(tensor, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &t.uid));
    PT_RETURN_IF_ERROR(
        Set(tensor, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment));
    PT_RETURN_IF_ERROR(
        Set(tensor, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual));
    PT_RETURN_IF_ERROR(
        Set(tensor, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value));
    PT_RETURN_IF_ERROR(Finalize(tensor, absl::StrCat("tensor ", t.uid)));
    tensors[t.uid] = tensor;
    int64_t bytes = GraphDataTypeBytes(t.type);
    for (int64_t dim : t.dims) bytes *= dim;
    if (by_value) {
      Scalar scalar{t.uid, {}};
      if (t.type == GraphDataType::kInt32) {
        const int32_t value = static_cast<int32_t>(*t.value);
        std::memcpy(scalar.bytes, &value, sizeof(value));
      } else {
        const float value = *t.value;
        std::memcpy(scalar.bytes, &value, sizeof(value));
      }
      attention->scalars_.push_back(scalar);
    } else if (t.workspace_offset >= 0) {
      attention->workspace_tensors_.push_back({t.uid, t.workspace_offset, bytes, t.accumulated});
    } else if (!is_virtual) {
      attention->bound_.push_back({t.uid, t.offset * GraphDataTypeBytes(t.type),
                                   t.execution_stride * GraphDataTypeBytes(t.type)});
    }
  }

  std::vector<void*> ops;
  for (const GraphOp& op : graph.ops) {
    const cudnnDataType_t compute_type = DataType(op.compute_type);
    void* operation = nullptr;
    switch (op.kind) {
      case GraphOpKind::kMatmul: {
        PT_ASSIGN_OR_RETURN(void* matmul, make(CUDNN_BACKEND_MATMUL_DESCRIPTOR));
        PT_RETURN_IF_ERROR(
            Set(matmul, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute_type));
        PT_RETURN_IF_ERROR(Finalize(matmul, "matmul"));
        PT_ASSIGN_OR_RETURN(operation, make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR));
        PT_RETURN_IF_ERROR(
            SetDescriptor(operation, CUDNN_ATTR_OPERATION_MATMUL_ADESC, tensors[op.inputs[0]]));
        PT_RETURN_IF_ERROR(
            SetDescriptor(operation, CUDNN_ATTR_OPERATION_MATMUL_BDESC, tensors[op.inputs[1]]));
        PT_RETURN_IF_ERROR(
            SetDescriptor(operation, CUDNN_ATTR_OPERATION_MATMUL_CDESC, tensors[op.output]));
        PT_RETURN_IF_ERROR(SetDescriptor(operation, CUDNN_ATTR_OPERATION_MATMUL_DESC, matmul));
        break;
      }
      case GraphOpKind::kReduceMax:
      case GraphOpKind::kReduceSum: {
        const cudnnReduceTensorOp_t reduce =
            op.kind == GraphOpKind::kReduceMax ? CUDNN_REDUCE_TENSOR_MAX : CUDNN_REDUCE_TENSOR_ADD;
        PT_ASSIGN_OR_RETURN(void* reduction, make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR));
        PT_RETURN_IF_ERROR(Set(reduction, CUDNN_ATTR_REDUCTION_OPERATOR,
                               CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &reduce));
        PT_RETURN_IF_ERROR(
            Set(reduction, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute_type));
        PT_RETURN_IF_ERROR(Finalize(reduction, "reduction"));
        PT_ASSIGN_OR_RETURN(operation, make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR));
        PT_RETURN_IF_ERROR(
            SetDescriptor(operation, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, tensors[op.inputs[0]]));
        PT_RETURN_IF_ERROR(
            SetDescriptor(operation, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, tensors[op.output]));
        PT_RETURN_IF_ERROR(
            SetDescriptor(operation, CUDNN_ATTR_OPERATION_REDUCTION_DESC, reduction));
        break;
      }
      case GraphOpKind::kReshape: {
        PT_ASSIGN_OR_RETURN(operation, make(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR));
        PT_RETURN_IF_ERROR(
            SetDescriptor(operation, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, tensors[op.inputs[0]]));
        PT_RETURN_IF_ERROR(
            SetDescriptor(operation, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, tensors[op.output]));
        break;
      }
      default: {
        const cudnnPointwiseMode_t mode = PointwiseMode(op.kind);
        PT_ASSIGN_OR_RETURN(void* pointwise, make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR));
        PT_RETURN_IF_ERROR(
            Set(pointwise, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode));
        PT_RETURN_IF_ERROR(
            Set(pointwise, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &compute_type));
        if (mode == CUDNN_POINTWISE_GEN_INDEX) {
          const int64_t axis = op.kind == GraphOpKind::kRowIndex ? 2 : 3;
          PT_RETURN_IF_ERROR(Set(pointwise, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis));
        }
        PT_RETURN_IF_ERROR(Finalize(pointwise, "pointwise"));
        PT_ASSIGN_OR_RETURN(operation, make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR));
        PT_RETURN_IF_ERROR(
            SetDescriptor(operation, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pointwise));
        const cudnnBackendAttributeName_t inputs[] = {CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
                                                      CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
                                                      CUDNN_ATTR_OPERATION_POINTWISE_TDESC};
        for (size_t i = 0; i < op.inputs.size(); ++i) {
          PT_RETURN_IF_ERROR(SetDescriptor(operation, inputs[i], tensors[op.inputs[i]]));
        }
        PT_RETURN_IF_ERROR(
            SetDescriptor(operation, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, tensors[op.output]));
      }
    }
    PT_RETURN_IF_ERROR(Finalize(operation, absl::StrCat("operation writing ", op.output)));
    ops.push_back(operation);
  }

  PT_ASSIGN_OR_RETURN(void* op_graph, make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR));
  PT_RETURN_IF_ERROR(Set(op_graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                         static_cast<int64_t>(ops.size()), ops.data()));
  PT_RETURN_IF_ERROR(
      Set(op_graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &attention->handle_));
  PT_RETURN_IF_ERROR(Finalize(op_graph, "operation graph"));

  PT_ASSIGN_OR_RETURN(void* heuristics, make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR));
  const cudnnBackendHeurMode_t heuristic_mode = CUDNN_HEUR_MODE_A;
  PT_RETURN_IF_ERROR(SetDescriptor(heuristics, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, op_graph));
  PT_RETURN_IF_ERROR(
      Set(heuristics, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &heuristic_mode));
  PT_RETURN_IF_ERROR(Finalize(heuristics, "engine heuristics"));
  int64_t proposed = 0;
  PT_RETURN_IF_ERROR(
      CudnnStatus(cudnnBackendGetAttribute(heuristics, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                           CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &proposed, nullptr),
                  "engine heuristics' result count"));
  std::vector<void*> configs;
  for (int64_t i = 0; i < proposed; ++i) {
    PT_ASSIGN_OR_RETURN(void* config, make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    configs.push_back(config);
  }
  PT_RETURN_IF_ERROR(CudnnStatus(
      cudnnBackendGetAttribute(heuristics, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, proposed, &proposed, configs.data()),
      "engine heuristics' results"));

  // The heuristics' order is their preference: the first plan that finalizes within the
  // workspace is the one to run.
  std::string refusals;
  for (int64_t i = 0; i < proposed; ++i) {
    void* plan = nullptr;
    PT_RETURN_IF_ERROR(
        CudnnStatus(cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan),
                    "cudnnBackendCreateDescriptor(execution plan)"));
    Descriptor owned(plan);
    PT_RETURN_IF_ERROR(
        Set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &attention->handle_));
    PT_RETURN_IF_ERROR(SetDescriptor(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, configs[i]));
    const absl::Status finalized = Finalize(plan, absl::StrCat("execution plan ", i));
    if (!finalized.ok()) {
      absl::StrAppend(&refusals, refusals.empty() ? "" : "; ", finalized.message());
      continue;
    }
    int64_t plan_bytes = 0;
    PT_RETURN_IF_ERROR(
        CudnnStatus(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                             CUDNN_TYPE_INT64, 1, nullptr, &plan_bytes),
                    "execution plan workspace size"));
    const int64_t needed = Aligned(plan_bytes) + graph.workspace_tensor_bytes;
    if (needed > workspace_bytes) {
      absl::StrAppend(&refusals, refusals.empty() ? "" : "; ", "execution plan ", i, " needs ",
                      needed, " bytes of workspace (", plan_bytes, " its own, ",
                      graph.workspace_tensor_bytes, " the graph's tensors), more than ",
                      workspace_bytes);
      continue;
    }
    attention->plan_ = std::move(owned);
    attention->plan_workspace_bytes_ = Aligned(plan_bytes);
    return attention;
  }
  return absl::UnimplementedError(absl::StrCat("cuDNN has no engine for the attention graph (",
                                               proposed, " proposed by heuristics mode A)",
                                               refusals.empty() ? "" : ": ", refusals));
}

absl::Status CudnnAttention::Forward(const __nv_bfloat16* query, const __nv_bfloat16* keys,
                                     const __nv_bfloat16* values, __nv_bfloat16* out, float* stats,
                                     void* workspace) {
  return Run({{kAttentionQueryUid, query},
              {kAttentionKeyTransposedUid, keys},
              {kAttentionValueUid, values},
              {kAttentionOutputUid, out},
              {kAttentionStatsUid, stats}},
             workspace, "attention forward");
}

absl::Status CudnnAttention::Backward(const __nv_bfloat16* query, const __nv_bfloat16* keys,
                                      const __nv_bfloat16* values, const __nv_bfloat16* out,
                                      const __nv_bfloat16* d_out, const float* stats,
                                      __nv_bfloat16* d_query, __nv_bfloat16* d_keys,
                                      __nv_bfloat16* d_values, void* workspace) {
  return Run({{kAttentionQueryUid, query},
              {kAttentionKeyTransposedUid, keys},
              {kAttentionValueTransposedUid, values},
              {kAttentionOutputTokensUid, out},
              {kAttentionOutputGradientUid, d_out},
              {kAttentionStatsUid, stats},
              {kAttentionQueryGradientUid, d_query},
              {kAttentionKeyGradientUid, d_keys},
              {kAttentionValueGradientUid, d_values}},
             workspace, "attention backward");
}

absl::Status CudnnAttention::Run(const std::vector<Pointer>& pointers, void* workspace,
                                 const char* what) {
  // The pointers must be exactly the graph's bound tensors.
  std::map<int64_t, const void*> given;
  for (const Pointer& p : pointers) given[p.uid] = p.data;
  bool matches = given.size() == bound_.size();
  for (const Bound& b : bound_) matches = matches && given.count(b.uid) > 0;
  if (!matches) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " was called on a plan of another graph (", bound_.size(),
                     " bound tensors, ", given.size(), " given)"));
  }
  char* const workspace_tensors = static_cast<char*>(workspace) + plan_workspace_bytes_;
  // Below 9.6 cuDNN adds into the accumulated tensors without clearing them first.
  const bool clear_accumulated = cudnnGetVersion() < 90600;
  for (int64_t execution = 0; execution < executions_; ++execution) {
    std::vector<int64_t> uids;
    std::vector<void*> data;
    for (const Bound& b : bound_) {
      uids.push_back(b.uid);
      data.push_back(const_cast<char*>(static_cast<const char*>(given[b.uid])) + b.offset_bytes +
                     execution * b.execution_stride_bytes);
    }
    for (const WorkspaceTensor& t : workspace_tensors_) {
      uids.push_back(t.uid);
      data.push_back(workspace_tensors + t.offset);
      if (t.accumulated && clear_accumulated) {
        PT_RETURN_IF_ERROR(
            CudaStatus(cudaMemsetAsync(data.back(), 0, t.bytes, stream_),
                       absl::StrCat("cudaMemsetAsync(", what, " tensor ", t.uid, ")")));
      }
    }
    for (Scalar& scalar : scalars_) {
      uids.push_back(scalar.uid);
      data.push_back(scalar.bytes);
    }
    void* pack = nullptr;
    PT_RETURN_IF_ERROR(
        CudnnStatus(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack),
                    "cudnnBackendCreateDescriptor(variant pack)"));
    const Descriptor owned(pack);
    PT_RETURN_IF_ERROR(Set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                           static_cast<int64_t>(uids.size()), uids.data()));
    PT_RETURN_IF_ERROR(Set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                           static_cast<int64_t>(data.size()), data.data()));
    PT_RETURN_IF_ERROR(
        Set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace));
    PT_RETURN_IF_ERROR(Finalize(pack, "variant pack"));
    PT_RETURN_IF_ERROR(CudnnStatus(cudnnBackendExecute(handle_, plan_.get(), pack),
                                   absl::StrCat("cudnnBackendExecute(", what, ")")));
  }
  return absl::OkStatus();
}

}  // namespace paratune
