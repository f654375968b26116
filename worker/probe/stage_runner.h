// One rank's training step: its pipeline stage's forward and backward passes in the
// schedule's order with their pipeline transfers, the tensor- and context-parallel
// collectives inside the layers, the data-parallel gradient reduction, and the optimizer step
// over its shard, asked of a DeviceOps (device_ops.h). Everything runs on one stream except the
// data-parallel collectives where the probe runs them (a FULL probe with dp x cp > 1) and the
// spec's overlap switches (ProbeSpec::data_parallel_overlap, Megatron-LM's
// --overlap-grad-reduce and --overlap-param-gather) are on: those run bucket by bucket on a
// communication stream, as overlap_plan.h plans them. Under sharded gradients
// (OptimizerLayout::sharded_gradients, ZeRO-2) each unit's gradients are staged during its
// backward and reduce-scattered into the rank's shard right after it, in every micro-batch, on
// the one stream. Under sharded weights as well (OptimizerLayout::sharded_weights, ZeRO-3 /
// FSDP) each unit's forward and backward read its weights from a gathered-weight slot, all-gathered
// from the shards on the data-parallel stream while the unit before it computes
// (weight_gather_plan.h), and Adam updates the rank's shard of them, which stays sharded.
// With ProbeSpec::tp_comm_overlap
// (Megatron-LM's --tp-comm-overlap) the layers' tensor-parallel all-gathers and
// reduce-scatters run beside their GEMMs, in bf16 and in fp8; the embedding's and the LM
// head's stay exposed. In fp8 training the four linears of every layer run in fp8; the LM head
// and attention stay bf16.
//
// Pure: every shape, buffer, path and order of the step is decided here, without CUDA. On a
// GPU the ops are worker/cuda/cuda_device_ops.h; on a CPU, recording_device_ops.h turns a step
// into the step plan (step_plan.h), so that CPU tests check what the device is asked for.
#ifndef PARATUNE_WORKER_PROBE_STAGE_RUNNER_H_
#define PARATUNE_WORKER_PROBE_STAGE_RUNNER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/probe/device_ops.h"
#include "worker/probe/footprint_plan.h"
#include "worker/probe/optimizer_layout.h"
#include "worker/probe/overlap_plan.h"
#include "worker/probe/pipeline_schedule.h"
#include "worker/probe/probe_spec.h"
#include "worker/probe/step_ops.h"
#include "worker/probe/weight_gather_plan.h"

namespace paratune {

// What the last step took: the most activation and loss slots held at once, and the path of
// each linear backward pass, in order.
struct StepTally {
  int64_t most_activation_slots = 0;
  int64_t most_loss_slots = 0;
  std::vector<NormLinearBackwardPath> norm_linear_backward_paths;
  std::vector<RowLinearBackwardPath> row_linear_backward_paths;
};

// Not thread-safe: one per rank.
class StageRunner {
 public:
  // The runner of global rank `rank` of `spec` (0 <= rank < world size), whose stage's
  // footprint is `footprint` and optimizer layout `optimizer` (OptimizerLayoutOf). Everything
  // is borrowed and must outlive the runner. Steps run the full step's micro-batches until
  // SetMicroBatches. CheckCudaProbeRuns' error for a spec the probe's step does not run.
  static absl::StatusOr<std::unique_ptr<StageRunner>> Create(const ProbeSpec& spec,
                                                             const FootprintPlan& footprint,
                                                             const OptimizerLayout& optimizer,
                                                             int64_t rank, DeviceOps* ops);
  StageRunner(const StageRunner&) = delete;
  StageRunner& operator=(const StageRunner&) = delete;

  // One training step: zeroed gradients, the schedule, the data-parallel reduce-scatter (or
  // all-reduce), Adam, the parameter all-gather. Overlapped, the reductions start during the
  // schedule, and the all-gathers of this step's parameters run in the next step, ahead of
  // the forward passes that need them. The ops' errors; INTERNAL where the schedule needs
  // more activation or loss slots than the footprint holds, or never reaches a step of the
  // data-parallel plan (the runner and the plan disagree).
  absl::Status Step();

