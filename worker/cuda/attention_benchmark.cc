// Attention throughput through the probe's path (attention.h): cuDNN's fused flash attention
// and the chunked fallback, forward and backward, over one micro-batch of Llama-3.1-8B (32
// query and 8 kv heads of 128) and of Llama-3.1-70B at tensor parallelism 8 (8 query heads, 1
// kv head), in TFLOP/s and as a fraction of the H100 SXM's dense bf16 peak (the estimator's
// GPU catalog: 989 TFLOP/s). FLOPs are counted as FlashAttention's own benchmark counts them
// (Dao-AILab/flash-attention, benchmarks/benchmark_flash_attention.py, `flops`): a forward
// pass 4 s^2 d per query head and sequence, halved for the causal mask, the backward 2.5 times
// that. The times hold what the probe's `attention` phase holds (the rotary embedding and the
// layout changes too), on the probe's own buffers (FootprintPlan's sizes, one layer's kept
// tensors). Times with CUDA events (manual time), inputs random. Runs on a GPU machine only
// (docs/probe.md).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "common/status_macros.h"
#include "estimator/cluster_spec.h"
#include "estimator/memory_model.h"
#include "estimator/model_spec.h"
#include "estimator/parallel_config.h"
#include "estimator/training_spec.h"
#include "worker/cuda/attention.h"
#include "worker/cuda/fill_kernels.h"
#include "worker/cuda/gemm.h"
#include "worker/cuda/phase_timer.h"
#include "worker/probe/footprint_plan.h"

