#include "estimator/torchtitan_memory.h"

namespace paratune {
namespace {

constexpr double kBf16Bytes = 2;
constexpr double kFp32Bytes = 4;

}  // namespace

double TorchTitanSelectiveLayerBytes(const ConfigSymbols& x) {
  const double tokens = x.s * x.b / (x.t * x.c);
  const double saved_bf16_values =
      x.h + x.attention_width + x.kv_width + x.f + x.h + x.attention_width;
  return tokens * (kBf16Bytes * saved_bf16_values + kFp32Bytes * x.a);
}

double TorchTitanLossBytes(const ConfigSymbols& x) {
  const double tokens = x.s * x.b / x.c;
  const double logits = tokens * x.V / x.t;
  return kBf16Bytes * tokens * x.h + kBf16Bytes * logits + 3 * kFp32Bytes * logits;
}

}  // namespace paratune
