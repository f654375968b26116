#include "worker/cuda/gemm.h"

#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/cuda/cuda_status.h"

namespace paratune {
namespace {

// The largest power of two dividing the address, up to cuBLASLt's default 256: the
// heuristic then only offers kernels that accept the pointer.
int64_t AlignmentOf(const void* pointer) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(pointer);
  int64_t alignment = 256;
  while (alignment > 1 && address % static_cast<uintptr_t>(alignment) != 0) alignment /= 2;
  return alignment;
}

std::string Describe(const GemmArgs& g) {
  return absl::StrCat("GEMM m ", g.m, " n ", g.n, " k ", g.k, " (transpose a ", g.transpose_a,
                      " b ", g.transpose_b, ", lda ", g.lda, " ldb ", g.ldb, " ldc ", g.ldc,
                      ", batch ", g.batch, ", ", g.c_type == GemmOutput::kFloat ? "fp32" : "bf16",
                      " out)");
}

absl::Status SetLayout(cublasLtMatrixLayout_t layout, int64_t batch, int64_t stride) {
  if (batch == 1) return absl::OkStatus();
  const int32_t count = static_cast<int32_t>(batch);
  PT_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                    &count, sizeof(count)),
                   "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)"));
  return CublasStatus(
      cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                       sizeof(stride)),
      "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
}

}  // namespace

// cuBLASLt is column-major: the row-major C = op(A) op(B) is computed as the column-major
// C^T = op(B)^T op(A)^T, whose operands are the stored B and A as they lie in memory.
struct Gemm::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t first = nullptr;   // B's storage, column-major view
  cublasLtMatrixLayout_t second = nullptr;  // A's storage
  cublasLtMatrixLayout_t output = nullptr;
  cublasLtMatmulAlgo_t algorithm;

  ~Plan() {
    if (output != nullptr) cublasLtMatrixLayoutDestroy(output);
    if (second != nullptr) cublasLtMatrixLayoutDestroy(second);
    if (first != nullptr) cublasLtMatrixLayoutDestroy(first);
    if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
  }
};

GemmArgs LinearForward(const __nv_bfloat16* in, const __nv_bfloat16* weight, __nv_bfloat16* out,
                       int64_t rows, int64_t outputs, int64_t inputs) {
  GemmArgs g;
  g.transpose_b = true;
  g.m = rows;
  g.n = outputs;
  g.k = inputs;
  g.a = in;
  g.lda = inputs;
  g.b = weight;
  g.ldb = inputs;
  g.c = out;
  g.ldc = outputs;
  return g;
}

GemmArgs LinearInputGradient(const __nv_bfloat16* d_out, const __nv_bfloat16* weight,
                             __nv_bfloat16* d_in, int64_t rows, int64_t outputs, int64_t inputs) {
  GemmArgs g;
  g.m = rows;
  g.n = inputs;
  g.k = outputs;
  g.a = d_out;
  g.lda = outputs;
  g.b = weight;
  g.ldb = inputs;
  g.c = d_in;
  g.ldc = inputs;
  return g;
}

GemmArgs LinearWeightGradient(const __nv_bfloat16* d_out, const __nv_bfloat16* in, void* d_weight,
                              bool fp32_gradient, int64_t rows, int64_t outputs, int64_t inputs) {
  GemmArgs g;
  g.transpose_a = true;
  g.m = outputs;
  g.n = inputs;
  g.k = rows;
  g.a = d_out;
  g.lda = outputs;
  g.b = in;
  g.ldb = inputs;
  g.c = d_weight;
  g.ldc = inputs;
  g.c_type = fp32_gradient ? GemmOutput::kFloat : GemmOutput::kBf16;
  g.beta = 1;
  return g;
}

absl::StatusOr<std::unique_ptr<Gemm>> Gemm::Create(void* workspace, int64_t workspace_bytes) {
  cublasLtHandle_t handle;
  PT_RETURN_IF_ERROR(CublasStatus(cublasLtCreate(&handle), "cublasLtCreate"));
  return std::unique_ptr<Gemm>(new Gemm(handle, workspace, workspace_bytes));
}

Gemm::Gemm(cublasLtHandle_t handle, void* workspace, int64_t workspace_bytes)
    : handle_(handle), workspace_(workspace), workspace_bytes_(workspace_bytes) {}

Gemm::~Gemm() {
  plans_.clear();
  cublasLtDestroy(handle_);
}

