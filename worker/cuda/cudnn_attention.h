// cuDNN's fused attention, forward and backward: a graph of worker/probe/attention_graph.h
// built through cuDNN 9's backend API (descriptors for every tensor and operation, an
// operation graph, the engines heuristic mode A proposes, the first execution plan that
// finalizes within the workspace), then run on the probe's buffers. On Hopper the plans are
// cuDNN's flash-attention kernels, the ones Megatron-LM with Transformer Engine runs
// (docs/probe.md). One class builds either graph; Forward and Backward bind the tensors of
// the graph it was built from.
#ifndef PARATUNE_WORKER_CUDA_CUDNN_ATTENTION_H_
#define PARATUNE_WORKER_CUDA_CUDNN_ATTENTION_H_

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <cudnn_graph.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/probe/attention_graph.h"

namespace paratune {

// OK when cuDNN `version` (cudnnGetVersion()) can run the bf16 attention backward;
// UNIMPLEMENTED with the reason for 9.10.0 and 9.10.1, whose SDPA backward has known bugs
// (cudnn-frontend's CompositeSDPABackwardNode::pre_validate_node refuses them).
absl::Status CheckCudnnAttentionBackwardVersion(size_t version);

// Not thread-safe: one per rank and graph.
class CudnnAttention {
 public:
  // The plan of `graph` on the current device, enqueuing on `stream`, needing at most
  // `workspace_bytes` of workspace: cuDNN's own, rounded up to kGraphWorkspaceAlignment,
  // then the graph's workspace tensors. UNIMPLEMENTED with cuDNN's reason when no engine runs
  // the graph (or none within the workspace); other errors as CudnnStatus (cuda_status.h).
  static absl::StatusOr<std::unique_ptr<CudnnAttention>> Create(const AttentionGraph& graph,
                                                                int64_t workspace_bytes,
                                                                cudaStream_t stream);
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  // Enqueues the forward pass: query, keys and values (layouts of attention_kernels.h) to
  // out (query layout) and stats (lse layout), each pointer the layout's start (the graph
  // places a product's tokens). `workspace` holds at least the workspace_bytes given to
  // Create; every pointer 16-byte aligned.
  // FAILED_PRECONDITION when the plan is not of the forward graph.
  absl::Status Forward(const __nv_bfloat16* query, const __nv_bfloat16* keys,
                       const __nv_bfloat16* values, __nv_bfloat16* out, float* stats,
                       void* workspace);

  // Enqueues the backward pass of a plan of AttentionBackwardGraph, once per sequence:
  // query, keys, values (the forward's inputs), the forward's out and its gradient d_out
  // (tokens layout) and its stats (lse layout) to d_query (query layout) and bf16 d_keys,
  // d_values (kv layout). `workspace` as for Forward. FAILED_PRECONDITION when the plan is
  // not of the backward graph.
  absl::Status Backward(const __nv_bfloat16* query, const __nv_bfloat16* keys,
                        const __nv_bfloat16* values, const __nv_bfloat16* out,
                        const __nv_bfloat16* d_out, const float* stats, __nv_bfloat16* d_query,
                        __nv_bfloat16* d_keys, __nv_bfloat16* d_values, void* workspace);

 private:
  struct DescriptorDeleter {
    void operator()(void* descriptor) const;
  };
  using Descriptor = std::unique_ptr<void, DescriptorDeleter>;
  // A by-value tensor's value in its type's bytes (float or int32).
  struct Scalar {
    int64_t uid;
    alignas(8) unsigned char bytes[8];
  };
  // A tensor the caller binds: the bytes from its pointer to its element 0 (a product's
  // first query or key, GraphTensor::offset) and from one execution's part to the next's.
  struct Bound {
    int64_t uid;
    int64_t offset_bytes;
    int64_t execution_stride_bytes;
  };
  struct WorkspaceTensor {
    int64_t uid;
    int64_t offset;  // bytes after cuDNN's own workspace
    int64_t bytes;
    bool accumulated;
  };
  struct Pointer {
    int64_t uid;
    const void* data;
  };

  CudnnAttention() = default;

  // Runs every execution of the plan with `pointers` (exactly the bound tensors).
  absl::Status Run(const std::vector<Pointer>& pointers, void* workspace, const char* what);

  cudnnHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
  // Every descriptor the plan was built from, kept for the plan's lifetime.
  std::vector<Descriptor> descriptors_;
  Descriptor plan_;
  // The by-value tensors: cuDNN reads them from host memory at each execution.
  std::vector<Scalar> scalars_;
  std::vector<Bound> bound_;
  std::vector<WorkspaceTensor> workspace_tensors_;
  int64_t executions_ = 1;
  // cuDNN's own workspace, rounded up to kGraphWorkspaceAlignment.
  int64_t plan_workspace_bytes_ = 0;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_CUDNN_ATTENTION_H_
