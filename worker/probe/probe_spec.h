// A ProbeAssignment validated once, for every backend: the worker daemon resolves it before a
// backend runs the probe (worker/probe_pipeline.h), and paratune-probe resolves it from the
// assignment file it is given.
#ifndef PARATUNE_WORKER_PROBE_PROBE_SPEC_H_
#define PARATUNE_WORKER_PROBE_PROBE_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "convert/spec_convert.h"
#include "estimator/cluster_spec.h"
#include "estimator/model_spec.h"
#include "estimator/parallel_config.h"
#include "estimator/training_spec.h"
#include "proto/probe.pb.h"
#include "worker/probe/overlap_plan.h"
#include "worker/probe/rank_layout.h"

namespace paratune {

// Immutable and always valid.
class ProbeSpec {
 public:
  // INVALID_ARGUMENT naming the field and value when the assignment cannot be probed: an
  // invalid model, training run, cluster or configuration (ResolveConfiguration: the fields,
  // fp8 on a GPU that has it, and a well-formed configuration under the loosest placement
  // rules, since the scheduler placed it under its search's own); an interleaved pipeline
  // whose micro-batches per step (full or short) are not a multiple of pipeline_parallel
  // (Megatron-LM's interleaved schedule needs that); micro_batch_counts that are not two or
  // more ascending counts below the full step's; a scope, step count, rank count, gang or GPU
  // list that does not fit the configuration (a REPLICA probe of a mixture-of-experts model
  // whose etp x ep does not divide one replica's tp x cp); a deadline that is negative or not
  // a number.
  static absl::StatusOr<ProbeSpec> FromAssignment(const v1::ProbeAssignment& assignment);

  // The assignment as the scheduler sent it, for what a backend passes on unchanged (the
  // command backend's launch values, the cuda backend's assignment file).
  const v1::ProbeAssignment& assignment() const { return assignment_; }
  // searches/{search}/candidates/{n}/probes/{attempt}.
  const std::string& name() const { return assignment_.name(); }

  const ResolvedConfiguration& configuration() const { return configuration_; }
  const ModelSpec& model() const { return configuration_.model; }
  const TrainingSpec& training() const { return configuration_.training; }
  const ClusterSpec& cluster() const { return configuration_.cluster; }
  const ParallelConfig& config() const { return configuration_.config; }

  // The data-parallel overlap the probe runs: what the launch templates write for this
  // training run (deploy/templates/megatron_llama.textproto: --overlap-grad-reduce always,
  // --overlap-param-gather with the distributed optimizer; nemo_llama.textproto the same), so
  // that what is probed is what is exported.
  OverlapOptions data_parallel_overlap() const;

  // Whether the launch of this configuration overlaps tensor-parallel communication with the
  // GEMMs: training.tp_comm_overlap where it has sequence parallelism with tp > 1, as the
  // templates' {tp_comm_overlap} writes --tp-comm-overlap. The probe runs it in bf16 and in
  // fp8 training: each layer's all-gathers and reduce-scatters beside its GEMMs with
  // Transformer Engine's default methods (worker/probe/tensor_parallel_overlap_plan.h,
  // worker/cuda/tensor_parallel_overlap.h), in fp8 on fp8 operands as its fp8 userbuffers do
  // (worker/cuda/fp8_linear.h, docs/probe.md).
  bool tp_comm_overlap() const;

  // How the launch exchanges keys and values between context-parallel ranks (with cp > 1):
  // training.cp_comm_type, as the templates write --cp-comm-type. The probe runs what this
  // says (worker/cuda/attention.h): the ring of K/V exchanges overlapped with attention blocks
  // for kP2p, one all-gather of K and V (and a reduce-scatter of their gradients) for
  // kAllGather.
  CpCommType cp_comm_type() const { return training().cp_comm_type(); }