namespace paratune {
namespace {

using bf16 = __nv_bfloat16;

// The rank whose attention is timed: a model preset at a tensor-parallel size, on H100s.
struct Rank {
  const char* preset;
  int64_t tensor_parallel;
};
constexpr Rank kRanks[] = {{"llama3.1-8b", 1}, {"llama3.1-70b", 8}};
constexpr char kGpu[] = "h100-80gb";

// The footprint plan of stage 0 of a micro-batch of one `sequence`-token sequence.
absl::StatusOr<FootprintPlan> PlanOf(const Rank& rank, int64_t sequence) {
  PT_ASSIGN_OR_RETURN(const ModelSpec model, FindModelPreset(rank.preset));
  TrainingOptions options;
  options.global_batch_size = 1;
  options.seq_len = sequence;
  PT_ASSIGN_OR_RETURN(const TrainingSpec training, TrainingSpec::Create(options));
  PT_ASSIGN_OR_RETURN(const GpuSpec gpu, FindGpuPreset(kGpu));
  PT_ASSIGN_OR_RETURN(const ClusterSpec cluster, ClusterSpec::Create(gpu, 1, rank.tensor_parallel));
  PT_ASSIGN_OR_RETURN(const ParallelConfig config,
                      ParallelConfig::Create(model, training, cluster, PlacementRules(),
                                             MakeParallelDims(1, rank.tensor_parallel, 1, 1, 1)));
  return FootprintPlan::Create(model, training, cluster, config, MemoryOptions(), 0);
}

// Device allocations and timing events, released however the benchmark ends.
class Resources {
 public:
  ~Resources() {
    gemm.reset();
    for (void* buffer : buffers_) cudaFree(buffer);
    for (cudaEvent_t event : {start, forward_done, stop}) {
      if (event != nullptr) cudaEventDestroy(event);
    }
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
  // `bytes` of device memory, or nullptr when cudaMalloc fails (allocation_failed then).
  template <typename T>
  T* Allocate(int64_t bytes) {
    void* buffer = nullptr;
    if (cudaMalloc(&buffer, bytes) != cudaSuccess) {
      allocation_failed_ = true;
      return nullptr;
    }
    buffers_.push_back(buffer);
    return static_cast<T*>(buffer);
  }
  bool allocation_failed() const { return allocation_failed_; }

  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, forward_done = nullptr, stop = nullptr;
  std::unique_ptr<Gemm> gemm;

 private:
  std::vector<void*> buffers_;
  bool allocation_failed_ = false;
};

// "fwd KERNEL, bwd KERNEL", each chunked kernel with cuDNN's reason.
std::string KernelLabel(const Attention& attention) {
  auto describe = [](const char* kernel, const std::string& reason) {
    return reason.empty() ? std::string(kernel) : absl::StrCat(kernel, " (", reason, ")");
  };
  return absl::StrCat("fwd ", describe(attention.forward_kernel(), attention.fallback_reason()),
                      ", bwd ",
                      describe(attention.backward_kernel(), attention.backward_fallback_reason()));
}

// Forward then backward of one layer's attention, timed apart; the kernel as the probe
// chooses it (state.range(2) = 1: SelectKernel, which takes cuDNN's fused passes where cuDNN
// builds them) or the chunked path (0).
void BM_Attention(benchmark::State& state) {
  const Rank& rank = kRanks[state.range(0)];
  const int64_t sequence = state.range(1);
  const bool fused = state.range(2) == 1;
  const absl::StatusOr<FootprintPlan> plan = PlanOf(rank, sequence);
  if (!plan.ok()) {
    state.SkipWithError(std::string(plan.status().message()).c_str());
    return;
  }
  const ShardShapes& x = plan->shapes();
  const LayerActivationLayout& at = plan->layer_activations();
  const int64_t qkv_bytes = x.tokens * x.qkv.outputs * sizeof(bf16);
  const int64_t out_values = x.tokens * x.query_heads * x.head_dim;
  Resources r;
  auto buffer = [&](ProbeBuffer b) { return r.Allocate<char>(plan->placement(b).bytes); };
  char* const kept = r.Allocate<char>(at.bytes);  // one layer's kept tensors
  char* const heads = buffer(ProbeBuffer::kAttentionHeads);
  char* const query_gradient = buffer(ProbeBuffer::kQueryGradient);
  char* const scores = buffer(ProbeBuffer::kAttentionScores);
  char* const probabilities = buffer(ProbeBuffer::kAttentionProbabilities);
  char* const key_value_gradients = buffer(ProbeBuffer::kKeyValueGradients);
  char* const row_sums = buffer(ProbeBuffer::kAttentionRowSums);
  bf16* const qkv = r.Allocate<bf16>(qkv_bytes);
  bf16* const d_qkv = r.Allocate<bf16>(qkv_bytes);
  bf16* const d_out = r.Allocate<bf16>(out_values * sizeof(bf16));
  void* const workspace = r.Allocate<void>(kGemmWorkspaceBytes);
  if (r.allocation_failed()) {
    state.SkipWithError("cudaMalloc failed (no GPU?)");
    return;
  }
  AttentionBuffers buffers;
  buffers.query = reinterpret_cast<bf16*>(kept + at.query);
  buffers.key_value = reinterpret_cast<bf16*>(kept + at.key_value);
  buffers.lse = reinterpret_cast<float*>(kept + at.softmax_lse);
  buffers.heads = reinterpret_cast<bf16*>(heads);
  buffers.query_gradient = reinterpret_cast<bf16*>(query_gradient);
  buffers.scores = reinterpret_cast<float*>(scores);
  buffers.probabilities = reinterpret_cast<bf16*>(probabilities);
  buffers.key_value_gradients = reinterpret_cast<float*>(key_value_gradients);
  buffers.row_sums = reinterpret_cast<float*>(row_sums);
  bf16* const out = reinterpret_cast<bf16*>(kept + at.attention_output);
  if (cudaStreamCreate(&r.stream) != cudaSuccess || cudaEventCreate(&r.start) != cudaSuccess ||
      cudaEventCreate(&r.forward_done) != cudaSuccess || cudaEventCreate(&r.stop) != cudaSuccess ||
      FillUniformBf16(qkv, qkv_bytes / sizeof(bf16), 1, 1.0f, r.stream) != cudaSuccess ||
      FillUniformBf16(d_out, out_values, 2, 1e-3f, r.stream) != cudaSuccess) {
    state.SkipWithError("CUDA set-up failed");
    return;
  }
  absl::StatusOr<std::unique_ptr<Gemm>> gemm = Gemm::Create(workspace, kGemmWorkspaceBytes);
  if (!gemm.ok()) {
    state.SkipWithError(std::string(gemm.status().message()).c_str());
    return;
  }
  r.gemm = *std::move(gemm);
  PhaseTimer timer(r.stream);
  Attention attention(r.gemm.get(), x, plan->attention_query_chunk(), nullptr, 0, CpCommType::kP2p,
                      r.stream, &timer);
  if (fused) {
    const absl::Status selected =
        attention.SelectKernel(plan->placement(ProbeBuffer::kAttentionScores).bytes);
    if (!selected.ok()) {
      state.SkipWithError(std::string(selected.message()).c_str());
      return;
    }
  }
  state.SetLabel(KernelLabel(attention));

  auto pass = [&] {
    absl::Status status = attention.Forward(qkv, out, buffers);
    if (status.ok()) cudaEventRecord(r.forward_done, r.stream);
    if (status.ok()) status = attention.Backward(d_out, out, d_qkv, buffers);
    return status;
  };
  // Warm-up: plans, heuristics and first launches stay out of the timing.
  for (int i = 0; i < 2; ++i) (void)pass();
  double forward_seconds = 0, backward_seconds = 0;
  for (auto _ : state) {
    cudaEventRecord(r.start, r.stream);
    const absl::Status status = pass();
    cudaEventRecord(r.stop, r.stream);
    cudaEventSynchronize(r.stop);
    if (!status.ok()) {
      state.SkipWithError(std::string(status.message()).c_str());
      return;
    }
    float forward_ms = 0, backward_ms = 0;
    cudaEventElapsedTime(&forward_ms, r.start, r.forward_done);
    cudaEventElapsedTime(&backward_ms, r.forward_done, r.stop);
    forward_seconds += forward_ms / 1e3;
    backward_seconds += backward_ms / 1e3;
    state.SetIterationTime((forward_ms + backward_ms) / 1e3);
  }
  const double sequences = static_cast<double>(x.micro_batch);
  const double forward_flops =
      4.0 * sequence * sequence * x.head_dim * x.query_heads * sequences / 2;  // causal
  const double backward_flops = 2.5 * forward_flops;
  const double iterations = static_cast<double>(state.iterations());
  const double peak = FindGpuPreset(kGpu)->peak_bf16_tflops * 1e12;
  state.counters["fwd_TFLOP/s"] = forward_flops * iterations / forward_seconds / 1e12;
  state.counters["bwd_TFLOP/s"] = backward_flops * iterations / backward_seconds / 1e12;
  state.counters["TFLOP/s"] = benchmark::Counter((forward_flops + backward_flops) / 1e12,
                                                 benchmark::Counter::kIsIterationInvariantRate);
  state.counters["of_H100_peak"] = benchmark::Counter(
      (forward_flops + backward_flops) / peak, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_Attention)
    ->ArgNames({"rank", "sequence", "fused"})
    // Llama-3.1-8B at tp 1 (rank 0) and 70B at tp 8 (rank 1), fused where cuDNN takes it and
    // chunked.
    ->ArgsProduct({{0, 1}, {4096, 8192}, {1, 0}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace paratune
