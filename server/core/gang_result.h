// One probe's result from the results of the workers that ran its ranks (DESIGN.md §7).
#ifndef PARATUNE_SERVER_CORE_GANG_RESULT_H_
#define PARATUNE_SERVER_CORE_GANG_RESULT_H_

#include <vector>

#include "proto/probe.pb.h"

namespace paratune {

// The result of a probe whose members all reported PROBE_OK, `by_member` in gang order
// (non-empty). The probe's timing is that of the first member that timed its steps: rank 0's
// when it did (paratune-probe reduces over ranks itself, as nccl-tests does), else e.g. the
// last node's, where Megatron-LM logs its iteration times. Peak memory and wall time are the
// largest any member saw, and `measured` / `modelled` are the union, measured winning where a
// part appears in both. PROBE_CRASH saying so when no member reported step times.
v1::ProbeResult CombineGangResults(const std::vector<v1::ProbeResult>& by_member);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_GANG_RESULT_H_
