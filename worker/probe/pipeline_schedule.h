// The order in which one pipeline stage runs its forward and backward passes and exchanges
// activations and gradients with its neighbours: Megatron-LM's 1F1B schedule, and its
// interleaved variant for virtual pipeline stages (megatron/core/pipeline_parallel/
// schedules.py: forward_backward_pipelining_without_interleaving / _with_interleaving).
#ifndef PARATUNE_WORKER_PROBE_PIPELINE_SCHEDULE_H_
#define PARATUNE_WORKER_PROBE_PIPELINE_SCHEDULE_H_

#include <cstdint>
#include <optional>
#include <vector>

namespace paratune {

enum class PassDirection { kForward, kBackward };

// One model chunk's forward or backward pass over one micro-batch.
struct PipelinePass {
  PassDirection direction = PassDirection::kForward;
  int64_t chunk = 0;        // virtual stage on this rank, 0 .. v - 1
  int64_t micro_batch = 0;  // 0 .. m - 1
};

enum class TransferKind { kSendActivation, kReceiveActivation, kSendGradient, kReceiveGradient };

// A point-to-point transfer of one micro-batch's boundary tensor with a neighbouring stage.
// `chunk` is the chunk on this stage whose output (send) or input (receive) it is.
struct Transfer {
  TransferKind kind = TransferKind::kSendActivation;
  int64_t peer_stage = 0;
  int64_t chunk = 0;
  int64_t micro_batch = 0;
};

// Transfers to post together, as one NCCL group, and then the pass to run (none after the
// last pass). As in Megatron-LM, a group holds the sends of the passes since the last group
// and the receives of the passes up to the next one (the next pass with 1F1B; the next
// forward-backward pair of the interleaved steady state), so that neighbours waiting on each
// other exchange in one group: a send posted alone, waiting for a receiver whose own send
// waits for this stage, would deadlock.
struct ScheduleStep {
  std::vector<Transfer> transfers;
  std::optional<PipelinePass> pass;
};

// Stage `stage`'s steps for one training step of `micro_batches` micro-batches over
// `stages` pipeline stages of `virtual_stages` chunks each. Requires stages >= 1,
// virtual_stages >= 1 (> 1 only with stages > 1), micro_batches >= 1, and with
// virtual_stages > 1 micro_batches a multiple of stages (ProbeSpec checks these).
//
// Chunk c of stage s feeds chunk c of stage s + 1, and chunk c of the last stage feeds chunk
// c + 1 of stage 0. Stage 0's chunk 0 takes the embedding's output (nothing received) and the
// last stage's chunk v - 1 ends in the loss (nothing sent); backward mirrors forward.
std::vector<ScheduleStep> PipelineScheduleOf(int64_t stages, int64_t virtual_stages,
                                             int64_t micro_batches, int64_t stage);

// The most passes of `chunk` whose activations are held at once (forwards whose backward
// has not run yet), or of any chunk when `chunk` is nullopt.
int64_t MaxPassesInFlight(const std::vector<ScheduleStep>& schedule, std::optional<int64_t> chunk);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_PIPELINE_SCHEDULE_H_
