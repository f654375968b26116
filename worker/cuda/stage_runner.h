// One rank's training step: its pipeline stage's forward and backward passes in the
// schedule's order with their pipeline transfers, the tensor- and context-parallel
// collectives inside the layers, the data-parallel gradient reduction, and the optimizer
// step over its shard. Everything is enqueued on one stream, except the data-parallel
// collectives where the probe runs them (a FULL probe with dp x cp > 1) and the spec's
// overlap switches (ProbeSpec::data_parallel_overlap, Megatron-LM's --overlap-grad-reduce and
// --overlap-param-gather) are on: those run bucket by bucket on a communication stream, as
// worker/probe/overlap_plan.h plans them (docs/probe.md). With ProbeSpec::tp_comm_overlap
// (Megatron-LM's --tp-comm-overlap) the layers' tensor-parallel all-gathers and
// reduce-scatters run beside their GEMMs on a second communication stream
// (tensor_parallel_overlap.h), in bf16 and in fp8 (through Fp8Linears); the embedding's and
// the LM head's stay exposed.
// In fp8 training the four linears of every layer run through Fp8Linears (fp8_linear.h); the
// LM head and attention stay bf16. With fp8 parameters (training.fp8_param_gather) those
// linears' weights are stored in fp8, cast from the master weights in the optimizer step
// (fp8_parameters.h) and gathered in fp8.
#ifndef PARATUNE_WORKER_CUDA_STAGE_RUNNER_H_
#define PARATUNE_WORKER_CUDA_STAGE_RUNNER_H_

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/cuda/attention.h"
#include "worker/cuda/communicators.h"
#include "worker/cuda/data_parallel_sync.h"
#include "worker/cuda/device_footprint.h"
#include "worker/cuda/fp8_linear.h"
#include "worker/cuda/fp8_parameters.h"
#include "worker/cuda/gemm.h"
#include "worker/cuda/loss_kernels.h"
#include "worker/cuda/phase_timer.h"
#include "worker/cuda/tensor_parallel_overlap.h"
#include "worker/probe/footprint_plan.h"
#include "worker/probe/overlap_plan.h"
#include "worker/probe/pipeline_schedule.h"
#include "worker/probe/probe_spec.h"
#include "worker/probe/tensor_parallel_overlap_plan.h"

namespace paratune {

// Not thread-safe: one per rank, on that rank's thread and device.
class StageRunner {
 public:
  // Everything is borrowed and must outlive the runner. `stream` runs the computation (and
  // `timer` marks it), `communication_stream` the overlapped data-parallel collectives,
  // `tensor_communication_stream` the overlapped tensor-parallel ones.
  // `fp8_amax_group` reduces fp8 amaxes (Fp8AmaxGroup::comm(); nullptr in bf16 or for a
  // stage of one rank).
  StageRunner(const ProbeSpec& spec, const FootprintPlan& plan, const DeviceFootprint& memory,
              const RankCommunicators& communicators, ncclComm_t fp8_amax_group, Gemm* gemm,
              cudaStream_t stream, cudaStream_t communication_stream,
              cudaStream_t tensor_communication_stream, PhaseTimer* timer);
  StageRunner(const StageRunner&) = delete;
  StageRunner& operator=(const StageRunner&) = delete;

  // Fills the weights and token ids with seeded random values (fp8 weights quantized from
  // bf16 ones), the master weights with the bf16 values of the rank's shard and the Adam
  // moments with zeros, sets the fp8 scaling state to Transformer Engine's initial one,
  // chooses the attention kernel (Attention::SelectKernel, with the attention scores buffer
  // as cuDNN's workspace) and creates the overlapped collectives' events (tensor-parallel
  // ones: INVALID_ARGUMENT from TensorParallelOverlapPlanOf).
  absl::Status Initialize(uint64_t seed);

  // The layers' attention, for the kernel it chose.
  const Attention& attention() const { return attention_; }

  // Enqueues one training step: zeroed gradients, the schedule, the data-parallel
  // reduce-scatter (or all-reduce), Adam, the parameter all-gather. Overlapped, the
  // reductions start during the schedule, and the all-gathers of this step's parameters run
  // in the next step, ahead of the forward passes that need them; everything the step gives
  // the communication stream is waited for by the compute stream within the step, except
  // those all-gathers.
  absl::Status Step();

  // Steps from now on run `micro_batches` micro-batches (the short-probe protocol; the full
  // step's until then). Requires 1 <= micro_batches <= the full step's, a multiple of pp when
  // interleaved, whose schedule holds no more passes at once than the full step's, so that the
  // full step's activation and loss slots hold it (ProbeSpec checks the counts; an interleaved
  // count of pp holds more on the later stages).
  void SetMicroBatches(int64_t micro_batches);

