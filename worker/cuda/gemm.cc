#include "worker/cuda/gemm.h"

#include <cstdint>
#include <string>
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

const char* TypeName(cudaDataType_t type) {
  switch (type) {
    case CUDA_R_8F_E4M3:
      return "e4m3";
    case CUDA_R_8F_E5M2:
      return "e5m2";
    case CUDA_R_16BF:
      return "bf16";
    default:
      return "fp32";
  }
}

cudaDataType_t OutputType(GemmOutput output) {
  return output == GemmOutput::kFloat ? CUDA_R_32F : CUDA_R_16BF;
}

cudaDataType_t Fp8Type(Fp8Format format) {
  return format == Fp8Format::kE4M3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2;
}

// cuBLASLt's fp8 kernels read operands, leading dimensions and scale inverses in 16-byte units.
constexpr int64_t kFp8Alignment = 16;
static_assert(kFp8Alignment == kFp8ScaleInverseAlignment);

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

// Sets the fp8 dequantization factors of row-major A and B. cuBLASLt's A is our B (see Plan).
absl::Status SetScales(cublasLtMatmulDesc_t desc, const float* a_scale_inverse,
                       const float* b_scale_inverse) {
  PT_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                                  &b_scale_inverse, sizeof(b_scale_inverse)),
                   "cublasLtMatmulDescSetAttribute(A_SCALE_POINTER)"));
  return CublasStatus(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                                     &a_scale_inverse, sizeof(a_scale_inverse)),
                      "cublasLtMatmulDescSetAttribute(B_SCALE_POINTER)");
}

}  // namespace

// A bf16 or fp8 product in row-major terms, as GemmArgs describes it, with the operand types
// and the fp8 dequantization factors.
struct Gemm::Product {
  bool transpose_a = false;
  bool transpose_b = false;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  cudaDataType_t a_type = CUDA_R_16BF;
  cudaDataType_t b_type = CUDA_R_16BF;
  cudaDataType_t c_type = CUDA_R_16BF;
  const void* a = nullptr;
  int64_t lda = 0;
  const void* b = nullptr;
  int64_t ldb = 0;
  void* c = nullptr;
  int64_t ldc = 0;
  float alpha = 1;
  float beta = 0;
  int64_t batch = 1;
  int64_t stride_a = 0;
  int64_t stride_b = 0;
  int64_t stride_c = 0;
  bool fast_accumulation = false;
  const float* a_scale_inverse = nullptr;
  const float* b_scale_inverse = nullptr;

  bool fp8() const { return a_type != CUDA_R_16BF; }

  std::string Describe() const {
    return absl::StrCat("GEMM m ", m, " n ", n, " k ", k, " (transpose a ", transpose_a, " b ",
                        transpose_b, ", lda ", lda, " ldb ", ldb, " ldc ", ldc, ", batch ", batch,
                        ", ", TypeName(a_type), " x ", TypeName(b_type), " -> ", TypeName(c_type),
                        " out)");
  }
};

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

Fp8GemmArgs Fp8LinearForward(const Fp8Operand& in, const Fp8Operand& weight, __nv_bfloat16* out,
                             int64_t rows, int64_t outputs, int64_t inputs) {
  Fp8GemmArgs g;
  g.m = rows;
  g.n = outputs;
  g.k = inputs;
  g.a = in;
  g.lda = inputs;
  g.b = weight;
  g.ldb = inputs;
  g.c = out;
  g.ldc = outputs;
  g.fast_accumulation = true;
  return g;
}

Fp8GemmArgs Fp8LinearInputGradient(const Fp8Operand& d_out, const Fp8Operand& weight_t,
                                   __nv_bfloat16* d_in, int64_t rows, int64_t outputs,
                                   int64_t inputs) {
  Fp8GemmArgs g;
  g.m = rows;
  g.n = inputs;
  g.k = outputs;
  g.a = d_out;
  g.lda = outputs;
  g.b = weight_t;
  g.ldb = outputs;
  g.c = d_in;
  g.ldc = inputs;
  return g;
}

