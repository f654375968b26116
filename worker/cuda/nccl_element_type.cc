#include "worker/cuda/nccl_element_type.h"

namespace paratune {

ncclDataType_t NcclTypeOf(ElementType type) {
  switch (type) {
    case ElementType::kBf16:
      return ncclBfloat16;
    case ElementType::kFloat32:
      return ncclFloat32;
    case ElementType::kE4M3:
    case ElementType::kE5M2:
    case ElementType::kUint8:
      return ncclUint8;
  }
  return ncclUint8;
}

}  // namespace paratune
