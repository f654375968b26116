// The order in which a search presents its candidates.
#ifndef PARATUNE_CONVERT_CANDIDATE_RANKING_H_
#define PARATUNE_CONVERT_CANDIDATE_RANKING_H_

#include "google/protobuf/repeated_ptr_field.h"
#include "proto/search.pb.h"

namespace paratune {

// Reorders `candidates`, which arrive in predicted order (best first): those probed PROBE_OK
// by measured TFLOP/s per GPU, best first (ties in predicted order), then the rest in
// predicted order. Moves pointers only: no candidate is copied.
void RankCandidates(google::protobuf::RepeatedPtrField<v1::Candidate>& candidates);

}  // namespace paratune

#endif  // PARATUNE_CONVERT_CANDIDATE_RANKING_H_
