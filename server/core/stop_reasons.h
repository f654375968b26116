// The texts that say why a search stopped (Search.stop_reason), for people.
#ifndef PARATUNE_SERVER_CORE_STOP_REASONS_H_
#define PARATUNE_SERVER_CORE_STOP_REASONS_H_

#include <string>
#include <vector>

#include "proto/autotuner_service.pb.h"
#include "proto/search.pb.h"

namespace paratune {

// Why a search could not start probing, with the counts that show where configurations went.
// What probing the memory-risky band and failed probes cost, to end a stop reason with:
// "; 5 RISKY candidates probed, 1 ran out of memory; failed probes cost 0.42 GPU-hours", or ""
// when neither happened.
std::string RiskAndFailureNote(const v1::SearchCounts& counts);

// Why a search has nothing to probe: the counts, and the changes that give candidates
// (`advice`, PlanResponse.advice) or, without any, what else could.
std::string NothingToProbeReason(const v1::SearchCounts& counts, bool include_risky,
                                 const std::vector<v1::PlanAdvice>& advice);

// The stop reason of a search whose selected candidates have all been probed: the best
// measured one, or the first failure when none succeeded.
std::string ProbedAllReason(const v1::Search& search);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_STOP_REASONS_H_
