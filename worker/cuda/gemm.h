// bf16 matrix products through cuBLASLt, in row-major terms, with fp32 accumulation and
// bf16 or fp32 output. Plans (descriptors and the heuristic's algorithm) are cached per
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

 private:
  struct Plan;
  using PlanKey = std::array<int64_t, 17>;

  Gemm(cublasLtHandle_t handle, void* workspace, int64_t workspace_bytes);
  absl::StatusOr<const Plan*> PlanFor(const GemmArgs& args, const PlanKey& key);

  cublasLtHandle_t handle_;
  void* workspace_;
  int64_t workspace_bytes_;
  std::map<PlanKey, std::unique_ptr<Plan>> plans_;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_GEMM_H_