absl::StatusOr<const Gemm::Plan*> Gemm::PlanFor(const GemmArgs& g, const PlanKey& key) {
  auto found = plans_.find(key);
  if (found != plans_.end()) return found->second.get();

  auto plan = std::make_unique<Plan>();
  const cudaDataType_t c_type = g.c_type == GemmOutput::kFloat ? CUDA_R_32F : CUDA_R_16BF;
  PT_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                   "cublasLtMatmulDescCreate"));
  const cublasOperation_t first_op = g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t second_op = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  PT_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                                  &first_op, sizeof(first_op)),
                   "cublasLtMatmulDescSetAttribute(TRANSA)"));
  PT_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                                  &second_op, sizeof(second_op)),
                   "cublasLtMatmulDescSetAttribute(TRANSB)"));
  // Column-major views: B stored [k, n] (or [n, k]) row-major is [n, k] (or [k, n]) here.
  PT_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatrixLayoutCreate(&plan->first, CUDA_R_16BF, g.transpose_b ? g.k : g.n,
                                              g.transpose_b ? g.n : g.k, g.ldb),
                   "cublasLtMatrixLayoutCreate(B)"));
  PT_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatrixLayoutCreate(&plan->second, CUDA_R_16BF, g.transpose_a ? g.m : g.k,
                                              g.transpose_a ? g.k : g.m, g.lda),
                   "cublasLtMatrixLayoutCreate(A)"));
  PT_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatrixLayoutCreate(&plan->output, c_type, g.n, g.m, g.ldc),
                   "cublasLtMatrixLayoutCreate(C)"));
  PT_RETURN_IF_ERROR(SetLayout(plan->first, g.batch, g.stride_b));
  PT_RETURN_IF_ERROR(SetLayout(plan->second, g.batch, g.stride_a));
  PT_RETURN_IF_ERROR(SetLayout(plan->output, g.batch, g.stride_c));

  cublasLtMatmulPreference_t preference;
  PT_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate"));
  const uint64_t workspace_bytes = static_cast<uint64_t>(workspace_bytes_);
  const uint32_t alignment_b = static_cast<uint32_t>(key[13]);
  const uint32_t alignment_a = static_cast<uint32_t>(key[14]);
  const uint32_t alignment_c = static_cast<uint32_t>(key[15]);
  const struct {
    cublasLtMatmulPreferenceAttributes_t attribute;
    const void* value;
    size_t size;
  } preferences[] = {
      {CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes, sizeof(workspace_bytes)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignment_b, sizeof(alignment_b)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignment_a, sizeof(alignment_a)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignment_c, sizeof(alignment_c)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignment_c, sizeof(alignment_c)},
  };
  absl::Status status;
  for (const auto& p : preferences) {
    status =
        CublasStatus(cublasLtMatmulPreferenceSetAttribute(preference, p.attribute, p.value, p.size),
                     "cublasLtMatmulPreferenceSetAttribute");
    if (!status.ok()) break;
  }
  cublasLtMatmulHeuristicResult_t heuristic;
  int found_algorithms = 0;
  if (status.ok()) {
    status = CublasStatus(
        cublasLtMatmulAlgoGetHeuristic(handle_, plan->desc, plan->first, plan->second, plan->output,
                                       plan->output, preference, 1, &heuristic, &found_algorithms),
        absl::StrCat("cublasLtMatmulAlgoGetHeuristic for ", Describe(g)));
  }
  cublasLtMatmulPreferenceDestroy(preference);
  PT_RETURN_IF_ERROR(status);
  if (found_algorithms == 0) {
    return absl::InternalError(absl::StrCat("cuBLASLt has no algorithm for ", Describe(g)));
  }
  plan->algorithm = heuristic.algo;
  const Plan* result = plan.get();
  plans_.emplace(key, std::move(plan));
  return result;
}

absl::Status Gemm::Run(const GemmArgs& g, cudaStream_t stream) {
  if (g.m == 0 || g.n == 0 || g.k == 0 || g.batch == 0) return absl::OkStatus();
  const PlanKey key = {g.transpose_a,
                       g.transpose_b,
                       g.m,
                       g.n,
                       g.k,
                       g.lda,
                       g.ldb,
                       g.ldc,
                       static_cast<int64_t>(g.c_type),
                       g.batch,
                       g.stride_a,
                       g.stride_b,
                       g.stride_c,
                       AlignmentOf(g.b),
                       AlignmentOf(g.a),
                       AlignmentOf(g.c),
                       g.beta != 0};
  PT_ASSIGN_OR_RETURN(const Plan* plan, PlanFor(g, key));
  const cublasStatus_t status =
      cublasLtMatmul(handle_, plan->desc, &g.alpha, g.b, plan->first, g.a, plan->second, &g.beta,
                     g.c, plan->output, g.c, plan->output, &plan->algorithm, workspace_,
                     static_cast<size_t>(workspace_bytes_), stream);
  // The description is built only on failure: Run is on the probe's hot path.
  if (status != CUBLAS_STATUS_SUCCESS) return CublasStatus(status, Describe(g));
  return absl::OkStatus();
}

}  // namespace paratune
