#include "server/core/search_budget.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/util/time_util.h"

namespace paratune {

bool DeadlinePassed(const v1::SearchBudget& budget, absl::Duration elapsed) {
  return budget.deadline_seconds() > 0 && elapsed >= absl::Seconds(budget.deadline_seconds());
}

absl::Duration SearchAge(const v1::Search& search, absl::Time now) {
  return now - absl::FromUnixNanos(
                   google::protobuf::util::TimeUtil::TimestampToNanoseconds(search.create_time()));
}

std::optional<std::string> BudgetReached(const v1::SearchBudget& budget, const BudgetUse& use) {
  if (DeadlinePassed(budget, use.elapsed)) {
    return absl::StrCat("budget: deadline (",
                        absl::FormatDuration(absl::Seconds(budget.deadline_seconds())), ") passed");
  }
  if (budget.max_probes() > 0 && use.probes_started >= budget.max_probes()) {
    return absl::StrCat("budget: max_probes (", budget.max_probes(), ") reached");
  }
  if (budget.max_gpu_seconds() > 0 && use.gpu_seconds >= budget.max_gpu_seconds()) {
    return absl::StrFormat("budget: max_gpu_seconds (%g) reached after %.0f GPU-seconds",
                           budget.max_gpu_seconds(), use.gpu_seconds);
  }
  return std::nullopt;
}

}  // namespace paratune
