#include "worker/cuda/ordering_event.h"

#include "absl/strings/str_cat.h"
#include "worker/cuda/cuda_status.h"

namespace paratune {

absl::Status NewOrderingEvent(absl::string_view purpose, cudaEvent_t* event) {
  return CudaStatus(cudaEventCreateWithFlags(event, cudaEventDisableTiming),
                    absl::StrCat("cudaEventCreateWithFlags(", purpose, ")"));
}

}  // namespace paratune
