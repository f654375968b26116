// DeviceOps (worker/probe/device_ops.h) on one rank's GPU: each call resolves its DeviceRefs in
// the rank's DeviceFootprint and enqueues on the compute stream the kernel, cuBLASLt GEMM or
// NCCL collective it names, marking its phase on the rank's PhaseTimer, or hands the call to
// the component that runs it (Attention, Fp8Linears, Fp8Parameters, TensorParallelOverlap,
// DataParallelSync, which mark their own phases). The data-parallel plan's collectives run on
// a communication stream (data_parallel_sync.h), the layers' overlapped tensor-parallel ones
// on a second (tensor_parallel_overlap.h). With fp8 parameters (training.fp8_param_gather) the
// layers' linear weights are stored in fp8, cast from the master weights in the optimizer step
// (fp8_parameters.h) and gathered in fp8.
#ifndef PARATUNE_WORKER_CUDA_CUDA_DEVICE_OPS_H_
#define PARATUNE_WORKER_CUDA_CUDA_DEVICE_OPS_H_

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <string_view>
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
#include "worker/cuda/moe_kernels.h"
#include "worker/cuda/phase_timer.h"
#include "worker/cuda/tensor_parallel_overlap.h"
#include "worker/cuda/weight_gathers.h"
#include "worker/probe/device_ops.h"
#include "worker/probe/footprint_plan.h"
#include "worker/probe/optimizer_layout.h"
#include "worker/probe/probe_spec.h"

namespace paratune {

// Not thread-safe: one per rank, on that rank's thread and device.
class CudaDeviceOps final : public DeviceOps {
 public:
  // Global rank communicators.rank() of `spec`, whose stage's footprint is `plan`, allocated
  // in `memory`, and whose optimizer layout is `optimizer` (OptimizerLayoutOf). Everything is
  // borrowed and must outlive the ops. `stream` runs the computation (and `timer` marks it),
  // `communication_stream` the overlapped data-parallel collectives,
  // `tensor_communication_stream` the overlapped tensor-parallel ones. `fp8_amax_group`
  // reduces fp8 amaxes (Fp8AmaxGroup::comm(); nullptr in bf16 or for a stage of one rank).
  // INVALID_ARGUMENT when `optimizer` is another rank's (its shard index is not this rank's
  // place in the data x context group). (paratune::Gemm: inside the class, Gemm names
  // DeviceOps::Gemm.)
  static absl::StatusOr<std::unique_ptr<CudaDeviceOps>> Create(
      const ProbeSpec& spec, const FootprintPlan& plan, const DeviceFootprint& memory,
      const RankCommunicators& communicators, ncclComm_t fp8_amax_group,
      const OptimizerLayout& optimizer, paratune::Gemm* gemm, cudaStream_t stream,
      cudaStream_t communication_stream, cudaStream_t tensor_communication_stream,
      PhaseTimer* timer);
  CudaDeviceOps(const CudaDeviceOps&) = delete;
  CudaDeviceOps& operator=(const CudaDeviceOps&) = delete;

  // Fills the weights and token ids with seeded random values (fp8 weights quantized from
  // bf16 ones), the master weights with the bf16 values of the rank's shard of each bucket and
  // the Adam moments with zeros, sets the fp8 scaling state to Transformer Engine's initial
  // one, chooses the attention kernel (Attention::SelectKernel, with the attention scores
  // buffer as cuDNN's workspace) and creates the overlapped collectives' events
  // (tensor-parallel ones: INVALID_ARGUMENT from TensorParallelOverlapPlanOf). Before the
  // first step.
  absl::Status Initialize(uint64_t seed);

  // The layers' attention, for the kernel it chose.
  const Attention& attention() const { return attention_; }

  void SetContext(const StepOpContext& context) override;
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
  CudaDeviceOps(const ProbeSpec& spec, const FootprintPlan& plan, const DeviceFootprint& memory,
                const RankCommunicators& communicators, ncclComm_t fp8_amax_group,
                const OptimizerLayout& optimizer, paratune::Gemm* gemm, cudaStream_t stream,
                cudaStream_t communication_stream, cudaStream_t tensor_communication_stream,
                PhaseTimer* timer);

