#include "convert/candidate_ranking.h"

#include <algorithm>

namespace paratune {
namespace {

bool ProbedOk(const v1::Candidate& candidate) {
  return candidate.state() == v1::CANDIDATE_PROBED &&
         candidate.probe_result().outcome() == v1::PROBE_OK;
}

}  // namespace

void RankCandidates(google::protobuf::RepeatedPtrField<v1::Candidate>& candidates) {
  // Stable, so equal keys keep the predicted order they arrived in.
  std::stable_sort(candidates.pointer_begin(), candidates.pointer_end(),
                   [](const v1::Candidate* a, const v1::Candidate* b) {
                     const bool a_ok = ProbedOk(*a);
                     const bool b_ok = ProbedOk(*b);
                     if (a_ok != b_ok) return a_ok;
                     if (!a_ok) return false;
                     return a->probe_result().model_tflops_per_gpu() >
                            b->probe_result().model_tflops_per_gpu();
                   });
}

}  // namespace paratune
