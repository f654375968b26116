#include "worker/cuda/context_ring_transport.h"

#include <vector>

#include "worker/cuda/communicators.h"
#include "worker/probe/context_parallel_ring.h"

namespace paratune {

absl::Status NcclRingTransport::Exchange(const RingExchange& exchange, cudaStream_t stream) {
  const int next = static_cast<int>(RingNext(context_parallel_, rank_));
  const int previous = static_cast<int>(RingPrevious(context_parallel_, rank_));
  std::vector<PeerTransfer> transfers;
  auto add = [&](bool send, const void* buffer, int64_t bytes) {
    if (buffer == nullptr) return;
    // PeerTransfer holds a buffer of either direction; a send only reads it.
    transfers.push_back({send, send ? next : previous, const_cast<void*>(buffer), bytes});
  };
  add(true, exchange.send_key_values, exchange.key_value_bytes);
  add(false, exchange.receive_key_values, exchange.key_value_bytes);
  add(true, exchange.send_gradients, exchange.gradient_bytes);
  add(false, exchange.receive_gradients, exchange.gradient_bytes);
  return SendReceive(comm_, transfers, ncclUint8, stream);
}

}  // namespace paratune
