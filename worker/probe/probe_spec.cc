#include "worker/probe/probe_spec.h"

#include <cmath>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "convert/spec_convert.h"
#include "estimator/llama_head_width.h"
#include "estimator/moe_performance.h"
#include "worker/probe/moe_shard_shapes.h"
#include "worker/probe/pipeline_schedule.h"
#include "worker/probe/shard_shapes.h"
#include "worker/short_steps.h"

namespace paratune {
namespace {

constexpr int64_t kMaxWarmupSteps = 1'000;
constexpr int64_t kMaxTimedSteps = 10'000;

absl::Status CheckRange(absl::string_view field, int64_t value, int64_t low, int64_t high) {
  if (value < low || value > high) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " (", value, ") must be in [", low, ", ", high, "]"));
  }
  return absl::OkStatus();
}

// cuBLASLt's fp8 GEMMs need k and the leading dimensions in multiples of 16 (Gemm::RunFp8);
// a linear's rows, inputs and outputs are each the k of one of its three products.
absl::Status CheckFp8Shapes(const ModelSpec& model, const TrainingSpec& training,
                            const ParallelConfig& config) {
  const ShardShapes shapes = ComputeShardShapes(model, training, config);
  const std::pair<const char*, const LinearShape*> linears[] = {
      {"QKV", &shapes.qkv},
      {"attention output", &shapes.attention_output},
      {"gate/up", &shapes.gate_up},
      {"down", &shapes.down}};
  for (const auto& [name, linear] : linears) {
    for (const auto& [what, value] : {std::make_pair("rows (tokens per rank: "
                                                     "config.micro_batch_size x training.seq_len / "
                                                     "config.context_parallel)",
                                                     linear->rows),
                                      std::make_pair("inputs per rank", linear->inputs),
                                      std::make_pair("outputs per rank", linear->outputs)}) {
      if (value % 16 != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("training.precision (FP8): the ", name, " linear's ", what, " (", value,
                         ") must be a multiple of 16 for cuBLASLt's fp8 GEMMs"));
      }
    }
  }
  return absl::OkStatus();
}

// The stage runner runs short steps in the full step's activation and loss slots
// (FootprintPlan sizes them from the full step's schedule), so that a short probe's memory is
// the full step's: no count's schedule may hold more passes at once on any stage. Megatron-LM's
// interleaved schedule with as many micro-batches as stages runs every forward first, which
// holds more than a longer step on all but the first stage.
absl::Status CheckShortStepsFitTheFullStep(const v1::ProbeAssignment& assignment,
                                           const ParallelConfig& config, int64_t full) {
  const int64_t p = config.pp();
  const int64_t v = config.virtual_pipeline();
  for (int64_t stage = 0; stage < p; ++stage) {
    const std::vector<ScheduleStep> full_schedule = PipelineScheduleOf(p, v, full, stage);
    const int64_t slots = MaxPassesInFlight(full_schedule, std::nullopt);
    const int64_t loss_slots = MaxPassesInFlight(full_schedule, v - 1);
    for (int i = 0; i < assignment.micro_batch_counts_size(); ++i) {
      const int64_t count = assignment.micro_batch_counts(i);
      const std::vector<ScheduleStep> schedule = PipelineScheduleOf(p, v, count, stage);
      const int64_t held = MaxPassesInFlight(schedule, std::nullopt);
      const int64_t losses = stage == p - 1 ? MaxPassesInFlight(schedule, v - 1) : 0;
      if (held <= slots && losses <= loss_slots) continue;
      const bool chunks = held > slots;
      return absl::InvalidArgumentError(absl::StrCat(
          "assignment.micro_batch_counts[", i, "] (", count, ") holds ", chunks ? held : losses,
          chunks ? " model chunks'" : " loss chunks'", " activations at once on pipeline stage ",
          stage, ", more than the full step of ", full, " micro-batches (",
          chunks ? slots : loss_slots, "), whose memory the probe allocates",
          v > 1 && count == p ? "; an interleaved step of pipeline_parallel micro-batches "
                                "runs every forward first"
                              : ""));
    }
  }
  return absl::OkStatus();
}

