#include "server/core/stop_reasons.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "convert/search_text.h"

namespace paratune {

std::string RiskAndFailureNote(const v1::SearchCounts& counts) {
  std::string note;
  if (counts.risky_probed() > 0) {
    absl::StrAppend(&note, "; ", counts.risky_probed(), " RISKY candidates probed, ",
                    counts.risky_out_of_memory(), " ran out of memory");
  }
  if (counts.failed_gpu_seconds() > 0) {
    absl::StrAppend(&note, "; failed probes cost ",
                    absl::StrFormat("%.2f", counts.failed_gpu_seconds() / 3600), " GPU-hours");
  }
  return note;
}

std::string NothingToProbeReason(const v1::SearchCounts& counts, bool include_risky,
                                 const std::vector<v1::PlanAdvice>& advice) {
  if (counts.valid() == 0) {
    return absl::StrCat("no valid configuration: ", counts.enumerated(),
                        " enumerated, 0 pass the validity rules (Plan lists the rejection "
                        "reasons)");
  }
  std::string reason = absl::StrCat("no memory-safe configuration to probe: ", counts.enumerated(),
                                    " enumerated, ", counts.valid(), " valid, ",
                                    counts.memory_safe(), " memory-safe, ", counts.memory_risky(),
                                    " risky, ", counts.memory_out_of_memory(), " out of memory");
  if (!include_risky && counts.memory_risky() > 0) {
    absl::StrAppend(&reason,
                    "; its memory policy is SAFE_ONLY: MEASURE_RISKY (the default; submit "
                    "--memory_policy=measure_risky) probes the risky ones, or add GPUs");
  } else if (!advice.empty()) {
    std::vector<std::string> changes;
    for (const v1::PlanAdvice& change : advice) changes.push_back(DescribePlanAdvice(change));
    absl::StrAppend(&reason,
                    "; each of these changes gives candidates: ", absl::StrJoin(changes, "; "));
  } else {
    absl::StrAppend(&reason, "; add GPUs, use GPUs with more memory or shorten the sequence");
  }
  return reason;
}

std::string ProbedAllReason(const v1::Search& search) {
  const v1::SearchCounts& counts = search.counts();
  const v1::Candidate* best = nullptr;
  const v1::Candidate* first_failure = nullptr;
  for (const v1::Candidate& candidate : search.candidates()) {
    if (candidate.probe_result().outcome() == v1::PROBE_OK) {
      if (best == nullptr || candidate.probe_result().model_tflops_per_gpu() >
                                 best->probe_result().model_tflops_per_gpu()) {
        best = &candidate;
      }
    } else if (first_failure == nullptr) {
      first_failure = &candidate;
    }
  }
  if (best == nullptr) {
    std::string reason =
        absl::StrCat("all ", counts.selected(), " selected candidates failed their probes");
    if (first_failure != nullptr) {
      absl::StrAppend(&reason, "; first: ", DescribeConfig(first_failure->config()), ": ",
                      DescribeResult(first_failure->probe_result()));
    }
    return reason;
  }
  std::string reason = absl::StrCat("probed all ", counts.selected(), " selected candidates");
  if (counts.failed() > 0) absl::StrAppend(&reason, " (", counts.failed(), " failed)");
  absl::StrAppend(&reason, "; best ", DescribeConfig(best->config()), " at ",
                  DescribeResult(best->probe_result()));
  return reason;
}

}  // namespace paratune
