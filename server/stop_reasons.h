// The texts that say why a search stopped (Search.stop_reason), for people.
#ifndef PARATUNE_SERVER_STOP_REASONS_H_
#define PARATUNE_SERVER_STOP_REASONS_H_

#include <string>

#include "proto/search.pb.h"

namespace paratune {

// Why a search could not start probing, with the counts that show where configurations went.
std::string NothingToProbeReason(const v1::SearchCounts& counts, bool include_risky);

// The stop reason of a search whose selected candidates have all been probed: the best
// measured one, or the first failure when none succeeded.
std::string ProbedAllReason(const v1::Search& search);

}  // namespace paratune

#endif  // PARATUNE_SERVER_STOP_REASONS_H_
