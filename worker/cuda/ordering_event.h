// The CUDA events the probe orders its streams with (a collective stream waiting on the
// compute stream's work so far, or the compute stream on a collective): recorded and waited
// on, never timed, so created without timing, which makes both cheaper. Timed events are
// phase_timer.h's.
#ifndef PARATUNE_WORKER_CUDA_ORDERING_EVENT_H_
#define PARATUNE_WORKER_CUDA_ORDERING_EVENT_H_

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace paratune {

// Creates `*event`; CudaStatus's error naming the call and `purpose` ("context-parallel ring").
absl::Status NewOrderingEvent(absl::string_view purpose, cudaEvent_t* event);

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_ORDERING_EVENT_H_
