// A DeviceOps that runs nothing and records what a step asks for as the step plan's ops
// (step_ops.h): each call of StageRunner expanded into the GEMMs, collectives, casts and
// kernels the device would run for it, following the device's components (worker/cuda:
// Fp8Linears, TensorParallelOverlap, Attention, DataParallelSync, Fp8Parameters) decision for
// decision; each method names the one it follows. Every operand is checked to start inside its
// buffer of the footprint, so that a CPU run of the step catches a place the device would not
// have, and each op lists the buffers it works in (StepOp::buffers).
#ifndef PARATUNE_WORKER_PROBE_RECORDING_DEVICE_OPS_H_
#define PARATUNE_WORKER_PROBE_RECORDING_DEVICE_OPS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/probe/context_parallel_ring.h"
#include "worker/probe/device_ops.h"
#include "worker/probe/footprint_plan.h"
#include "worker/probe/optimizer_layout.h"
#include "worker/probe/probe_spec.h"
#include "worker/probe/step_ops.h"
#include "worker/probe/tensor_parallel_overlap_plan.h"

namespace paratune {

class RecordingDeviceOps final : public DeviceOps {
 public:
  // For global rank `rank` of `spec`, its stage's footprint and optimizer layout (borrowed,
  // outliving the recorder). The errors of TensorParallelOverlapPlanOf (with tp_comm_overlap)
  // and ContextRingSteps (with a p2p context ring).
  static absl::StatusOr<std::unique_ptr<RecordingDeviceOps>> Create(
      const ProbeSpec& spec, const FootprintPlan& footprint, const OptimizerLayout& optimizer,
      int64_t rank);

  // The ops recorded so far, in order; the recording starts afresh.
  std::vector<StepOp> TakeOps();

