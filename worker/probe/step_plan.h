// Everything one rank of a probe does in one training step, in order, as data (step_ops.h):
// the GEMMs with their shapes and dtypes, attention's passes, every collective with its group,
// dtype, bytes and stream, the fp8 casts and amax updates, the optimizer's work, the pipeline
// transfers with their micro-batch and chunk, recomputation, and the activation slot each pass
// holds. It is what StageRunner (stage_runner.h), the code that drives the device, asks for in
// a step, recorded by recording_device_ops.h: CPU tests check it against Megatron-LM's
// arithmetic (docs/probe.md, "The step plan"), and a change of what the probe does shows in the
// golden files' diff.
#ifndef PARATUNE_WORKER_PROBE_STEP_PLAN_H_
#define PARATUNE_WORKER_PROBE_STEP_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/probe/footprint_plan.h"
#include "worker/probe/probe_spec.h"
#include "worker/probe/step_ops.h"

namespace paratune {

struct StepPlan {
  int64_t rank = 0;
  int64_t stage = 0;
  int64_t micro_batches = 0;
  std::vector<StepOp> ops;
  // The most activation slots and loss slots held at once over the step.
  int64_t most_activation_slots = 0;
  int64_t most_loss_slots = 0;
  // The paths the step's linear backward passes take, each once per use.
  std::vector<NormLinearBackwardPath> norm_linear_backward_paths;
  std::vector<RowLinearBackwardPath> row_linear_backward_paths;
};

// The plan of global rank `rank` of `spec` (0 <= rank < spec.layout().world_size()) for a step
// of `micro_batches` micro-batches (the full step's, or one of its short counts), whose
// footprint is `footprint` (FootprintPlan::Create for the rank's stage with MemoryOptions()).
// INVALID_ARGUMENT naming the value for a rank or micro-batch count out of range, the errors
// of ContextRingSteps and TensorParallelOverlapPlanOf, and StageRunner::Step's INTERNAL errors
// (more slots than the footprint holds, a data-parallel plan step never reached, a place
// outside its buffer).
absl::StatusOr<StepPlan> StepPlanOf(const ProbeSpec& spec, const FootprintPlan& footprint,
                                    int64_t rank, int64_t micro_batches);

// GEMM FLOPs plus attention model FLOPs of the step.
double PlanModelFlops(const StepPlan& plan);

// The plan as the golden files hold it (testdata/*.steps): DescribeOp's line per op, except
// that layers whose ops repeat those of the layer before them, but for the layer's index, in
// the same pass, chunk, micro-batch and slot, are folded into one line after that layer's:
// "p0 c0 mb0 s0 L1..L15: as L0 (24 ops each)".
std::vector<std::string> DescribeSteps(const StepPlan& plan);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_STEP_PLAN_H_