Fp8GemmArgs Fp8LinearWeightGradient(const Fp8Operand& d_out_t, const Fp8Operand& in_t,
                                    void* d_weight, bool fp32_gradient, int64_t rows,
                                    int64_t outputs, int64_t inputs) {
  Fp8GemmArgs g;
  g.m = outputs;
  g.n = inputs;
  g.k = rows;
  g.a = d_out_t;
  g.lda = rows;
  g.b = in_t;
  g.ldb = rows;
  g.c = d_weight;
  g.ldc = inputs;
  g.c_type = fp32_gradient ? GemmOutput::kFloat : GemmOutput::kBf16;
  g.beta = 1;
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

absl::StatusOr<Gemm::Plan*> Gemm::PlanFor(const Product& g) {
  const int64_t alignment_b = AlignmentOf(g.b);
  const int64_t alignment_a = AlignmentOf(g.a);
  const int64_t alignment_c = AlignmentOf(g.c);
  const PlanKey key = {g.transpose_a,
                       g.transpose_b,
                       g.m,
                       g.n,
                       g.k,
                       g.lda,
                       g.ldb,
                       g.ldc,
                       g.a_type,
                       g.b_type,
                       g.c_type,
                       g.batch,
                       g.stride_a,
                       g.stride_b,
                       g.stride_c,
                       alignment_b,
                       alignment_a,
                       alignment_c,
                       g.beta != 0,
                       g.fast_accumulation,
                       g.a_scale_inverse != nullptr};
  auto found = plans_.find(key);
  if (found != plans_.end()) return found->second.get();

  auto plan = std::make_unique<Plan>();
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
  if (g.fp8()) {
    const int8_t fast_accumulation = g.fast_accumulation ? 1 : 0;
    PT_RETURN_IF_ERROR(
        CublasStatus(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM,
                                                    &fast_accumulation, sizeof(fast_accumulation)),
                     "cublasLtMatmulDescSetAttribute(FAST_ACCUM)"));
    PT_RETURN_IF_ERROR(SetScales(plan->desc, g.a_scale_inverse, g.b_scale_inverse));
  }
  // Column-major views: B stored [k, n] (or [n, k]) row-major is [n, k] (or [k, n]) here.
  PT_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatrixLayoutCreate(&plan->first, g.b_type, g.transpose_b ? g.k : g.n,
                                              g.transpose_b ? g.n : g.k, g.ldb),
                   "cublasLtMatrixLayoutCreate(B)"));
  PT_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatrixLayoutCreate(&plan->second, g.a_type, g.transpose_a ? g.m : g.k,
                                              g.transpose_a ? g.k : g.m, g.lda),
                   "cublasLtMatrixLayoutCreate(A)"));
  PT_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatrixLayoutCreate(&plan->output, g.c_type, g.n, g.m, g.ldc),
                   "cublasLtMatrixLayoutCreate(C)"));
  PT_RETURN_IF_ERROR(SetLayout(plan->first, g.batch, g.stride_b));
  PT_RETURN_IF_ERROR(SetLayout(plan->second, g.batch, g.stride_a));
  PT_RETURN_IF_ERROR(SetLayout(plan->output, g.batch, g.stride_c));

  cublasLtMatmulPreference_t preference;
  PT_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate"));
  const uint64_t workspace_bytes = static_cast<uint64_t>(workspace_bytes_);
  const uint32_t first_alignment = static_cast<uint32_t>(alignment_b);
  const uint32_t second_alignment = static_cast<uint32_t>(alignment_a);
  const uint32_t output_alignment = static_cast<uint32_t>(alignment_c);
  const struct {
    cublasLtMatmulPreferenceAttributes_t attribute;
    const void* value;
    size_t size;
  } preferences[] = {
      {CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes, sizeof(workspace_bytes)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &first_alignment, sizeof(first_alignment)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &second_alignment, sizeof(second_alignment)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &output_alignment, sizeof(output_alignment)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &output_alignment, sizeof(output_alignment)},
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
        absl::StrCat("cublasLtMatmulAlgoGetHeuristic for ", g.Describe()));
  }
  cublasLtMatmulPreferenceDestroy(preference);
  PT_RETURN_IF_ERROR(status);
  if (found_algorithms == 0) {
    return absl::InternalError(absl::StrCat("cuBLASLt has no algorithm for ", g.Describe()));
  }
  plan->algorithm = heuristic.algo;
  Plan* result = plan.get();
  plans_.emplace(key, std::move(plan));
  return result;
}

