// bf16 GEMM throughput through the probe's cuBLASLt path (gemm.h), in TFLOP/s and as a
// fraction of the H100 SXM's dense bf16 peak (989 TFLOP/s, DESIGN.md §4): square products
// and the linear layers of a Llama-3.1-8B micro-batch of 8192 tokens. Times with CUDA
// events (manual time), inputs random (zeros run faster than real data). Runs on a GPU
// machine only (docs/probe.md).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

#include "benchmark/benchmark.h"
#include "worker/cuda/fill_kernels.h"
#include "worker/cuda/gemm.h"
#include "worker/probe/footprint_plan.h"

namespace paratune {
namespace {

constexpr double kH100DensePeakFlops = 989e12;

// One product's device resources, released however the benchmark ends.
struct Resources {
  ~Resources() {
    gemm.reset();
    for (void* buffer : {in, weight, out, workspace}) cudaFree(buffer);
    if (start != nullptr) cudaEventDestroy(start);
    if (stop != nullptr) cudaEventDestroy(stop);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
  void *in = nullptr, *weight = nullptr, *out = nullptr, *workspace = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  std::unique_ptr<Gemm> gemm;
};

void BM_LinearForward(benchmark::State& state) {
  const int64_t rows = state.range(0), outputs = state.range(1), inputs = state.range(2);
  Resources r;
  if (cudaMalloc(&r.in, rows * inputs * 2) != cudaSuccess ||
      cudaMalloc(&r.weight, outputs * inputs * 2) != cudaSuccess ||
      cudaMalloc(&r.out, rows * outputs * 2) != cudaSuccess ||
      cudaMalloc(&r.workspace, kGemmWorkspaceBytes) != cudaSuccess ||
      cudaStreamCreate(&r.stream) != cudaSuccess || cudaEventCreate(&r.start) != cudaSuccess ||
      cudaEventCreate(&r.stop) != cudaSuccess) {
    state.SkipWithError("CUDA set-up failed (no GPU?)");
    return;
  }
  auto* in = static_cast<__nv_bfloat16*>(r.in);
  auto* weight = static_cast<__nv_bfloat16*>(r.weight);
  FillUniformBf16(in, rows * inputs, 1, 1.0f, r.stream);
  FillUniformBf16(weight, outputs * inputs, 2, 1.0f, r.stream);
  absl::StatusOr<std::unique_ptr<Gemm>> gemm = Gemm::Create(r.workspace, kGemmWorkspaceBytes);
  if (!gemm.ok()) {
    state.SkipWithError(std::string(gemm.status().message()).c_str());
    return;
  }
  r.gemm = *std::move(gemm);
  const GemmArgs args =
      LinearForward(in, weight, static_cast<__nv_bfloat16*>(r.out), rows, outputs, inputs);
  // Warm-up: the plan's heuristic and the first launches stay out of the timing.
  for (int i = 0; i < 10; ++i) (void)r.gemm->Run(args, r.stream);
  for (auto _ : state) {
    cudaEventRecord(r.start, r.stream);
    const absl::Status status = r.gemm->Run(args, r.stream);
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
  const double flops = 2.0 * rows * outputs * inputs;
  state.counters["TFLOP/s"] =
      benchmark::Counter(flops / 1e12, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["of_H100_peak"] = benchmark::Counter(
      flops / kH100DensePeakFlops, benchmark::Counter::kIsIterationInvariantRate);
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

}  // namespace
}  // namespace paratune
