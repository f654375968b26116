// The phases a probe's step time is broken into (ProbeMeasurements.phases).
#ifndef PARATUNE_WORKER_PROBE_PROBE_PHASE_H_
#define PARATUNE_WORKER_PROBE_PROBE_PHASE_H_

namespace paratune {

enum class ProbePhase {
  kGemm,           // linear layers and the LM head
  kAttention,      // rotary embedding, scores, softmax, values and their gradients
  kElementwise,    // RMSNorm, SwiGLU, residual adds, embedding, cross-entropy
  kTpCollectives,  // tensor-parallel all-gathers, reduce-scatters, all-reduces
  kCpCollectives,  // context-parallel K/V all-gathers and gradient reduce-scatters
  kEpCollectives,  // the MoE dispatcher's all-to-alls over the expert group and its
                   // expert-tensor-parallel all-gathers and reduce-scatters
  kPpSendRecv,     // pipeline sends and receives, waiting for the neighbour included
  kDpCollectives,  // data-parallel gradient reduce-scatter and parameter all-gather
  kOptimizer,      // Adam over the rank's shard
  kCount,
};

// "gemm", "attention", "elementwise", "tp_collectives", "cp_collectives", "ep_collectives",
// "pp_send_recv", "dp_collectives", "optimizer".
inline const char* ProbePhaseName(ProbePhase phase) {
  switch (phase) {
    case ProbePhase::kGemm:
      return "gemm";
    case ProbePhase::kAttention:
      return "attention";
    case ProbePhase::kElementwise:
      return "elementwise";
    case ProbePhase::kTpCollectives:
      return "tp_collectives";
    case ProbePhase::kCpCollectives:
      return "cp_collectives";
    case ProbePhase::kEpCollectives:
      return "ep_collectives";
    case ProbePhase::kPpSendRecv:
      return "pp_send_recv";
    case ProbePhase::kDpCollectives:
      return "dp_collectives";
    case ProbePhase::kOptimizer:
      return "optimizer";
    case ProbePhase::kCount:
      break;
  }
  return "unknown";
}

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_PROBE_PHASE_H_