absl::Status Gemm::Multiply(const Product& g, cudaStream_t stream) {
  if (g.m == 0 || g.n == 0 || g.k == 0 || g.batch == 0) return absl::OkStatus();
  PT_ASSIGN_OR_RETURN(Plan * plan, PlanFor(g));
  // The dequantization factors are per call (each tensor has its own); setting them on the
  // cached descriptor is a host-side store.
  if (g.fp8()) {
    PT_RETURN_IF_ERROR(SetScales(plan->desc, g.a_scale_inverse, g.b_scale_inverse));
  }
  const cublasStatus_t status =
      cublasLtMatmul(handle_, plan->desc, &g.alpha, g.b, plan->first, g.a, plan->second, &g.beta,
                     g.c, plan->output, g.c, plan->output, &plan->algorithm, workspace_,
                     static_cast<size_t>(workspace_bytes_), stream);
  // The description is built only on failure: Multiply is on the probe's hot path.
  if (status != CUBLAS_STATUS_SUCCESS) return CublasStatus(status, g.Describe());
  ++products_;
  return absl::OkStatus();
}

absl::Status Gemm::Run(const GemmArgs& args, cudaStream_t stream) {
  Product g;
  g.transpose_a = args.transpose_a;
  g.transpose_b = args.transpose_b;
  g.m = args.m;
  g.n = args.n;
  g.k = args.k;
  g.c_type = OutputType(args.c_type);
  g.a = args.a;
  g.lda = args.lda;
  g.b = args.b;
  g.ldb = args.ldb;
  g.c = args.c;
  g.ldc = args.ldc;
  g.alpha = args.alpha;
  g.beta = args.beta;
  g.batch = args.batch;
  g.stride_a = args.stride_a;
  g.stride_b = args.stride_b;
  g.stride_c = args.stride_c;
  return Multiply(g, stream);
}

absl::Status Gemm::RunFp8(const Fp8GemmArgs& args, cudaStream_t stream) {
  if (args.a.format == Fp8Format::kE5M2 && args.b.format == Fp8Format::kE5M2) {
    return absl::InvalidArgumentError(
        "fp8 GEMM a.format and b.format are both E5M2, which cuBLASLt does not multiply");
  }
  for (const auto& [field, value] : {std::make_pair("k", args.k), std::make_pair("lda", args.lda),
                                     std::make_pair("ldb", args.ldb)}) {
    if (value % kFp8Alignment != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("fp8 GEMM ", field, " (", value, ") must be a multiple of ", kFp8Alignment));
    }
  }
  const std::pair<const char*, const void*> pointers[] = {
      {"a.data", args.a.data},
      {"b.data", args.b.data},
      {"a.scale_inverse", args.a.scale_inverse},
      {"b.scale_inverse", args.b.scale_inverse}};
  for (const auto& [field, pointer] : pointers) {
    if (AlignmentOf(pointer) < kFp8Alignment) {
      return absl::InvalidArgumentError(
          absl::StrCat("fp8 GEMM ", field, " must be ", kFp8Alignment, "-byte aligned"));
    }
  }
  Product g;
  g.transpose_b = true;
  g.m = args.m;
  g.n = args.n;
  g.k = args.k;
  g.a_type = Fp8Type(args.a.format);
  g.b_type = Fp8Type(args.b.format);
  g.c_type = OutputType(args.c_type);
  g.a = args.a.data;
  g.lda = args.lda;
  g.b = args.b.data;
  g.ldb = args.ldb;
  g.c = args.c;
  g.ldc = args.ldc;
  g.alpha = args.alpha;
  g.beta = args.beta;
  g.fast_accumulation = args.fast_accumulation;
  g.a_scale_inverse = args.a.scale_inverse;
  g.b_scale_inverse = args.b.scale_inverse;
  return Multiply(g, stream);
}

}  // namespace paratune
