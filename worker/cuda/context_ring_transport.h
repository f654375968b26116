// The point-to-point exchanges of context parallelism's ring (worker/probe/
// context_parallel_ring.h): keys and values, and their accumulating gradients, sent to the
// next context rank and received from the previous one in one NCCL group, as Transformer
// Engine's flash_attn_p2p_communicate posts them (transformer_engine/pytorch/attention/
// dot_product_attention/context_parallel.py). An interface so that a one-GPU test can stand
// in for the other ranks: NCCL refuses two ranks of one communicator on one GPU.
#ifndef PARATUNE_WORKER_CUDA_CONTEXT_RING_TRANSPORT_H_
#define PARATUNE_WORKER_CUDA_CONTEXT_RING_TRANSPORT_H_

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>

#include "absl/status/status.h"

namespace paratune {

// One exchange; a null pointer moves nothing that way. Buffers are device memory that stays
// untouched until the exchange is done on its stream.
struct RingExchange {
  const void* send_key_values = nullptr;  // to the next rank, key_value_bytes
  void* receive_key_values = nullptr;     // from the previous rank, key_value_bytes
  int64_t key_value_bytes = 0;
  const void* send_gradients = nullptr;  // to the next rank, gradient_bytes
  void* receive_gradients = nullptr;     // from the previous rank, gradient_bytes
  int64_t gradient_bytes = 0;
};

// Not thread-safe: one per rank.
class RingTransport {
 public:
  virtual ~RingTransport() = default;
  // Enqueues `exchange` on `stream`; every rank of the ring enqueues the same sequence of
  // exchanges. Returns the transport's error.
  virtual absl::Status Exchange(const RingExchange& exchange, cudaStream_t stream) = 0;
};

// Over the context communicator: one ncclGroupStart/End of ncclSend and ncclRecv
// (communicators.h SendReceive), in bytes: point-to-point transfers do no arithmetic.
class NcclRingTransport : public RingTransport {
 public:
  // `comm` has `context_parallel` ranks, this one `rank`; borrowed.
  NcclRingTransport(ncclComm_t comm, int64_t context_parallel, int64_t rank)
      : comm_(comm), context_parallel_(context_parallel), rank_(rank) {}

  // NcclStatus's error of the group.
  absl::Status Exchange(const RingExchange& exchange, cudaStream_t stream) override;

 private:
  ncclComm_t comm_;
  int64_t context_parallel_;
  int64_t rank_;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_CONTEXT_RING_TRANSPORT_H_