  // Steps from now on run `micro_batches` micro-batches (the short-probe protocol). Requires
  // 1 <= micro_batches <= the full step's, a multiple of pp when interleaved (ProbeSpec checks
  // the counts); an interleaved count of pp holds more passes at once on the later stages
  // than the footprint's slots hold (Step's INTERNAL).
  void SetMicroBatches(int64_t micro_batches);

  const StepTally& last_step() const { return tally_; }

 private:
  StageRunner(const ProbeSpec& spec, const FootprintPlan& footprint,
              const OptimizerLayout& optimizer, int64_t rank, DeviceOps* ops);

  // Refs into a layer's activation block (LayerActivationLayout).
  struct LayerActivations;
  // A pre-norm column-parallel projection, as every block of the model opens: its weight, the
  // offsets (ParameterLayout) of its RMSNorm weight and linear weight, and its outputs per
  // rank. `layer`: a transformer layer's linear (a Transformer Engine module in Megatron-LM),
  // whose tensor-parallel collectives overlap its GEMMs with --tp-comm-overlap; the LM head's
  // (Megatron-LM's own ColumnParallelLinear) stay exposed.
  struct PreNormLinear {
    LinearWeight weight;
    int64_t norm;
    int64_t offset;
    int64_t outputs;
    bool layer = false;
  };

  // Issues the data-parallel plan's steps at this point of the current pass (nothing when
  // the collectives are not overlapped).
  absl::Status Reach(PlanPointKind kind, int64_t unit = 0);
  void SetContext();

  // Under sharded gradients, around unit `unit`'s backward: its staged gradients zeroed and
  // Gradient pointed at them; after it, reduced into the rank's shard. Nothing otherwise.
  absl::Status BeginUnitBackward(int64_t unit);
  absl::Status EndUnitBackward(int64_t unit);
  // Under sharded weights, before unit `unit`'s forward (a layer's: stage layer
  // `stage_layer`, the context of its gather; -1 for the embedding and the loss): as
  // BeginUnitWeights. Nothing otherwise.
  absl::Status BeginUnitForward(int64_t unit, int64_t stage_layer);
  // Under sharded weights, the step's first gather, dispatched at its start.
  absl::Status DispatchFirstWeightGather();
  // Under sharded weights, at the start of unit `unit`'s forward or backward, the plan's next
  // use: waits for its gather, points Weight at its slot and dispatches the next use's gather;
  // INTERNAL where the plan's next use is another (the runner and the plan disagree).
  absl::Status BeginUnitWeights(int64_t unit, PassDirection direction);
  WeightGather GatherOf(const WeightUse& use) const;

  absl::Status RunScheduleStep(const ScheduleStep& step);
  absl::Status Forward(const PipelinePass& pass);
  absl::Status Backward(const PipelinePass& pass);

  bool Overlapped(const PreNormLinear& linear) const {
    return linear.layer && spec_.tp_comm_overlap();
  }
  // Each linear below runs in fp8 when given its `fp8` site (a layer's linear in fp8
  // training), in bf16 when `fp8` is null.
  //
  // out [T, outputs] = linear(gather(norm(x))), x [R, h]; keeps the norm's output (in fp8 its
  // fp8 copy, at the site) and rstd. `float_output`: out is fp32 (the LM head's logits).
  absl::Status NormLinearForward(const PreNormLinear& linear, DeviceRef x, DeviceRef norm_output,
                                 DeviceRef rstd, DeviceRef out, bool float_output,
                                 const Fp8Site* fp8);
  // Its linear alone, in bf16, on the norm's output rows [R, h] (an MoE block's shared experts
  // read the norm output the router reads).
  absl::Status ColumnLinearForward(const PreNormLinear& linear, DeviceRef norm_output,
                                   DeviceRef out, bool float_output);
  // Its backward from d_out [T, outputs]: accumulates both weights' gradients and leaves x's
  // gradient, plus `residual` (the gradient reaching x around the block; null for none), in
  // kResidualGradient.
  absl::Status NormLinearBackward(const PreNormLinear& linear, DeviceRef d_out, DeviceRef x,
                                  DeviceRef norm_output, DeviceRef rstd, const DeviceRef* residual,
                                  const Fp8Site* fp8);
  // Its linear's backward alone: accumulates the linear weight's gradient and returns where
  // the norm output's gradient [R, h] is: in `reduced` where the tensor group reduce-scatters
  // it, else in kProjectionOutput (all-reduced in place, or a group of one).
  absl::StatusOr<DeviceRef> ColumnLinearBackward(const PreNormLinear& linear, DeviceRef d_out,
                                                 DeviceRef norm_output, DeviceRef reduced,
                                                 const Fp8Site* fp8);
  // A row-parallel projection closing a block: out [R, h] = residual + reduce(in weight^T),
  // in [T, inputs]. The row-parallel linears are all a layer's: overlapped with
  // --tp-comm-overlap.
  absl::Status RowLinearForward(LinearWeight weight, DeviceRef in, int64_t offset, int64_t inputs,
                                DeviceRef residual, DeviceRef out, const Fp8Site* fp8);
  // Its backward from d_out [R, h]: d_in [T, inputs], and the weight's gradient.
  absl::Status RowLinearBackward(LinearWeight weight, DeviceRef d_out, DeviceRef in, int64_t offset,
                                 int64_t inputs, DeviceRef d_in, const Fp8Site* fp8);

