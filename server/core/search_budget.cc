#include "server/core/search_budget.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace paratune {

bool DeadlinePassed(const v1::SearchBudget& budget, const BudgetUse& use) {
  return budget.deadline_seconds() > 0 && use.elapsed >= absl::Seconds(budget.deadline_seconds());
}

std::optional<std::string> BudgetReached(const v1::SearchBudget& budget, const BudgetUse& use) {
  if (DeadlinePassed(budget, use)) {
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
