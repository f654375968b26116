// The TOP_K and EXHAUSTIVE policies (DESIGN.md §6): the candidates are chosen before probing
// starts (candidate_selection.h) and all picked at the first Next; the search ends when they
// are all probed.
#ifndef PARATUNE_SERVER_CORE_STATIC_POLICY_H_
#define PARATUNE_SERVER_CORE_STATIC_POLICY_H_

#include <cstddef>
#include <vector>

#include "server/core/search_policy.h"

namespace paratune {

class StaticPolicy : public SearchPolicy {
 public:
  // `selected` are indices into `candidates`, in the order to probe them.
  StaticPolicy(std::vector<PlannedConfig> candidates, std::vector<size_t> selected);

  const std::vector<PlannedConfig>& candidates() const override { return candidates_; }
  // Every selected candidate not handed out yet, as screening probes.
  Decision Next() override;
  void MarkInFlight(size_t index, ProbeKind kind) override;
  // Only checks the index: results change nothing of what is selected.
  absl::Status Record(size_t index, ProbeKind kind, const v1::ProbeResult& result) override;
  // The selected candidates not handed out yet.
  std::vector<size_t> Contending() const override;
  // A static policy probes what it selected: nothing is ruled out.
  const std::vector<size_t>& SkippedForMemory() const override { return none_skipped_; }

 private:
  // Moves first_left_ past the selected candidates handed out.
  void SkipHandedOut();

  const std::vector<PlannedConfig> candidates_;
  const std::vector<size_t> selected_;
  // By candidate index: picked by Next or marked in flight.
  std::vector<bool> handed_out_;
  // Every selected candidate before this rank was handed out: what is left is looked for
  // from here, so that once everything was (after the first Next) a call costs nothing.
  size_t first_left_ = 0;
  const std::vector<size_t> none_skipped_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_STATIC_POLICY_H_
