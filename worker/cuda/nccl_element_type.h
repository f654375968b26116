// The NCCL data type of a probe buffer's elements (worker/probe/step_ops.h ElementType), for
// the collectives that move them.
#ifndef PARATUNE_WORKER_CUDA_NCCL_ELEMENT_TYPE_H_
#define PARATUNE_WORKER_CUDA_NCCL_ELEMENT_TYPE_H_

#include <nccl.h>

#include "worker/probe/step_ops.h"

namespace paratune {

// ncclBfloat16 or ncclFloat32; ncclUint8 for the one-byte fp8 and uint8 payloads, which NCCL
// moves as bytes (a collective's count is then their bytes).
ncclDataType_t NcclTypeOf(ElementType type);

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_NCCL_ELEMENT_TYPE_H_
