// cuDNN's fused attention forward: the graph of worker/probe/attention_graph.h built through
// cuDNN 9's backend API (descriptors for every tensor and operation, an operation graph, the
// engines heuristic mode A proposes, the first execution plan that finalizes), then run on
// the probe's buffers. On Hopper the plan is cuDNN's flash-attention kernel, the one
// Megatron-LM with Transformer Engine runs (docs/probe.md).
#ifndef PARATUNE_WORKER_CUDA_CUDNN_ATTENTION_H_
#define PARATUNE_WORKER_CUDA_CUDNN_ATTENTION_H_

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <cudnn_graph.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/probe/attention_graph.h"

namespace paratune {

// Not thread-safe: one per rank.
class CudnnAttention {
 public:
  // The plan of `graph` on the current device, enqueuing on `stream`, needing at most
  // `workspace_bytes` of workspace. UNIMPLEMENTED with cuDNN's reason when no engine runs the
  // graph (or none within the workspace); other errors as CudnnStatus (cuda_status.h).
  static absl::StatusOr<std::unique_ptr<CudnnAttention>> Create(const AttentionGraph& graph,
                                                                int64_t workspace_bytes,
                                                                cudaStream_t stream);
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  // Enqueues the forward pass: query, keys and values (layouts of attention_kernels.h) to
  // out (query layout) and stats (lse layout). `workspace` holds at least the
  // workspace_bytes given to Create; every pointer 16-byte aligned.
  absl::Status Forward(const __nv_bfloat16* query, const __nv_bfloat16* keys,
                       const __nv_bfloat16* values, __nv_bfloat16* out, float* stats,
                       void* workspace);

 private:
  struct DescriptorDeleter {
    void operator()(void* descriptor) const;
  };
  using Descriptor = std::unique_ptr<void, DescriptorDeleter>;
  struct Scalar {
    int64_t uid;
    float value;
  };

  CudnnAttention() = default;

  cudnnHandle_t handle_ = nullptr;
  // Every descriptor the plan was built from, kept for the plan's lifetime.
  std::vector<Descriptor> descriptors_;
  Descriptor plan_;
  // The by-value tensors: cuDNN reads them from host memory at each execution.
  std::vector<Scalar> scalars_;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_CUDNN_ATTENTION_H_
