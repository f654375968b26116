// Launch geometry shared by the probe's kernels.
#ifndef PARATUNE_WORKER_CUDA_LAUNCH_H_
#define PARATUNE_WORKER_CUDA_LAUNCH_H_

#include <algorithm>
#include <cstdint>

namespace paratune {

// Threads per block of the elementwise and per-row kernels.
inline constexpr int kThreadsPerBlock = 256;

// Blocks for a grid-stride loop over `count` elements: enough to fill an H100 (132 SMs x 16
// resident blocks of 256 threads) several times over, no more.
inline int GridBlocks(int64_t count) {
  const int64_t blocks = (count + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return static_cast<int>(std::clamp<int64_t>(blocks, 1, 132 * 16 * 4));
}

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_LAUNCH_H_
