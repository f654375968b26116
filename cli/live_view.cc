#include "cli/live_view.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "cli/progress_line.h"
#include "cli/report.h"
#include "cli/text_width.h"
#include "convert/search_text.h"

namespace paratune {
namespace {

// Candidates waiting for the same reason share one line.
struct Waiting {
  std::string reason;
  std::vector<std::string> configs;
};

std::vector<Waiting> WaitingByReason(const v1::Search& search) {
  std::vector<Waiting> waiting;
  for (const v1::Candidate& candidate : search.candidates()) {
    if (candidate.waiting_reason().empty()) continue;
    auto it = std::find_if(waiting.begin(), waiting.end(), [&](const Waiting& w) {
      return w.reason == candidate.waiting_reason();
    });
    if (it == waiting.end()) it = waiting.insert(waiting.end(), {candidate.waiting_reason(), {}});
    it->configs.push_back(DescribeConfig(candidate.config()));
  }
  return waiting;
}

}  // namespace

std::string FormatLiveView(const v1::Search& search, const std::vector<std::string>& recent_events,
                           int max_rows, size_t columns) {
  // A line as wide as the terminal leaves the cursor past its edge on some terminals.
  const size_t width = std::max<size_t>(columns, 2) - 1;
  std::string out = WrapToWidth(FormatProgress(search), width, 2);
  for (const std::string& event : recent_events) {
    absl::StrAppend(&out, "  ", CutToWidth(event, width > 2 ? width - 2 : 1), "\n");
  }
  if (search.candidates().empty()) return out;
  const CandidateTable table = RankedCandidates(search, max_rows);
  absl::StrAppend(&out, table.table.RenderFitted(width));
  if (search.candidates_size() > max_rows) {
    absl::StrAppend(&out, "(", search.candidates_size() - max_rows, " more)\n");
  }
  for (const Waiting& waiting : WaitingByReason(search)) {
    const std::string line =
        waiting.configs.size() == 1
            ? absl::StrCat("waiting: ", waiting.configs[0], " ", waiting.reason)
            : absl::StrCat("waiting (", waiting.configs.size(), " candidates): ", waiting.reason);
    absl::StrAppend(&out, WrapToWidth(line, width, 2));
  }
  for (const std::string& source : table.sources) {
    const SourceMark mark = SourceMarkOf(source);
    if (!mark.mark.empty()) absl::StrAppend(&out, WrapToWidth(mark.short_legend, width, 2));
  }
  return out;
}

}  // namespace paratune