  absl::Status Mark(ProbePhase phase) { return timer_->Mark(phase); }

  // The device address of `ref`, as a T.
  template <typename T = __nv_bfloat16>
  T* At(DeviceRef ref) const {
    return reinterpret_cast<T*>(memory_.get<char>(ref.buffer) + ref.offset);
  }
  // The parameter at element `offset` (ParameterLayout) in the weights (as bf16, where its
  // region is) and in the gradients; for the setup and the optimizer's bucket collectives,
  // which work in the layout's elements.
  __nv_bfloat16* Weight(int64_t offset) const;
  void* Gradient(int64_t offset) const;
  ElementType GradientType() const { return GradientElementType(fp32_gradients_); }
  // Bytes of one gradient element: 4 (fp32) or 2 (bf16).
  int64_t GradientBytes() const { return BytesOf(GradientType()); }
  // Under sharded weights (FootprintPlan::sharded_weights), the rank's shard of each bucket's
  // weights drawn as Initialize draws unsharded ones, the gathered-weight slots
  // filled with stand-ins for the shards a REPLICA probe never gathers, and the gathers set
  // up. CudaStatus's error.
  absl::Status InitializeShardedWeights(uint64_t rank_seed);
  // Under sharded weights, the rank's bf16 shard of bucket `bucket`'s weights.
  __nv_bfloat16* ShardWeights(int64_t bucket) const;
  // The elements of the residual rows [R, h].
  int64_t Rows() const { return shapes_.residual_tokens * shapes_.hidden; }
  // The router's score function (ModelSpec's).
  RouterScoreFunction ScoreFunction() const;
  // This rank's rows of the vocabulary (embedding and LM head).
  VocabularyShard Vocabulary() const;
  // A data-parallel group of the buckets (ParameterBucket::group) and this rank in it; for
  // kDataContext the group the dense states are sharded over (RankLayout::DataShardGroup)
  // with, under hybrid sharding, the replicas' communicator.
  DataParallelGroup DataParallelGroupOf(RankGroup group) const;

  GemmArgs ArgsOf(const LinearProduct& product) const;
  Fp8LinearSite SiteOf(const Fp8Site& site) const;
  AttentionBuffers BuffersOf(const AttentionKept& kept) const;

  // The component a call needs; FAILED_PRECONDITION naming it where the rank has none (the
  // spec takes no path through it, or Initialize has not created it yet): the ops' calls that
  // need fp8 parameters or the data-parallel sync check theirs the same way.
  absl::StatusOr<Fp8Linears*> Fp8() const;
  absl::StatusOr<TensorParallelOverlap*> TensorOverlap() const;

  const ProbeSpec& spec_;
  const FootprintPlan& plan_;
  const DeviceFootprint& memory_;
  const RankCommunicators& communicators_;
  const OptimizerLayout& optimizer_;
  const ShardShapes& shapes_;
  paratune::Gemm* gemm_;
  cudaStream_t stream_;
  cudaStream_t communication_stream_;
  cudaStream_t tensor_communication_stream_;
  PhaseTimer* timer_;
  const bool fp32_gradients_;
  Attention attention_;
  // The layers' linears in fp8 training; null in bf16.
  std::unique_ptr<Fp8Linears> fp8_;
  // Their weights' casts with fp8 parameters; else null.
  std::unique_ptr<Fp8Parameters> fp8_parameters_;
  // The data-parallel plan's collectives when overlapped (OptimizerLayout::overlapped); else
  // null.
  std::unique_ptr<DataParallelSync> data_parallel_sync_;
  // The units' weight gathers under sharded weights (OptimizerLayout::sharded_weights); else
  // null.
  std::unique_ptr<WeightGathers> weight_gathers_;
  // The layers' overlapped tensor-parallel collectives (spec.tp_comm_overlap()), else
  // null: they run exposed on the compute stream.
  std::unique_ptr<NcclTensorParallelTransport> tp_transport_;
  std::unique_ptr<TensorParallelOverlap> tp_overlap_;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_CUDA_DEVICE_OPS_H_
