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

double TorchTitanGatheredLinearInputBytes(const ConfigSymbols& x, double bytes_per_value) {
  constexpr double kGatheredInputs = 2;  // the attention's and the MLP's
  return kGatheredInputs * bytes_per_value * (x.s * x.b / x.c) * x.h * (1 - 1 / x.t);
}

double TorchTitanExpandedKeyValueBytes(const ConfigSymbols& x) {
  constexpr double kKeysAndValues = 2;
  return kKeysAndValues * kBf16Bytes * (x.s * x.b / (x.t * x.c)) * (x.attention_width - x.kv_width);
}

}  // namespace paratune