  // REPLICA scope: one data-parallel replica runs and the data-parallel traffic across
  // replicas is modelled (DESIGN.md §7).
  bool replica() const { return replica_; }
  // The ranks the probe runs: the configuration's, with dp = 1 for a REPLICA probe, and the
  // expert grid (etp, ep) of a mixture-of-experts model.
  const RankLayout& layout() const { return layout_; }

  // Seeds the probe's random weights and token ids.
  uint64_t seed() const { return seed_; }
  int64_t warmup_steps() const { return warmup_steps_; }
  int64_t timed_steps() const { return timed_steps_; }
  // Micro-batches per step: global batch / (data_parallel x micro_batch_size).
  int64_t micro_batches() const { return config().NumMicroBatches(training()); }
  // The short-probe protocol (estimator/short_probe.h): micro-batches per step of the short
  // steps to run, ascending (assignment.micro_batch_counts), or empty for full steps.
  const std::vector<int64_t>& micro_batch_counts() const { return micro_batch_counts_; }
  // The micro-batches of each series of timed steps: micro_batch_counts(), or the full step's.
  std::vector<int64_t> TimedMicroBatches() const;

  // This process's ranks: first_rank() .. first_rank() + local_ranks() - 1, on these CUDA
  // device indices, one each, in rank order.
  int64_t first_rank() const { return first_rank_; }
  int64_t local_ranks() const { return static_cast<int64_t>(gpu_indices_.size()); }
  const std::vector<int64_t>& gpu_indices() const { return gpu_indices_; }

  // Whether the probe's ranks span several processes (a gang of workers), which then need
  // gang[0]'s NCCL unique id; and whether this process is gang[0], which creates it.
  bool spans_processes() const { return spans_processes_; }
  bool creates_nccl_id() const { return first_rank_ == 0; }

  // The wall-clock limit of the whole probe, seconds (assignment.deadline_seconds); 0 when the
  // assignment sets none.
  double deadline_seconds() const { return assignment_.deadline_seconds(); }

 private:
  ProbeSpec(v1::ProbeAssignment assignment, ResolvedConfiguration configuration, bool replica,
            RankLayout layout)
      : assignment_(std::move(assignment)),
        configuration_(std::move(configuration)),
        replica_(replica),
        layout_(layout) {}

  v1::ProbeAssignment assignment_;
  ResolvedConfiguration configuration_;
  bool replica_;
  RankLayout layout_;
  uint64_t seed_ = 0;
  int64_t warmup_steps_ = 0;
  int64_t timed_steps_ = 0;
  std::vector<int64_t> micro_batch_counts_;
  int64_t first_rank_ = 0;
  std::vector<int64_t> gpu_indices_;
  bool spans_processes_ = false;
};

// OK when paratune-probe can run `spec` beyond the rules every backend's probes follow;
// INVALID_ARGUMENT naming the field and value otherwise: heads other than h / a wide
// (CheckLlamaHeadWidth); data-parallel sharding it does not run (hybrid groups of an MoE model;
// sharded gradients or weights of an MoE model, of fp8 weights or of an embedding tied on one
// stage; sharded weights in FP8); for a mixture-of-experts model what its MoE block does not run
// yet (FP8, tp_comm_overlap, the all-gather dispatcher, the expert-parallel overlap) and routed
// copies per rank that the balanced routing cannot split evenly over the experts, or a capacity
// above a rank's tokens (ComputeMoeShardShapes); in FP8 training a linear's rows, inputs or
// outputs per rank that are not a multiple of 16 (cuBLASLt's fp8 GEMMs); sequence parallelism whose
// tokens per rank do not split over tensor_parallel; micro_batch_counts whose schedule holds more
// micro-batches' activations at once on some pipeline stage than the full step's (an interleaved
// count of pipeline_parallel, which runs every forward first), since the probe runs short steps in
// the full step's memory. The cuda backend checks it before it starts a probe process, and the
// probe on start.
absl::Status CheckCudaProbeRuns(const ProbeSpec& spec);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_PROBE_SPEC_H_