  // Layer `layer_in_chunk` of model chunk `chunk`; `recompute`: rebuilding its activations
  // before its backward (full recomputation).
  absl::Status LayerForward(int64_t chunk, int64_t layer_in_chunk, DeviceRef input,
                            const LayerActivations& kept, DeviceRef output, bool recompute);
  // Leaves the gradient of the layer's input in kResidualGradient; `output_gradient` may be
  // kResidualGradient itself.
  absl::Status LayerBackward(int64_t chunk, int64_t layer_in_chunk, DeviceRef input,
                             const LayerActivations& kept, DeviceRef output_gradient);
  // A mixture-of-experts layer's MoE block in place of the MLP block: output = mlp_input +
  // shared experts (norm(mlp_input)) + routed experts (norm(mlp_input)); its backward, leaving the
  // block's input gradient plus `output_gradient` in kResidualGradient.
  //
  // The MoE block's sizes on this rank: etp and this rank's place in the expert tensor group,
  // whether received copies are sorted by local expert (E / ep > 1), the source ranks (etp ep)
  // and the rows each sends each local expert (S / E); the hidden size h, the S copies the rank
  // sends, the N its local experts compute, and the n each local expert computes
  // (MoeShardShapes).
  struct MoeSizes {
    int64_t etp = 1;
    int64_t etp_rank = 0;
    bool sorted = false;
    int64_t sources = 1;
    int64_t chunk_rows = 0;
    int64_t h = 0;
    int64_t S = 0;
    int64_t N = 0;
    int64_t n = 0;
  };
  MoeSizes MoeSizesOf() const;
  absl::Status MoeForward(const LayerParameterOffsets& w, const LayerActivations& kept,
                          DeviceRef output);
  absl::Status MoeBackward(const LayerParameterOffsets& w, const LayerActivations& kept,
                           DeviceRef output_gradient);
  // The MoE block's shared experts (shared_experts.py, SharedExpertMLP: the dense MLP of
  // n_s f_s / t over the tensor group, on the norm output the router reads): output =
  // mlp_input + shared(norm output); its backward from the block's output gradient, adding the
  // norm output's gradient through them to `d_normed` [R, h]. Nothing without shared experts.
  absl::Status SharedExpertForward(const LayerParameterOffsets& w, const LayerActivations& kept,
                                   DeviceRef output);
  absl::Status SharedExpertBackward(const LayerParameterOffsets& w, const LayerActivations& kept,
                                    DeviceRef output_gradient, DeviceRef d_normed);
  // The fp8 sites of a layer's four linears in Fp8Linear order; none in bf16 training.
  std::vector<Fp8Site> Fp8SitesOf(int64_t chunk, int64_t layer_in_chunk,
                                  const LayerActivations& kept) const;
  // The site of `linear` among `sites`, or null (a bf16 linear) when there are none.
  static const Fp8Site* SiteIn(const std::vector<Fp8Site>& sites, Fp8Linear linear) {
    return sites.empty() ? nullptr : &sites[static_cast<int>(linear)];
  }
  absl::Status EmbeddingForward(DeviceRef output);
  absl::Status EmbeddingBackward(DeviceRef input_gradient);
  absl::Status LossForward(DeviceRef loss_slot);
  // Leaves the gradient of the loss chunk's input in kResidualGradient.
  absl::Status LossBackward(DeviceRef loss_slot);
  absl::Status OptimizerStep();

