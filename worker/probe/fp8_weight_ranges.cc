#include "worker/probe/fp8_weight_ranges.h"

#include <algorithm>

namespace paratune {

std::vector<Fp8WeightRange> Fp8WeightRangesIn(const ParameterLayout& parameters,
                                              const ShardShapes& shapes, int64_t start,
                                              int64_t end) {
  // LayoutParameters places each chunk's fp8 weights layer by layer in Fp8Linear order, so
  // visiting them so lists them in buffer order.
  std::vector<Fp8WeightRange> ranges;
  const int64_t chunks = static_cast<int64_t>(parameters.first_layer.size());
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const int64_t first = parameters.first_layer[chunk];
    const int64_t last = chunk + 1 < chunks ? parameters.first_layer[chunk + 1]
                                            : static_cast<int64_t>(parameters.layers.size());
    for (int64_t layer = first; layer < last; ++layer) {
      const LayerParameterOffsets& offsets = parameters.layers[layer];
      const int64_t weights[kFp8LinearsPerLayer] = {offsets.qkv, offsets.attention_output,
                                                    offsets.gate_up, offsets.down};
      for (int l = 0; l < kFp8LinearsPerLayer; ++l) {
        const Fp8Linear linear = static_cast<Fp8Linear>(l);
        if (!parameters.RegionOf(weights[l]).fp8) continue;
        const int64_t from = std::max(start, weights[l]);
        const int64_t to =
            std::min(end, weights[l] + LinearShapeOf(shapes, linear).WeightElements());
        if (from < to) ranges.push_back({chunk, layer - first, linear, from, to - from});
      }
    }
  }
  return ranges;
}

}  // namespace paratune
