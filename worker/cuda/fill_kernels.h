// Deterministic pseudo-random contents for the probe's weights and token ids: never zeros,
// which run faster through the tensor cores than real data (docs/probe.md).
#ifndef PARATUNE_WORKER_CUDA_FILL_KERNELS_H_
#define PARATUNE_WORKER_CUDA_FILL_KERNELS_H_

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace paratune {

// data[i] = a value uniform in [-scale, scale) that depends on (seed, i) only.
cudaError_t FillUniformBf16(__nv_bfloat16* data, int64_t count, uint64_t seed, float scale,
                            cudaStream_t stream);

// data[i] = FillUniformBf16's value of index first + i for `seed`: elements [first, first +
// count) of what it fills, drawn apart (a rank's shard of sharded weights).
cudaError_t FillUniformBf16Slice(__nv_bfloat16* data, int64_t count, uint64_t seed, int64_t first,
                                 float scale, cudaStream_t stream);

// tokens[i] = a value uniform in [0, vocab) that depends on (seed, i) only.
cudaError_t FillTokens(int32_t* tokens, int64_t count, uint64_t seed, int32_t vocab,
                       cudaStream_t stream);

// to[i] = from[i] as fp32.
cudaError_t Bf16ToFloat(const __nv_bfloat16* from, float* to, int64_t count, cudaStream_t stream);

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_FILL_KERNELS_H_
