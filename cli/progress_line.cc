#include "cli/progress_line.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "convert/result_source.h"
#include "convert/search_progress.h"
#include "convert/search_text.h"

namespace paratune {

std::string DescribeProgress(const v1::SearchProgress& progress) {
  std::string text = absl::StrFormat(
      "probed %d of %d candidates (%d ok, %d failed), %d could still win", progress.probed(),
      progress.candidates(), progress.ok(), progress.failed(), progress.could_still_win());
  if (progress.running() > 0 || progress.waiting() > 0) {
    absl::StrAppendFormat(&text, "; %d running, %d waiting", progress.running(),
                          progress.waiting());
    // A confirmation is a second look at a probed candidate, not a retry.
    if (progress.confirming() > 0) {
      absl::StrAppendFormat(&text, " (%d confirming)", progress.confirming());
    }
  }
  return text;
}

std::string FormatProgress(const v1::Search& search) {
  std::string line = absl::StrCat(search.name(), " ", v1::SearchState_Name(search.state()), ": ",
                                  DescribeProgress(search.progress()), "; best ");
  const v1::Candidate* best = BestMeasured(search);
  if (best == nullptr) {
    absl::StrAppend(&line, "-");
  } else {
    const v1::ProbeResult& result = *LatestResult(*best);
    absl::StrAppendFormat(&line, "%.1f TFLOP/s per GPU %s (%s)", result.model_tflops_per_gpu(),
                          ResultSource(result), DescribeConfig(best->config()));
  }
  const v1::SearchCounts& counts = search.counts();
  if (counts.projected_remaining_gpu_seconds() > 0) {
    absl::StrAppendFormat(&line, "; ~%.2f GPU-hours, ~%.2f h left (projected)",
                          counts.projected_remaining_gpu_seconds() / 3600,
                          counts.projected_remaining_wall_seconds() / 3600);
  }
  return line;
}

}  // namespace paratune