 private:
  // Pointers into a layer's activation block (LayerActivationLayout).
  struct LayerActivations;

  absl::Status Mark(ProbePhase phase) { return timer_->Mark(phase); }
  // Issues the data-parallel plan's steps at this point of the current pass (nothing when
  // the collectives are not overlapped).
  absl::Status Reach(PlanPointKind kind, int64_t unit = 0);

  absl::Status RunScheduleStep(const ScheduleStep& step);
  absl::Status Forward(const PipelinePass& pass);
  absl::Status Backward(const PipelinePass& pass);

  // A pre-norm column-parallel projection, as every block of the model opens: the offsets
  // (ParameterLayout) of its RMSNorm weight and linear weight, and its outputs per rank.
  // `layer`: a transformer layer's linear (a Transformer Engine module in Megatron-LM), whose
  // tensor-parallel collectives overlap its GEMMs with --tp-comm-overlap; the LM head's
  // (Megatron-LM's own ColumnParallelLinear) stay exposed.
  struct PreNormLinear {
    int64_t norm;
    int64_t weight;
    int64_t outputs;
    bool layer = false;
  };
  // Whether `linear`'s collectives run overlapped (bf16 or fp8).
  bool Overlapped(const PreNormLinear& linear) const {
    return linear.layer && tp_overlap_ != nullptr;
  }
  // Each linear below runs in fp8 when given its `fp8` site (a layer's linear in fp8
  // training), in bf16 when `fp8` is null.
  //
  // out [T, outputs] = linear(gather(norm(x))), x [R, h]; keeps the norm's output (in fp8 its
  // fp8 copy, at the site) and rstd.
  absl::Status NormLinearForward(const PreNormLinear& layer, const __nv_bfloat16* x,
                                 __nv_bfloat16* norm_output, float* rstd, void* out,
                                 GemmOutput out_type, const Fp8LinearSite* fp8);
  // Its backward from d_out [T, outputs]: accumulates both weights' gradients and leaves x's
  // gradient, plus `residual` (the gradient reaching x around the block; nullptr for none),
  // in kResidualGradient.
  absl::Status NormLinearBackward(const PreNormLinear& layer, const __nv_bfloat16* d_out,
                                  const __nv_bfloat16* x, const __nv_bfloat16* norm_output,
                                  const float* rstd, const __nv_bfloat16* residual,
                                  const Fp8LinearSite* fp8);
  // A row-parallel projection closing a block: out [R, h] = residual + reduce(in weight^T),
  // in [T, inputs]. The row-parallel linears are all a layer's: overlapped with
  // --tp-comm-overlap.
  absl::Status RowLinearForward(const __nv_bfloat16* in, int64_t weight, int64_t inputs,
                                const __nv_bfloat16* residual, __nv_bfloat16* out,
                                const Fp8LinearSite* fp8);
  // Its backward from d_out [R, h]: d_in [T, inputs], and the weight's gradient.
  absl::Status RowLinearBackward(const __nv_bfloat16* d_out, const __nv_bfloat16* in,
                                 int64_t weight, int64_t inputs, __nv_bfloat16* d_in,
                                 const Fp8LinearSite* fp8);

  // Layer `layer_in_chunk` of model chunk `chunk`.
  absl::Status LayerForward(int64_t chunk, int64_t layer_in_chunk, const __nv_bfloat16* input,
                            const LayerActivations& kept, __nv_bfloat16* output);
  // Leaves the gradient of the layer's input in kResidualGradient; `output_gradient` may be
  // kResidualGradient itself.
  absl::Status LayerBackward(int64_t chunk, int64_t layer_in_chunk, const __nv_bfloat16* input,
                             const LayerActivations& kept, const __nv_bfloat16* output_gradient);
  // The fp8 sites of a layer's four linears (Fp8Linear order); fp8 training only.
  std::array<Fp8LinearSite, kFp8LinearsPerLayer> Fp8Sites(int64_t chunk, int64_t layer_in_chunk,
                                                          const LayerActivations& kept) const;
  absl::Status EmbeddingForward(__nv_bfloat16* output);
  absl::Status EmbeddingBackward(const __nv_bfloat16* input_gradient);
  absl::Status LossForward(char* loss_slot);
  // Leaves the gradient of the loss chunk's input in kResidualGradient.
  absl::Status LossBackward(char* loss_slot);
  char* LossSlot(int64_t loss_slot) const;
  absl::Status OptimizerStep();

