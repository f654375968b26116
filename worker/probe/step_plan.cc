#include "worker/probe/step_plan.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/probe/optimizer_layout.h"
#include "worker/probe/recording_device_ops.h"
#include "worker/probe/stage_runner.h"

namespace paratune {

double PlanModelFlops(const StepPlan& plan) {
  double flops = 0;
  for (const StepOp& op : plan.ops) {
    if (const auto* gemm = std::get_if<GemmOp>(&op.detail)) flops += gemm->Flops();
    if (const auto* attention = std::get_if<AttentionOp>(&op.detail)) {
      flops += attention->ModelFlops();
    }
  }
  return flops;
}

absl::StatusOr<StepPlan> StepPlanOf(const ProbeSpec& spec, const FootprintPlan& footprint,
                                    int64_t rank, int64_t micro_batches) {
  if (rank < 0 || rank >= spec.layout().world_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " is not in [0, ", spec.layout().world_size(), ")"));
  }
  if (micro_batches < 1 || micro_batches > spec.micro_batches()) {
    return absl::InvalidArgumentError(absl::StrCat("micro_batches ", micro_batches,
                                                   " is not in [1, ", spec.micro_batches(), "]"));
  }
  const OptimizerLayout optimizer = OptimizerLayoutOf(spec, footprint, rank);
  PT_ASSIGN_OR_RETURN(std::unique_ptr<RecordingDeviceOps> recording,
                      RecordingDeviceOps::Create(spec, footprint, optimizer, rank));
  PT_ASSIGN_OR_RETURN(std::unique_ptr<StageRunner> runner,
                      StageRunner::Create(spec, footprint, optimizer, rank, recording.get()));
  runner->SetMicroBatches(micro_batches);
  PT_RETURN_IF_ERROR(runner->Step());
  StepPlan plan;
  plan.rank = rank;
  plan.stage = spec.layout().CoordinatesOf(rank).pp;
  plan.micro_batches = micro_batches;
  plan.ops = recording->TakeOps();
  const StepTally& tally = runner->last_step();
  plan.most_activation_slots = tally.most_activation_slots;
  plan.most_loss_slots = tally.most_loss_slots;
  plan.norm_linear_backward_paths = tally.norm_linear_backward_paths;
  plan.row_linear_backward_paths = tally.row_linear_backward_paths;
  return plan;
}

namespace {

// The op's line without its layer: equal for the same op of two layers.
std::string DescribeOpOfAnyLayer(const StepOp& op) {
  StepOp any_layer = op;
  any_layer.context.layer = -1;
  return DescribeOp(any_layer);
}

bool SameLayerBlock(const StepOpContext& a, const StepOpContext& b) {
  return a.pass == b.pass && a.chunk == b.chunk && a.micro_batch == b.micro_batch &&
         a.slot == b.slot && a.recompute == b.recompute && a.layer == b.layer;
}

}  // namespace

std::vector<std::string> DescribeSteps(const StepPlan& plan) {
  // Blocks of consecutive ops of one layer (or single ops outside a layer), each with its
  // lines without the layer.
  struct Block {
    size_t first = 0;
    size_t end = 0;
    std::vector<std::string> any_layer;
  };
  std::vector<Block> blocks;
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    const StepOpContext& at = plan.ops[i].context;
    if (blocks.empty() || at.layer < 0 || plan.ops[blocks.back().first].context.layer < 0 ||
        !SameLayerBlock(plan.ops[blocks.back().first].context, at)) {
      blocks.push_back({i, i, {}});
    }
    blocks.back().end = i + 1;
    blocks.back().any_layer.push_back(DescribeOpOfAnyLayer(plan.ops[i]));
  }
  std::vector<std::string> lines;
  for (size_t b = 0; b < blocks.size();) {
    const Block& block = blocks[b];
    for (size_t i = block.first; i < block.end; ++i) lines.push_back(DescribeOp(plan.ops[i]));
    // The blocks after it that repeat it in the same pass, chunk, micro-batch and slot.
    const StepOpContext& at = plan.ops[block.first].context;
    size_t next = b + 1;
    while (at.layer >= 0 && next < blocks.size() && blocks[next].any_layer == block.any_layer) {
      StepOpContext other = plan.ops[blocks[next].first].context;
      other.layer = at.layer;
      if (!SameLayerBlock(other, at)) break;
      ++next;
    }
    if (next > b + 1) {
      const int64_t first = plan.ops[blocks[b + 1].first].context.layer;
      const int64_t last = plan.ops[blocks[next - 1].first].context.layer;
      const size_t ops = block.end - block.first;
      lines.push_back(absl::StrCat(
          DescribeContext(
              at, first == last ? absl::StrCat("L", first) : absl::StrCat("L", first, "..L", last)),
          ": as L", at.layer, " (", ops, ops == 1 ? " op" : " ops", next > b + 2 ? " each)" : ")"));
    }
    b = next;
  }
  return lines;
}

}  // namespace paratune