// The gang's members cover ranks 0 .. num_ranks - 1 in order, each a whole number of tensor
// x context groups.
absl::Status CheckGang(const v1::ProbeAssignment& assignment, int64_t group_size) {
  if (assignment.gang_size() == 0) {
    return absl::InvalidArgumentError("assignment.gang is empty; it must list every worker");
  }
  int64_t next_rank = 0;
  for (int i = 0; i < assignment.gang_size(); ++i) {
    const v1::GangMember& member = assignment.gang(i);
    if (member.first_rank() != next_rank) {
      return absl::InvalidArgumentError(absl::StrCat("assignment.gang[", i, "].first_rank (",
                                                     member.first_rank(), ") must be ", next_rank,
                                                     ", where the members before end"));
    }
    if (member.num_ranks() < 1 || member.num_ranks() % group_size != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "assignment.gang[", i, "].num_ranks (", member.num_ranks(),
          ") must be a positive multiple of tensor x context parallel (", group_size, ")"));
    }
    next_rank += member.num_ranks();
  }
  if (next_rank != assignment.num_ranks()) {
    return absl::InvalidArgumentError(absl::StrCat("assignment.gang holds ", next_rank,
                                                   " ranks, not assignment.num_ranks (",
                                                   assignment.num_ranks(), ")"));
  }
  PT_RETURN_IF_ERROR(
      CheckRange("assignment.gang_index", assignment.gang_index(), 0, assignment.gang_size() - 1));
  const v1::GangMember& own = assignment.gang(static_cast<int>(assignment.gang_index()));
  if (assignment.gpu_indices_size() != own.num_ranks()) {
    return absl::InvalidArgumentError(
        absl::StrCat("assignment.gpu_indices lists ", assignment.gpu_indices_size(),
                     " GPUs for assignment.gang[", assignment.gang_index(), "].num_ranks (",
                     own.num_ranks(), ")"));
  }
  std::set<int64_t> seen;
  for (int64_t index : assignment.gpu_indices()) {
    if (index < 0 || !seen.insert(index).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "assignment.gpu_indices (", index, ") must be distinct non-negative device indices"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<int64_t> ProbeSpec::TimedMicroBatches() const {
  if (micro_batch_counts_.empty()) return {micro_batches()};
  return micro_batch_counts_;
}

OverlapOptions ProbeSpec::data_parallel_overlap() const {
  OverlapOptions overlap;
  overlap.distributed_optimizer = ShardsOptimizerStates(config().dp_sharding());
  overlap.overlap_grad_reduce = true;
  overlap.overlap_param_gather = ShardsOptimizerStates(config().dp_sharding());
  return overlap;
}

bool ProbeSpec::tp_comm_overlap() const {
  return training().tp_comm_overlap() && config().sequence_parallel() && config().tp() > 1;
}

absl::StatusOr<ProbeSpec> ProbeSpec::FromAssignment(const v1::ProbeAssignment& assignment) {
  PT_ASSIGN_OR_RETURN(ResolvedConfiguration configuration,
                      ResolveConfiguration(assignment.model(), assignment.training(),
                                           assignment.cluster(), assignment.config()));
  const ParallelConfig& config = configuration.config;
  bool replica;
  switch (assignment.scope()) {
    case v1::PROBE_SCOPE_FULL:
      replica = false;
      break;
    case v1::PROBE_SCOPE_REPLICA:
      replica = true;
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("assignment.scope (", v1::ProbeScope_Name(assignment.scope()),
                       ") must be PROBE_SCOPE_FULL or PROBE_SCOPE_REPLICA"));
  }
  const int64_t dp = replica ? 1 : config.dp();
  // A FULL probe folds the expert grid into the world by the configuration's rules
  // (kExpertWorldSize); one replica holds only its tp x cp ranks of each stage.
  if (configuration.model.is_moe() &&
      (config.tp() * config.cp() * dp) % (config.etp() * config.ep()) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "assignment.scope (PROBE_SCOPE_REPLICA) cannot hold config.expert_tensor_parallel x "
        "config.expert_parallel (",
        config.etp(), " x ", config.ep(),
        ") in one replica's tensor x context parallel ranks per stage (", config.tp() * config.cp(),
        "): probe this configuration with PROBE_SCOPE_FULL"));
  }
  RankLayout layout = configuration.model.is_moe()
                          ? RankLayout::WithExperts(config.tp(), config.cp(), dp, config.pp(),
                                                    config.etp(), config.ep())
                          : RankLayout(config.tp(), config.cp(), dp, config.pp());
  // Hybrid sharding's groups; one replica of a REPLICA probe holds no data-parallel rank.
  if (!replica && config.dims().dp_shard_group > 0) {
    layout = layout.WithDataShards(config.dims().dp_shard_group);
  }
  if (assignment.num_ranks() != layout.world_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "assignment.num_ranks (", assignment.num_ranks(), ") must be ", layout.world_size(),
        replica ? " (tensor x context x pipeline parallel: one replica)"
                : " (data x tensor x context x pipeline parallel)"));
  }
  PT_RETURN_IF_ERROR(
      CheckRange("assignment.warmup_steps", assignment.warmup_steps(), 0, kMaxWarmupSteps));
  PT_RETURN_IF_ERROR(
      CheckRange("assignment.timed_steps", assignment.timed_steps(), 1, kMaxTimedSteps));
  PT_RETURN_IF_ERROR(CheckGang(assignment, config.tp() * config.cp()));
  PT_RETURN_IF_ERROR(
      CheckMicroBatchCounts(assignment, config, config.NumMicroBatches(configuration.training)));
  if (!std::isfinite(assignment.deadline_seconds()) || assignment.deadline_seconds() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("assignment.deadline_seconds (", assignment.deadline_seconds(),
                     ") must be a number of seconds >= 0 (0: the worker's default)"));
  }

  ProbeSpec spec(assignment, std::move(configuration), replica, layout);
  spec.seed_ = assignment.seed();
  spec.warmup_steps_ = assignment.warmup_steps();
  spec.timed_steps_ = assignment.timed_steps();
  spec.micro_batch_counts_.assign(assignment.micro_batch_counts().begin(),
                                  assignment.micro_batch_counts().end());
  spec.first_rank_ = assignment.gang(static_cast<int>(assignment.gang_index())).first_rank();
  spec.gpu_indices_.assign(assignment.gpu_indices().begin(), assignment.gpu_indices().end());
  spec.spans_processes_ = assignment.gang_size() > 1;
  return spec;
}