  void SetContext(const StepOpContext& context) override { context_ = context; }
  absl::Status ZeroGradients() override;
  absl::Status StartFp8Step() override;
  absl::Status IssueDataParallel(const PlanStep& step) override;
  absl::Status SendReceive(const std::vector<PipelineTransfer>& transfers) override;
  absl::Status CopyRows(DeviceRef from, DeviceRef to, std::string_view what) override;
  absl::Status TensorAllGather(DeviceRef rows, DeviceRef gathered, std::string_view what) override;
  absl::Status TensorReduceScatter(DeviceRef partial, DeviceRef reduced,
                                   std::string_view what) override;
  absl::Status TensorAllReduce(DeviceRef partial, std::string_view what) override;
  absl::Status EmbeddingForward(DeviceRef weight, DeviceRef partial) override;
  absl::Status EmbeddingBackward(DeviceRef output_gradient, DeviceRef weight_gradient) override;
  absl::Status RmsNormForward(DeviceRef x, DeviceRef weight, DeviceRef out,
                              DeviceRef rstd) override;
  absl::Status RmsNormWeightGradient(DeviceRef x, DeviceRef rstd, DeviceRef d_out,
                                     DeviceRef weight_gradient) override;
  absl::Status RmsNormBackward(DeviceRef x, DeviceRef weight, DeviceRef rstd, DeviceRef d_out,
                               const DeviceRef* residual, DeviceRef d_x) override;
  absl::Status AddRows(DeviceRef a, DeviceRef b, DeviceRef out) override;
  absl::Status SwigluForward(DeviceRef gate_up, DeviceRef out, int64_t ffn) override;
  absl::Status SwigluBackward(DeviceRef gate_up, DeviceRef d_out, DeviceRef d_gate_up,
                              int64_t ffn) override;
  absl::Status Gemm(const LinearProduct& product) override;
  absl::Status AllGatherGemm(const LinearProduct& product, DeviceRef own, bool keep_own) override;
  absl::Status GemmReduceScatter(const LinearProduct& product, DeviceRef reduced,
                                 DeviceRef out) override;
  absl::Status BulkBackward(DeviceRef own, DeviceRef gathered, const LinearProduct& input_gradient,
                            const LinearProduct& weight_gradient, DeviceRef reduced) override;
  absl::Status Fp8ColumnForward(const Fp8Site& site, DeviceRef normed, DeviceRef out) override;
  absl::Status Fp8RowForward(const Fp8Site& site, DeviceRef in, DeviceRef partial) override;
  absl::Status Fp8RowForwardOverlapped(const Fp8Site& site, DeviceRef in, DeviceRef partial,
                                       DeviceRef reduced, DeviceRef out) override;
  absl::Status Fp8Backward(const Fp8Site& site, DeviceRef d_out, DeviceRef d_in,
                           DeviceRef weight_gradient) override;
  absl::Status Fp8ColumnBackwardOverlapped(const Fp8Site& site, DeviceRef d_out, DeviceRef partial,
                                           DeviceRef reduced, DeviceRef weight_gradient) override;
  absl::Status Fp8RowBackwardOverlapped(const Fp8Site& site, DeviceRef d_out, DeviceRef d_in,
                                        DeviceRef weight_gradient) override;
  absl::Status Fp8RowBackwardSequenceParallel(const Fp8Site& site, DeviceRef d_out, DeviceRef d_in,
                                              DeviceRef weight_gradient) override;
  absl::Status EndFp8Forward(int64_t chunk) override;
  absl::Status EndFp8Backward(int64_t chunk) override;
  absl::Status AttentionForward(DeviceRef qkv, DeviceRef out, const AttentionKept& kept) override;
  absl::Status AttentionBackward(DeviceRef d_out, DeviceRef out, DeviceRef d_qkv,
                                 const AttentionKept& kept) override;
  absl::Status LogitsRowMax(DeviceRef logits, DeviceRef row_max) override;
  absl::Status AllReduceLogitStatistic(DeviceRef values, Reduction reduction,
                                       std::string_view what) override;
  absl::Status LogitsRowSumExp(DeviceRef logits, DeviceRef row_max, DeviceRef row_sum) override;
  absl::Status CrossEntropyBackward(DeviceRef logits, DeviceRef row_max, DeviceRef row_sum,
                                    DeviceRef d_logits, DeviceRef loss) override;
  absl::Status RouterTopK(DeviceRef logits, DeviceRef probabilities, DeviceRef indices) override;
  absl::Status RouterTopKBackward(DeviceRef logits, DeviceRef probabilities, DeviceRef indices,
                                  DeviceRef d_probabilities, DeviceRef d_logits) override;
  absl::Status PermuteTokens(DeviceRef rows, DeviceRef probabilities, DeviceRef permuted,
                             DeviceRef permuted_probabilities) override;
  absl::Status ScatterRowGradients(DeviceRef d_rows, DeviceRef d_permuted) override;
  absl::Status UnpermuteTokens(DeviceRef permuted, DeviceRef rows) override;
  absl::Status UnpermuteProbabilities(DeviceRef d_permuted_probabilities,
                                      DeviceRef d_probabilities) override;
  absl::Status ExpertAllToAll(DeviceRef send, DeviceRef receive, int64_t rows, int64_t width,
                              ElementType type, std::string_view what) override;
  absl::Status ExpertTensorAllGather(DeviceRef own, DeviceRef gathered, int64_t rows, int64_t width,
                                     ElementType type, std::string_view what) override;
  absl::Status ExpertTensorReduceScatter(DeviceRef partial, DeviceRef reduced, int64_t rows,
                                         int64_t width, ElementType type,
                                         std::string_view what) override;
  absl::Status SortChunks(DeviceRef in, DeviceRef out, int64_t groups, int64_t local_experts,
                          int64_t chunk_rows, int64_t width, ElementType type) override;
  absl::Status WeightedSwigluForward(DeviceRef gate_up, DeviceRef probabilities, DeviceRef out,
                                     int64_t rows) override;
  absl::Status WeightedSwigluBackward(DeviceRef gate_up, DeviceRef probabilities, DeviceRef d_out,
                                      DeviceRef d_gate_up, DeviceRef d_probabilities,
                                      int64_t rows) override;
  absl::Status ReduceScatterGradients(int64_t bucket) override;
  absl::Status AllReduceGradients(int64_t bucket) override;
  absl::Status DispatchWeightGather(const WeightGather& gather) override;
  absl::Status WaitWeightGather(const WeightGather& gather) override;
  absl::Status ZeroStagedGradients(int64_t bucket) override;
  absl::Status ReduceStagedGradients(int64_t bucket) override;
  absl::Status Adam(const AdamUpdate& update) override;
  absl::Status CastMasterWeights() override;
  absl::Status GatherParameters(int64_t bucket) override;

