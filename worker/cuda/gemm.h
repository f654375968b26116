// bf16 and fp8 matrix products through cuBLASLt, in row-major terms, with fp32 accumulation
// and bf16 or fp32 output. Plans (descriptors and the heuristic's algorithm) are cached per
// shape, so the per-layer products of every micro-batch cost one cublasLtMatmul each.
#ifndef PARATUNE_WORKER_CUDA_GEMM_H_
#define PARATUNE_WORKER_CUDA_GEMM_H_

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/probe/fp8_scaling.h"

namespace paratune {

enum class GemmOutput { kBf16, kFloat };

// C[m, n] = alpha op(A)[m, k] op(B)[k, n] + beta C, every matrix row-major. A is stored
// [m, k] (or [k, m] when transpose_a), B [k, n] (or [n, k] when transpose_b); lda, ldb and
// ldc are the stored row strides in elements. batch > 1 runs `batch` products whose
// matrices are stride_a, stride_b and stride_c elements apart.
struct GemmArgs {
  bool transpose_a = false;
  bool transpose_b = false;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  const __nv_bfloat16* a = nullptr;
  int64_t lda = 0;
  const __nv_bfloat16* b = nullptr;
  int64_t ldb = 0;
  void* c = nullptr;
  int64_t ldc = 0;
  GemmOutput c_type = GemmOutput::kBf16;
  float alpha = 1;
  float beta = 0;
  int64_t batch = 1;
  int64_t stride_a = 0;
  int64_t stride_b = 0;
  int64_t stride_c = 0;
};

// nn.Linear's three products for in [rows, inputs], weight [outputs, inputs],
// out [rows, outputs]:
// out = in weight^T.
GemmArgs LinearForward(const __nv_bfloat16* in, const __nv_bfloat16* weight, __nv_bfloat16* out,
                       int64_t rows, int64_t outputs, int64_t inputs);
// d_in = d_out weight.
GemmArgs LinearInputGradient(const __nv_bfloat16* d_out, const __nv_bfloat16* weight,
                             __nv_bfloat16* d_in, int64_t rows, int64_t outputs, int64_t inputs);
// d_weight += d_out^T in, accumulated into fp32 (or bf16) gradients.
GemmArgs LinearWeightGradient(const __nv_bfloat16* d_out, const __nv_bfloat16* in, void* d_weight,
                              bool fp32_gradient, int64_t rows, int64_t outputs, int64_t inputs);

// An fp8 tensor as a cast (fp8_kernels.h) left it: the bytes, their format and the factor
// that undoes the cast's scale (the tensor's scale inverse, one float of device memory).
struct Fp8Operand {
  const void* data = nullptr;
  Fp8Format format = Fp8Format::kE4M3;
  const float* scale_inverse = nullptr;
};

// C[m, n] = alpha (A[m, k] a.scale_inverse) (B[n, k] b.scale_inverse)^T + beta C, every
// matrix row-major: the one shape cuBLASLt's fp8 kernels take, both operands k-contiguous
// ("TN" in cuBLAS's column-major terms, cublasLtMatmul's documented fp8 requirement).
// cuBLASLt also requires k, lda and ldb to be multiples of 16, 16-byte aligned operands and
// scale inverses (kFp8ScaleInverseAlignment), and not both operands E5M2.
struct Fp8GemmArgs {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  Fp8Operand a;
  int64_t lda = 0;
  Fp8Operand b;
  int64_t ldb = 0;
  void* c = nullptr;
  int64_t ldc = 0;
  GemmOutput c_type = GemmOutput::kBf16;
  float alpha = 1;
  float beta = 0;
  // cuBLASLt's fp8 fast accumulation, which promotes partial sums to fp32 less often.
  // Transformer Engine uses it for the forward product only (_2X_ACC_FPROP = False in
  // transformer_engine/pytorch/module/base.py; dgrad and wgrad accumulate in two levels).
  bool fast_accumulation = false;
};

// nn.Linear's three products in fp8, from the casts of Transformer Engine's Linear: in
// [rows, inputs] and weight [outputs, inputs] in E4M3, d_out [rows, outputs] in E5M2 (format
// HYBRID), each transposed copy `_t` holding the transpose that cuBLASLt's layout rule needs.
// out = in weight^T, with fast accumulation.
Fp8GemmArgs Fp8LinearForward(const Fp8Operand& in, const Fp8Operand& weight, __nv_bfloat16* out,
                             int64_t rows, int64_t outputs, int64_t inputs);
// d_in = d_out weight = d_out (weight_t)^T.
Fp8GemmArgs Fp8LinearInputGradient(const Fp8Operand& d_out, const Fp8Operand& weight_t,
                                   __nv_bfloat16* d_in, int64_t rows, int64_t outputs,
                                   int64_t inputs);
// d_weight += d_out^T in = d_out_t (in_t)^T, accumulated into fp32 (or bf16) gradients.
Fp8GemmArgs Fp8LinearWeightGradient(const Fp8Operand& d_out_t, const Fp8Operand& in_t,
                                    void* d_weight, bool fp32_gradient, int64_t rows,
                                    int64_t outputs, int64_t inputs);

// One per GPU and stream user; not thread-safe.
class Gemm {
 public:
  // A cuBLASLt handle on the current device using `workspace` (device memory of
  // workspace_bytes, kept by the caller). INTERNAL or UNAVAILABLE when cuBLASLt cannot start.
  static absl::StatusOr<std::unique_ptr<Gemm>> Create(void* workspace, int64_t workspace_bytes);
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;
  ~Gemm();

  // Enqueues the product on `stream`. Nothing for an empty product. INTERNAL naming the
  // shape when cuBLASLt has no algorithm for it or fails.
  absl::Status Run(const GemmArgs& args, cudaStream_t stream);

  // Enqueues the fp8 product on `stream` (a GPU of compute capability 8.9 or later).
  // Nothing for an empty product. INVALID_ARGUMENT naming the field for arguments that break
  // cuBLASLt's fp8 rules above; INTERNAL naming the shape when cuBLASLt has no algorithm for
  // it or fails.
  absl::Status RunFp8(const Fp8GemmArgs& args, cudaStream_t stream);

  // The products enqueued so far (an empty one is not): what steps ran, for checks against
  // their plans.
  int64_t products() const { return products_; }

 private:
  struct Product;
  struct Plan;
  using PlanKey = std::array<int64_t, 21>;

  Gemm(cublasLtHandle_t handle, void* workspace, int64_t workspace_bytes);
  absl::StatusOr<Plan*> PlanFor(const Product& product);
  absl::Status Multiply(const Product& product, cudaStream_t stream);

  cublasLtHandle_t handle_;
  void* workspace_;
  int64_t workspace_bytes_;
  std::map<PlanKey, std::unique_ptr<Plan>> plans_;
  int64_t products_ = 0;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_GEMM_H_
