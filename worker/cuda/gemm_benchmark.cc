// bf16 and fp8 GEMM throughput through the probe's cuBLASLt path (gemm.h), in TFLOP/s and as
// a fraction of the H100 SXM's dense peak (bf16 989 TFLOP/s, DESIGN.md §4; fp8 1979 TFLOP/s,
// NVIDIA's H100 datasheet, whose 3958 is with 2:4 sparsity): square products and the linear
// layers of a Llama-3.1-8B micro-batch of 8192 tokens. Times with CUDA
// events (manual time), inputs random (zeros run faster than real data). Runs on a GPU
// machine only (docs/probe.md).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

#include "benchmark/benchmark.h"
#include "worker/cuda/fill_kernels.h"
#include "worker/cuda/fp8_kernels.h"
#include "worker/cuda/gemm.h"
#include "worker/probe/footprint_plan.h"

namespace paratune {
namespace {

constexpr double kH100DenseBf16PeakFlops = 989e12;
constexpr double kH100DenseFp8PeakFlops = 1979e12;

// One product's device resources, released however the benchmark ends.
struct Resources {
  ~Resources() {
    gemm.reset();
    for (void* buffer : {in, weight, out, workspace, in_fp8, weight_fp8, scales}) {
      cudaFree(buffer);
    }
    if (start != nullptr) cudaEventDestroy(start);
    if (stop != nullptr) cudaEventDestroy(stop);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
  void *in = nullptr, *weight = nullptr, *out = nullptr, *workspace = nullptr;
  void *in_fp8 = nullptr, *weight_fp8 = nullptr, *scales = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  std::unique_ptr<Gemm> gemm;
};

// Allocates and fills r's bf16 operands and output and creates its Gemm; false (the
// benchmark skipped) when CUDA or cuBLASLt cannot.
bool SetUp(benchmark::State& state, int64_t rows, int64_t outputs, int64_t inputs, Resources& r) {
  if (cudaMalloc(&r.in, rows * inputs * 2) != cudaSuccess ||
      cudaMalloc(&r.weight, outputs * inputs * 2) != cudaSuccess ||
      cudaMalloc(&r.out, rows * outputs * 2) != cudaSuccess ||
      cudaMalloc(&r.workspace, kGemmWorkspaceBytes) != cudaSuccess ||
      cudaStreamCreate(&r.stream) != cudaSuccess || cudaEventCreate(&r.start) != cudaSuccess ||
      cudaEventCreate(&r.stop) != cudaSuccess) {
    state.SkipWithError("CUDA set-up failed (no GPU?)");
    return false;
  }
  FillUniformBf16(static_cast<__nv_bfloat16*>(r.in), rows * inputs, 1, 1.0f, r.stream);
  FillUniformBf16(static_cast<__nv_bfloat16*>(r.weight), outputs * inputs, 2, 1.0f, r.stream);
  absl::StatusOr<std::unique_ptr<Gemm>> gemm = Gemm::Create(r.workspace, kGemmWorkspaceBytes);
  if (!gemm.ok()) {
    state.SkipWithError(std::string(gemm.status().message()).c_str());
    return false;
  }
  r.gemm = *std::move(gemm);
  return true;
}

// Times `run` (one product of `flops`) with CUDA events on r's stream and reports TFLOP/s
// and the fraction of `peak_flops`.
template <typename Run>
void TimeProduct(benchmark::State& state, Resources& r, double flops, double peak_flops, Run run) {
  // Warm-up: the plan's heuristic and the first launches stay out of the timing.
  for (int i = 0; i < 10; ++i) (void)run();
  for (auto _ : state) {
    cudaEventRecord(r.start, r.stream);
    const absl::Status status = run();
    cudaEventRecord(r.stop, r.stream);
    cudaEventSynchronize(r.stop);
    if (!status.ok()) {
      state.SkipWithError(std::string(status.message()).c_str());
      break;
    }
    float milliseconds = 0;
    cudaEventElapsedTime(&milliseconds, r.start, r.stop);
    state.SetIterationTime(milliseconds / 1e3);
  }
  state.counters["TFLOP/s"] =
      benchmark::Counter(flops / 1e12, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["of_H100_peak"] =
      benchmark::Counter(flops / peak_flops, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_LinearForward(benchmark::State& state) {
  const int64_t rows = state.range(0), outputs = state.range(1), inputs = state.range(2);
  Resources r;
  if (!SetUp(state, rows, outputs, inputs, r)) return;
  const GemmArgs args =
      LinearForward(static_cast<__nv_bfloat16*>(r.in), static_cast<__nv_bfloat16*>(r.weight),
                    static_cast<__nv_bfloat16*>(r.out), rows, outputs, inputs);
  TimeProduct(state, r, 2.0 * rows * outputs * inputs, kH100DenseBf16PeakFlops,
              [&] { return r.gemm->Run(args, r.stream); });
}

// The fp8 forward product of Transformer Engine's Linear (E4M3 operands, bf16 output, fast
// accumulation); the casts stay out of the timing.
void BM_Fp8LinearForward(benchmark::State& state) {
  const int64_t rows = state.range(0), outputs = state.range(1), inputs = state.range(2);
  Resources r;
  if (!SetUp(state, rows, outputs, inputs, r)) return;
  // scale, scale inverse and amax of each operand, each in a slot of its own (cuBLASLt reads a
  // scale inverse only from a 16-byte aligned address).
  constexpr int64_t kSlot = kFp8ScaleInverseStride;
  float scales[6 * kSlot] = {};
  for (int value : {0, 1, 3, 4}) scales[value * kSlot] = 1;
  if (cudaMalloc(&r.in_fp8, rows * inputs) != cudaSuccess ||
      cudaMalloc(&r.weight_fp8, outputs * inputs) != cudaSuccess ||
      cudaMalloc(&r.scales, sizeof(scales)) != cudaSuccess ||
      cudaMemcpy(r.scales, scales, sizeof(scales), cudaMemcpyHostToDevice) != cudaSuccess) {
    state.SkipWithError("CUDA set-up of the fp8 operands failed");
    return;
  }
  float* in_scale = static_cast<float*>(r.scales);
  float* weight_scale = in_scale + 3 * kSlot;
  if (CastToFp8(static_cast<__nv_bfloat16*>(r.in), rows, inputs, Fp8Format::kE4M3, in_scale,
                r.in_fp8, nullptr, in_scale + 2 * kSlot, nullptr, r.stream) != cudaSuccess ||
      CastToFp8(static_cast<__nv_bfloat16*>(r.weight), outputs, inputs, Fp8Format::kE4M3,
                weight_scale, r.weight_fp8, nullptr, weight_scale + 2 * kSlot, nullptr,
                r.stream) != cudaSuccess) {
    state.SkipWithError("fp8 cast failed");
    return;
  }
  const Fp8GemmArgs args =
      Fp8LinearForward({r.in_fp8, Fp8Format::kE4M3, in_scale + kSlot},
                       {r.weight_fp8, Fp8Format::kE4M3, weight_scale + kSlot},
                       static_cast<__nv_bfloat16*>(r.out), rows, outputs, inputs);
  TimeProduct(state, r, 2.0 * rows * outputs * inputs, kH100DenseFp8PeakFlops,
              [&] { return r.gemm->RunFp8(args, r.stream); });
}

BENCHMARK(BM_LinearForward)
    ->ArgNames({"rows", "outputs", "inputs"})
    // Square products.
    ->Args({4096, 4096, 4096})
    ->Args({8192, 8192, 8192})
    ->Args({16384, 16384, 16384})
    // Llama-3.1-8B, 8192 tokens, tp 1: QKV, attention output, gate/up, down.
    ->Args({8192, 6144, 4096})
    ->Args({8192, 4096, 4096})
    ->Args({8192, 28672, 4096})
    ->Args({8192, 4096, 14336})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK(BM_Fp8LinearForward)
    ->ArgNames({"rows", "outputs", "inputs"})
    ->Args({8192, 8192, 8192})
    ->Args({16384, 16384, 16384})
    ->Args({8192, 6144, 4096})
    ->Args({8192, 4096, 4096})
    ->Args({8192, 28672, 4096})
    ->Args({8192, 4096, 14336})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace paratune