namespace {

// What the probe's MoE block runs (stage_runner.h, MoeForward): bf16, the all-to-all
// dispatcher with balanced routing, dropless or with a capacity factor and the experts' input
// padded to capacity (moe_shard_shapes.h), shared experts beside the routed ones on the compute
// stream (not overlapped with the dispatcher: --moe-shared-expert-overlap), no overlap of the
// layers' TP collectives or of the expert-parallel all-to-all.
absl::Status CheckMoeBlockRuns(const ProbeSpec& spec) {
  const ModelSpec& model = spec.model();
  const TrainingSpec& training = spec.training();
  const std::string not_yet =
      absl::StrCat(" with mixture-of-experts model \"", model.name(),
                   "\": the native probe's mixture-of-experts layers do not run it yet");
  if (training.fp8()) {
    return absl::InvalidArgumentError(absl::StrCat("training.precision (FP8)", not_yet));
  }
  if (spec.tp_comm_overlap()) {
    return absl::InvalidArgumentError(absl::StrCat("training.tp_comm_overlap (true)", not_yet));
  }
  if (training.moe_token_dispatcher() != TokenDispatcher::kAllToAll) {
    return absl::InvalidArgumentError(absl::StrCat(
        "training.moe_token_dispatcher (", TokenDispatcherName(training.moe_token_dispatcher()),
        ")", not_yet, " (it runs the all-to-all dispatcher)"));
  }
  if (training.moe_expert_parallel_overlap()) {
    return absl::InvalidArgumentError(
        absl::StrCat("training.moe_expert_parallel_overlap (true)", not_yet));
  }
  if (SharedExpertOverlapApplies(model, training)) {
    return absl::InvalidArgumentError(
        absl::StrCat("training.moe_shared_expert_overlap (true)", not_yet,
                     " (it runs the shared experts on the compute stream)"));
  }
  const ShardShapes shapes = ComputeShardShapes(model, training, spec.config());
  return ComputeMoeShardShapes(model, training, spec.config(), shapes).status();
}

// What the probe's data-parallel sharding runs (stage_runner.h): every mode over all data x
// context ranks, and on a dense model within groups of config.dp_shard_group of them (hybrid
// sharding: OptimizerLayout::dense_replicas); sharded gradients and weights (UnitBuckets'
// units) on a dense model whose weights are one bf16 region per chunk and whose units share no
// tensor; sharded weights in bf16 training (the fp8 linears cast each weight once per step,
// from weights a sharded replica holds gathered only while their unit runs).
absl::Status CheckShardingRuns(const ProbeSpec& spec) {
  const ParallelConfig& config = spec.config();
  const DataParallelSharding sharding = config.dp_sharding();
  const std::string mode =
      absl::StrCat(" with config.dp_sharding (", DataParallelShardingName(sharding), ")");
  const std::string not_yet = ", which the native probe does not run yet";
  const int64_t shard_group = config.dims().dp_shard_group;
  if (shard_group > 0 && spec.model().is_moe()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.dp_shard_group (", shard_group, ") on mixture-of-experts model \"",
        spec.model().name(), "\"", mode, " shards within groups (hybrid sharding)", not_yet,
        "; it shards an MoE model over every data x context rank (config.dp_shard_group 0)"));
  }
  if (shard_group * config.cp() == 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.dp_shard_group (1) with config.context_parallel (1)", mode,
        " shards over groups of one rank", not_yet, ": every rank would hold whole states"));
  }
  if (!ShardsGradients(sharding)) return absl::OkStatus();
  if (spec.model().is_moe()) {
    return absl::InvalidArgumentError(
        absl::StrCat("mixture-of-experts model \"", spec.model().name(), "\"", mode, not_yet));
  }
  if (spec.training().fp8_param_gather()) {
    return absl::InvalidArgumentError(
        absl::StrCat("training.fp8_param_gather (true)", mode, not_yet));
  }
  if (spec.model().tied_embeddings() && config.pp() == 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.tied_embeddings (true) on one pipeline stage (config.pipeline_parallel 1)", mode,
        not_yet, ": the embedding is both the first and the last unit's"));
  }
  if (ShardsWeights(sharding) && spec.training().fp8()) {
    return absl::InvalidArgumentError(absl::StrCat("training.precision (FP8)", mode, not_yet,
                                                   " (it runs full sharding in bf16)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckCudaProbeRuns(const ProbeSpec& spec) {
  PT_RETURN_IF_ERROR(CheckLlamaHeadWidth(spec.model(), "the native probe"));
  PT_RETURN_IF_ERROR(CheckShardingRuns(spec));
  if (spec.model().is_moe()) PT_RETURN_IF_ERROR(CheckMoeBlockRuns(spec));
  const TrainingSpec& training = spec.training();
  const ParallelConfig& config = spec.config();
  if (training.fp8()) PT_RETURN_IF_ERROR(CheckFp8Shapes(spec.model(), training, config));
  const int64_t tokens = config.micro_batch() * training.seq_len() / config.cp();
  if (config.sequence_parallel() && tokens % config.tp() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.sequence_parallel shards a micro-batch's ", tokens,
        " tokens per context-parallel rank (config.micro_batch_size x training.seq_len / "
        "config.context_parallel) over config.tensor_parallel (",
        config.tp(), "), which does not divide them"));
  }
  if (spec.micro_batch_counts().empty()) return absl::OkStatus();
  return CheckShortStepsFitTheFullStep(spec.assignment(), config, spec.micro_batches());
}

}  // namespace paratune
