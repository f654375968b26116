// Probe specs for the step plan's tests: a builder over TestAssignment's options, and the
// golden specs of issue 24 whose recorded steps live in worker/probe/testdata/*.steps
// (docs/probe.md, "The step plan").
#ifndef PARATUNE_WORKER_PROBE_STEP_PLAN_SPECS_H_
#define PARATUNE_WORKER_PROBE_STEP_PLAN_SPECS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/probe/footprint_plan.h"
#include "worker/probe/probe_spec.h"

namespace paratune {

struct PlanSpecOptions {
  std::string preset = "llama3.1-8b";
  // Explicit dimensions in place of `preset` when set (hidden_size > 0).
  v1::ModelSpec model;
  std::string gpu = "h200-141gb";
  int64_t global_batch = 2;
  int64_t seq_len = 8192;
  // GPUs per node: the cluster has world / gpus_per_node nodes (all of them when fewer).
  int64_t gpus_per_node = 8;
  int64_t dp = 1;
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t cp = 1;
  int64_t micro_batch = 1;
  int64_t virtual_pipeline = 1;
  // A mixture-of-experts model's expert parallel and expert tensor parallel sizes (etp 0 is
  // tp's).
  int64_t ep = 1;
  int64_t etp = 0;
  bool sequence_parallel = true;
  v1::Recompute recompute = v1::RECOMPUTE_NONE;
  bool fp8 = false;
  bool fp8_param_gather = false;
  bool tp_comm_overlap = false;
  bool cp_all_gather = false;
  bool distributed_optimizer = true;
  // training.moe_capacity_factor (0: dropless).
  double moe_capacity_factor = 0;
  // config.dp_sharding; unspecified: the training's default (distributed_optimizer's).
  v1::DataParallelSharding dp_sharding = v1::DP_SHARDING_UNSPECIFIED;
  // config.dp_shard_group (0: shard over every data x context rank).
  int64_t dp_shard_group = 0;
  bool replica = false;
};

// The ProbeSpec of a FULL (or with `replica` a REPLICA) probe of `options`;
// ProbeSpec::FromAssignment's errors.
absl::StatusOr<ProbeSpec> PlanSpecOf(const PlanSpecOptions& options);

// A golden spec: its name (the testdata file's stem), its options, and the global rank whose
// step the golden file records.
struct GoldenSpec {
  std::string name;
  PlanSpecOptions options;
  int64_t rank = 0;
};

// Llama-3.2-1B at s 1024 on one rank, the tests' quick spec.
PlanSpecOptions SmallPlanSpecOptions();

// Mixtral 8x7B's proportions shrunk to h 1024 (Mixtral: h 4096, f 14336, 32 heads of 8 kv
// heads, vocabulary 32000, 8 experts, top-2, every layer MoE): f = f_e 3584, 8 heads of 2 kv
// heads, 4 layers, vocabulary 32000, 8 experts, top-2.
v1::ModelSpec ShrunkMixtral();

// Llama 4's proportions shrunk to h 1280 (Llama 4 Scout and Maverick: h 5120, 40 heads of 128
// with 8 kv heads, dense f 16384, f_e = f_s 8192, one shared expert, top-1, a sigmoid router):
// 10 heads of 128 with 2 kv heads, f 4096, f_e = f_s 2048, 4 layers, vocabulary 202048, Scout's
// 16 experts with Maverick's interleaving (every other layer MoE, layers 1 and 3).
v1::ModelSpec ShrunkLlama4();

// What the probe allocates for global rank `rank` of `spec` (FootprintPlan::OfStage).
FootprintPlan RankFootprintOf(const ProbeSpec& spec, int64_t rank);

// The six specs of issue 24, section 2, a shrunk Mixtral (issue 26, section 5), sharded
// gradients and sharded weights (issue 27, section 4), a shrunk Llama 4 with a shared expert
// (issue 26, section 5), and hybrid sharding of the weights and of the optimizer states
// (issue 27, section 4).
std::vector<GoldenSpec> GoldenSpecs();

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_STEP_PLAN_SPECS_H_