  // The residual rows [R, h] as the column-parallel layers read them, [T, h]: all-gathered
  // over the tensor group with sequence parallelism, the rows themselves without.
  absl::StatusOr<DeviceRef> GatherResidual(DeviceRef rows, std::string_view what);
  // A row-parallel layer's partial sums [T, h] reduced over the tensor group into residual
  // rows [R, h]: reduce-scatter into `reduced` (kReduced unless given) with sequence
  // parallelism, all-reduce in place without.
  absl::StatusOr<DeviceRef> ReduceResidual(DeviceRef partial, std::string_view what);
  absl::StatusOr<DeviceRef> ReduceResidual(DeviceRef partial, DeviceRef reduced,
                                           std::string_view what);

  // Every activation and loss slot free, in index order.
  void FreeEverySlot();
  // The activation slot holding (chunk, micro-batch), taking a free one if it has none;
  // INTERNAL if none is free.
  absl::StatusOr<int64_t> SlotOf(int64_t chunk, int64_t micro_batch);
  void ReleaseSlot(int64_t chunk, int64_t micro_batch);
  absl::StatusOr<DeviceRef> LossSlotOf(int64_t micro_batch);
  void ReleaseLossSlot(int64_t micro_batch);

  // Layer `layer_in_chunk`'s input and kept activations in `slot` (the recompute workspace
  // holds the latter under full recomputation).
  DeviceRef LayerInput(int64_t slot, int64_t chunk, int64_t layer_in_chunk) const;
  LayerActivations Kept(int64_t slot, int64_t chunk, int64_t layer_in_chunk) const;
  // The start of the layer's block (or, under full recomputation, its input) in `slot`.
  DeviceRef LayerBlock(int64_t slot, int64_t chunk, int64_t layer_in_chunk) const;
  // The stage-wide index (ParameterLayout::layers) of a chunk's layer.
  int64_t StageLayer(int64_t chunk, int64_t layer_in_chunk) const;
  bool IsLossChunk(int64_t chunk) const;

  // The parameter at `offset` (ParameterLayout) in the weights and in the gradients (under
  // sharded gradients, in the staged gradients of the unit whose backward runs; under sharded
  // weights, in the gathered-weight slot of the unit that runs).
  DeviceRef Weight(int64_t offset) const;
  DeviceRef Gradient(int64_t offset) const;
  // Bytes of one gradient element: 4 (fp32) or 2 (bf16).
  int64_t GradientBytes() const {
    return BytesOf(GradientElementType(spec_.training().fp32_gradients()));
  }
  static DeviceRef Buffer(ProbeBuffer buffer) { return {buffer, 0}; }

  const ProbeSpec& spec_;
  const FootprintPlan& footprint_;
  const OptimizerLayout& optimizer_;
  const ShardShapes& shapes_;
  DeviceOps* const ops_;
  const int64_t rank_;
  const int64_t stage_;
  const bool fp8_;
  const std::vector<ChunkUnits> chunks_;
  std::vector<ScheduleStep> schedule_;
  DataParallelPlan data_parallel_plan_;
  size_t next_plan_step_ = 0;
  // Under sharded gradients: each unit's bucket (OptimizerLayout::buckets), and the first
  // element of the unit whose gradients are staged.
  std::vector<int64_t> unit_buckets_;
  int64_t staged_start_ = 0;
  // Under sharded weights: the step's gathers, the next use, and the slot and first element of
  // the unit that runs.
  WeightGatherPlan weight_gathers_;
  size_t next_weight_use_ = 0;
  int64_t gathered_slot_ = 0;
  int64_t gathered_start_ = 0;
  int64_t pass_ = 0;  // the current pass of the schedule
  int64_t optimizer_step_ = 0;

  // Where the step is: the recording's context.
  StepOpContext context_;
  StepTally tally_;

  std::map<std::pair<int64_t, int64_t>, int64_t> slots_;  // (chunk, micro-batch) -> slot
  std::vector<int64_t> free_slots_;
  std::map<int64_t, int64_t> loss_slots_;  // micro-batch -> loss slot
  std::vector<int64_t> free_loss_slots_;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_STAGE_RUNNER_H_