 private:
  RecordingDeviceOps(const ProbeSpec& spec, const FootprintPlan& footprint,
                     const OptimizerLayout& optimizer, int64_t rank);

  // INTERNAL naming the first ref that does not start inside its buffer; else their buffers
  // become the operands of the ops the call records.
  absl::Status Operands(const std::vector<DeviceRef>& refs);
  // The buffers the ops of a call without operands work in.
  void WorksIn(std::vector<ProbeBuffer> buffers);

  ElementType GradientType() const;
  const LinearShape& ShapeOf(LinearWeight weight) const;
  void Emit(StepOpDetail detail);
  void Elementwise(std::string what, int64_t elements);
  void Collective(CollectiveFamily family, CollectiveKind kind, ElementType type, int64_t bytes,
                  StepStream stream, std::string what);
  void EmitGemm(LinearWeight weight, GemmRole role, const LinearShape& shape, ElementType a,
                ElementType b, ElementType c, int64_t part = 0, int64_t parts = 1);

  // Fp8Linears::CastWeight: once per chunk and step.
  void CastWeight(const Fp8Site& site);
  // TensorParallelOverlap::AllGatherGemm, GemmReduceScatter and BulkBackward.
  void RingGemm(LinearWeight weight, GemmRole role, ElementType a, ElementType b,
                const std::string& what);
  void PipelinedGemm(LinearWeight weight, ElementType a, ElementType b);
  void Bulk(LinearWeight weight, ElementType gradient, ElementType input, ElementType gather_type,
            int64_t input_bytes, bool transpose);
  // Fp8Linears::Backward's casts and GEMMs.
  void Fp8Products(LinearWeight weight);
  // Attention::Forward and Backward.
  void AttentionPass(bool backward);
  void RingExchanges(bool backward, int64_t kv_values);
  // Fp8Linears::EndPass.
  void EndFp8Pass(const Fp8ScalingGroup& group, const std::string& what);
  // An exposed tensor-parallel collective of residual rows (TensorParallelActivationBytes).
  absl::Status TensorCollective(CollectiveKind kind, const std::vector<DeviceRef>& operands,
                                std::string_view what);
  // The optimizer step's exposed reduction of bucket `bucket`'s gradients.
  void ReduceGradients(int64_t bucket, CollectiveKind kind);
  // After a reduce-scatter of bucket `bucket`'s gradients on `stream`, under hybrid sharding
  // (OptimizerLayout::ReducesAcrossReplicas) the all-reduce of the rank's shard over its
  // replicas (data_parallel_sync.h ReduceScatterShard); nothing otherwise.
  void ReduceShardAcrossReplicas(int64_t bucket, StepStream stream);
  // The family of a bucket's collectives: its group's.
  static CollectiveFamily FamilyOf(const ParameterBucket& bucket);
  // data_parallel_sync.cc AllGatherParameters's bytes.
  int64_t GatheredParameterBytes(const ParameterBucket& bucket) const;

  const ProbeSpec& spec_;
  const FootprintPlan& footprint_;
  const OptimizerLayout& optimizer_;
  const ShardShapes& shapes_;
  const int64_t rank_;
  std::optional<TensorParallelOverlapPlan> tp_overlap_;
  std::vector<RingStep> ring_;
  std::vector<bool> weights_cast_;
  StepOpContext context_;
  std::vector<ProbeBuffer> operands_;
  std::vector<StepOp> ops_;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_RECORDING_DEVICE_OPS_H_