  // The residual rows [R, h] as the column-parallel layers read them, [T, h]: all-gathered
  // over the tensor group with sequence parallelism, the rows themselves without.
  absl::StatusOr<const __nv_bfloat16*> GatherResidual(const __nv_bfloat16* rows);
  // A row-parallel layer's partial sums [T, h] reduced over the tensor group into residual
  // rows [R, h]: reduce-scatter with sequence parallelism, all-reduce in place without.
  absl::StatusOr<const __nv_bfloat16*> ReduceResidual(__nv_bfloat16* partial);

  // The activation slot holding (chunk, micro-batch), taking a free one if it has none;
  // INTERNAL if none is free (the plan sized the slots from the same schedule).
  absl::StatusOr<int64_t> SlotOf(int64_t chunk, int64_t micro_batch);
  void ReleaseSlot(int64_t chunk, int64_t micro_batch);
  absl::StatusOr<int64_t> LossSlotOf(int64_t micro_batch);
  void ReleaseLossSlot(int64_t micro_batch);

  // Layer `layer_in_chunk`'s input and kept activations in `slot` (the recompute workspace
  // holds the latter under full recomputation).
  __nv_bfloat16* LayerInput(int64_t slot, int64_t layer_in_chunk) const;
  LayerActivations Kept(int64_t slot, int64_t layer_in_chunk) const;
  AttentionBuffers AttentionBuffersOf(const LayerActivations& kept) const;
  // This rank's rows of the vocabulary (embedding and LM head).
  VocabularyShard Vocabulary() const;
  // The stage-wide index (ParameterLayout::layers) of a chunk's layer.
  int64_t StageLayer(int64_t chunk, int64_t layer_in_chunk) const;

  // The parameter at `offset` (ParameterLayout) in the weights (its bytes, or as bf16 where
  // its region is) and in the gradients.
  char* WeightBytes(int64_t offset) const {
    return weights_ + plan_.parameters().WeightByte(offset);
  }
  __nv_bfloat16* Weight(int64_t offset) const {
    return reinterpret_cast<__nv_bfloat16*>(WeightBytes(offset));
  }
  void* Gradient(int64_t offset) const;

  const ProbeSpec& spec_;
  const FootprintPlan& plan_;
  const DeviceFootprint& memory_;
  const RankCommunicators& communicators_;
  Gemm* gemm_;
  cudaStream_t stream_;
  cudaStream_t communication_stream_;
  cudaStream_t tensor_communication_stream_;
  PhaseTimer* timer_;
  Attention attention_;
  // The layers' linears in fp8 training; null in bf16.
  std::unique_ptr<Fp8Linears> fp8_;
  // Their weights' casts with fp8 parameters; else null.
  std::unique_ptr<Fp8Parameters> fp8_parameters_;
  const ShardShapes& shapes_;
  std::vector<ScheduleStep> schedule_;
  bool fp32_gradients_;
  // Whether the data x context group's gradient reduction runs (else it is modelled or has
  // one rank), and this rank's place in that group: its optimizer shard with the distributed
  // optimizer, nothing without (every rank steps whole buckets; OptimizerShardOf).
  bool reduce_gradients_;
  int64_t shard_index_;
  // Optimizer shards per bucket: dp x cp of the configuration with the distributed optimizer
  // (also where the probe runs one replica of it), 1 without.
  int64_t shard_count_;
  std::vector<ChunkUnits> chunks_;
  // Whether the reductions (and gathers) run overlapped, and their plan for the current
  // micro-batch count.
  OverlapOptions overlap_;
  bool overlapped_;
  DataParallelPlan data_parallel_plan_;
  std::unique_ptr<DataParallelSync> data_parallel_sync_;
  // The layers' overlapped tensor-parallel collectives (spec.tp_comm_overlap()), else
  // null: they run exposed on the compute stream.
  std::unique_ptr<NcclTensorParallelTransport> tp_transport_;
  std::unique_ptr<TensorParallelOverlap> tp_overlap_;
  // The ranges reduced, stepped and gathered: the plan's buckets when overlapped, else one
  // per region (RegionBuckets).
  std::vector<ParameterBucket> optimizer_buckets_;
  int64_t pass_ = 0;  // the current pass of the schedule
  char* weights_;     // ParameterLayout's bytes
  int64_t optimizer_step_ = 0;

  std::map<std::pair<int64_t, int64_t>, int64_t> slots_;  // (chunk, micro-batch) -> slot
  std::vector<int64_t> free_slots_;
  std::map<int64_t, int64_t> loss_slots_;  // micro-batch -> loss slot
  std::vector<int64_t> free_loss_slots_;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_STAGE_RUNNER_H_
