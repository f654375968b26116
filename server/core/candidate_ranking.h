// The order in which a search presents its candidates.
#ifndef PARATUNE_SERVER_CORE_CANDIDATE_RANKING_H_
#define PARATUNE_SERVER_CORE_CANDIDATE_RANKING_H_

#include <vector>

#include "proto/search.pb.h"

namespace paratune {

// `candidates` in predicted order (best first) reordered: those probed PROBE_OK by measured
// TFLOP/s per GPU, best first (ties in predicted order), then the rest in predicted order.
std::vector<v1::Candidate> RankCandidates(std::vector<v1::Candidate> candidates);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_CANDIDATE_RANKING_H_
