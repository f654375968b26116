#include "estimator/torchtitan_memory.h"

#include <algorithm>

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

double TorchTitanPipelineBufferBytes(const ConfigSymbols& x, double rank, double chunks_in_flight) {
  const double boundary = kBf16Bytes * x.s * x.b * x.h / (x.t * x.c);
  const bool first = rank == 0;
  const bool last = rank == x.p - 1;
  // Local stages that receive their input, and those whose output is a boundary tensor (and
  // so receive its gradient): all v but the model's first and last stage.
  const double receiving = x.v - (first ? 1 : 0);
  const double sending = x.v - (last ? 1 : 0);
  // The chunks in flight on the receiving stages hold their received inputs as layer inputs
  // already (an even share of the rank's chunks when v > 1).
  const double idle_inputs = std::max(0.0, receiving * x.m - chunks_in_flight * receiving / x.v);
  const double gradients = sending * x.m;
  const double outputs = sending * x.m;
  double bytes = boundary * (idle_inputs + gradients + outputs);
  if (last) bytes += (x.m - 1) * kBf16Bytes * x.s * x.b * x.V / (x.t * x.c);
  return bytes;
}

double TorchTitanExpandedKeyValueBytes(const ConfigSymbols& x) {
  constexpr double kKeysAndValues = 2;
  return kKeysAndValues * kBf16Bytes * (x.s * x.b / (x.t * x.c)) * (x.attention_width - x.kv_width);
}

}  // namespace paratune
