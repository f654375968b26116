#include "worker/probe_run.h"

namespace paratune {

PhaseProvenance StepPhases(const ProbeSpec& spec, Provenance mark) {
  const ParallelConfig& config = spec.config();
  PhaseProvenance phases{};
  const auto set = [&phases, mark](ProbePhase phase, bool runs) {
    phases[static_cast<int>(phase)] = runs ? mark : Provenance::kAbsent;
  };
  set(ProbePhase::kGemm, true);
  set(ProbePhase::kAttention, true);
  set(ProbePhase::kElementwise, true);
  set(ProbePhase::kOptimizer, true);
  set(ProbePhase::kTpCollectives, config.tp() > 1);
  set(ProbePhase::kCpCollectives, config.cp() > 1);
  set(ProbePhase::kEpCollectives, spec.model().is_moe() && config.ep() * config.etp() > 1);
  set(ProbePhase::kPpSendRecv, config.pp() > 1);
  set(ProbePhase::kDpCollectives, config.dp() * config.cp() > 1);
  return phases;
}

}  // namespace paratune
