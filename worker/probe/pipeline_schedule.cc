#include "worker/probe/pipeline_schedule.h"

#include <algorithm>

namespace paratune {
namespace {

// Megatron-LM's virtual micro-batch k of the interleaved schedule: groups of p consecutive
// micro-batches run through chunk 0, then chunk 1, ...; backward visits chunks in reverse.
PipelinePass VirtualPass(PassDirection direction, int64_t k, int64_t p, int64_t v) {
  PipelinePass pass;
  pass.direction = direction;
  const int64_t chunk = k % (p * v) / p;
  pass.chunk = direction == PassDirection::kForward ? chunk : v - 1 - chunk;
  pass.micro_batch = k / (p * v) * p + k % p;
  return pass;
}

// The passes in Megatron-LM's order, grouped into the iterations between which it
// communicates: warm-up forwards, steady-state pairs and cool-down backwards. Its 1F1B
// schedule communicates after every pass, its interleaved schedule once per steady-state
// forward-backward pair (send_forward_backward_recv_forward_backward).
std::vector<std::vector<PipelinePass>> Iterations(int64_t p, int64_t v, int64_t m, int64_t stage) {
  const int64_t total = m * v;
  int64_t warmup;
  if (v == 1) {
    warmup = std::min(p - stage - 1, m);
  } else if (m == p) {
    // With one micro-batch per stage and chunk, Megatron-LM runs every forward first.
    warmup = total;
  } else {
    warmup = std::min(2 * (p - stage - 1) + (v - 1) * p, total);
  }
  std::vector<std::vector<PipelinePass>> iterations;
  for (int64_t k = 0; k < warmup; ++k) {
    iterations.push_back({VirtualPass(PassDirection::kForward, k, p, v)});
  }
  for (int64_t k = 0; k < total - warmup; ++k) {
    const PipelinePass forward = VirtualPass(PassDirection::kForward, k + warmup, p, v);
    const PipelinePass backward = VirtualPass(PassDirection::kBackward, k, p, v);
    if (v == 1) {
      iterations.push_back({forward});
      iterations.push_back({backward});
    } else {
      iterations.push_back({forward, backward});
    }
  }
  for (int64_t k = total - warmup; k < total; ++k) {
    iterations.push_back({VirtualPass(PassDirection::kBackward, k, p, v)});
  }
  return iterations;
}

struct PassTransfers {
  std::vector<Transfer> before;  // receives the pass needs
  std::vector<Transfer> after;   // sends of what it produced
};

PassTransfers TransfersOf(const PipelinePass& pass, int64_t p, int64_t v, int64_t stage) {
  const bool model_input = stage == 0 && pass.chunk == 0;
  const bool model_output = stage == p - 1 && pass.chunk == v - 1;
  const int64_t previous = (stage + p - 1) % p;
  const int64_t next = (stage + 1) % p;
  PassTransfers transfers;
  if (pass.direction == PassDirection::kForward) {
    if (!model_input) {
      transfers.before.push_back(
          {TransferKind::kReceiveActivation, previous, pass.chunk, pass.micro_batch});
    }
    if (!model_output) {
      transfers.after.push_back(
          {TransferKind::kSendActivation, next, pass.chunk, pass.micro_batch});
    }
  } else {
    if (!model_output) {
      transfers.before.push_back(
          {TransferKind::kReceiveGradient, next, pass.chunk, pass.micro_batch});
    }
    if (!model_input) {
      transfers.after.push_back(
          {TransferKind::kSendGradient, previous, pass.chunk, pass.micro_batch});
    }
  }
  return transfers;
}

}  // namespace

std::vector<ScheduleStep> PipelineScheduleOf(int64_t stages, int64_t virtual_stages,
                                             int64_t micro_batches, int64_t stage) {
  std::vector<ScheduleStep> schedule;
  std::vector<Transfer> pending_sends;
  for (const std::vector<PipelinePass>& iteration :
       Iterations(stages, virtual_stages, micro_batches, stage)) {
    std::vector<Transfer> group = std::move(pending_sends);
    pending_sends.clear();
    for (const PipelinePass& pass : iteration) {
      PassTransfers transfers = TransfersOf(pass, stages, virtual_stages, stage);
      group.insert(group.end(), transfers.before.begin(), transfers.before.end());
      pending_sends.insert(pending_sends.end(), transfers.after.begin(), transfers.after.end());
    }
    for (const PipelinePass& pass : iteration) {
      schedule.push_back({std::move(group), pass});
      group.clear();
    }
  }
  if (!pending_sends.empty()) schedule.push_back({std::move(pending_sends), std::nullopt});
  return schedule;
}

int64_t MaxPassesInFlight(const std::vector<ScheduleStep>& schedule, std::optional<int64_t> chunk) {
  int64_t in_flight = 0;
  int64_t most = 0;
  for (const ScheduleStep& step : schedule) {
    if (!step.pass.has_value()) continue;
    if (chunk.has_value() && step.pass->chunk != *chunk) continue;
    in_flight += step.pass->direction == PassDirection::kForward ? 1 : -1;
    most = std::max(most, in_flight);
  }
  return most;
}

}  // namespace paratune
