#include "server/core/static_policy.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace paratune {

StaticPolicy::StaticPolicy(std::vector<PlannedConfig> candidates, std::vector<size_t> selected)
    : candidates_(std::move(candidates)),
      selected_(std::move(selected)),
      handed_out_(candidates_.size(), false) {}

SearchPolicy::Decision StaticPolicy::Next() {
  Decision decision;
  for (size_t rank = first_left_; rank < selected_.size(); ++rank) {
    const size_t index = selected_[rank];
    if (handed_out_[index]) continue;
    handed_out_[index] = true;
    decision.picks.push_back(Pick{index, ProbeKind::kScreening,
                                  absl::StrCat("predicted rank ", index + 1, ", selected ",
                                               rank + 1, " of ", selected_.size())});
  }
  SkipHandedOut();
  return decision;
}

std::vector<size_t> StaticPolicy::Contending() const {
  std::vector<size_t> left;
  for (size_t rank = first_left_; rank < selected_.size(); ++rank) {
    if (!handed_out_[selected_[rank]]) left.push_back(selected_[rank]);
  }
  return left;
}

void StaticPolicy::MarkInFlight(size_t index, ProbeKind /*kind*/) {
  if (index < handed_out_.size()) handed_out_[index] = true;
  SkipHandedOut();
}

void StaticPolicy::SkipHandedOut() {
  while (first_left_ < selected_.size() && handed_out_[selected_[first_left_]]) ++first_left_;
}

absl::Status StaticPolicy::Record(size_t index, ProbeKind kind, const v1::ProbeResult& /*result*/) {
  if (index >= candidates_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("candidate index (", index, ") must be below ", candidates_.size()));
  }
  MarkInFlight(index, kind);
  return absl::OkStatus();
}

}  // namespace paratune
