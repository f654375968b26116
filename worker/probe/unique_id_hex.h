// NCCL's unique id as text: gang[0]'s probe writes it, the scheduler relays it between
// workers as the rendezvous token, and the other members' probes read it (--nccl_id).
#ifndef PARATUNE_WORKER_PROBE_UNIQUE_ID_HEX_H_
#define PARATUNE_WORKER_PROBE_UNIQUE_ID_HEX_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace paratune {

// Lower-case hex of `bytes`.
std::string EncodeUniqueId(absl::string_view bytes);

// The bytes of `hex`, which must be 2 x `size` hex digits; INVALID_ARGUMENT naming the flag
// --nccl_id otherwise.
absl::StatusOr<std::string> DecodeUniqueId(absl::string_view hex, size_t size);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_UNIQUE_ID_HEX_H_
