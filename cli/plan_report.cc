#include "cli/plan_report.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "cli/report.h"
#include "cli/table.h"
#include "cli/terminal.h"
#include "convert/search_text.h"

namespace paratune {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string Percent(double fraction) { return absl::StrFormat("%.1f%%", 100.0 * fraction); }

std::string GiB(double bytes) { return absl::StrFormat("%.2f GiB", bytes / kGiB); }

// The colour of a memory verdict in the map.
Color VerdictColor(v1::MemoryVerdict verdict) {
  switch (verdict) {
    case v1::SAFE:
      return Color::kGreen;
    case v1::RISKY:
      return Color::kYellow;
    default:
      return Color::kRed;
  }
}

}  // namespace

std::string FormatMemoryMap(const v1::MemoryMap& map, bool color) {
  const bool show_vp = map.virtual_pipeline_sizes_size() > 1;
  const bool show_recompute = map.recompute_modes_size() > 1;
  // A mixture-of-experts plan has a row per expert layout of each (tp, cp, pp): its ep, and its
  // etp where one differs from tp. A dense plan's map stays as it was.
  bool show_ep = false;
  bool show_etp = false;
  for (const v1::MemoryMapRow& map_row : map.rows()) {
    const v1::ParallelConfig& shape = map_row.shape();
    show_ep = show_ep || shape.expert_parallel() > 1;
    show_etp = show_etp || (shape.expert_tensor_parallel() != 0 &&
                            shape.expert_tensor_parallel() != shape.tensor_parallel());
  }
  std::vector<Table::Column> columns = {{"tp", true}, {"cp", true}, {"pp", true}, {"dp", true}};
  if (show_ep) columns.push_back({"ep", true});
  if (show_etp) columns.push_back({"etp", true});
  if (show_vp) columns.push_back({"vp", true});
  if (show_recompute) columns.push_back({"recompute", false});
  for (int64_t size : map.micro_batch_sizes()) {
    columns.push_back({absl::StrCat("mbs ", size), true});
  }
  Table table(columns);
  for (const v1::MemoryMapRow& map_row : map.rows()) {
    const v1::ParallelConfig& shape = map_row.shape();
    std::vector<std::string> row = {
        absl::StrCat(shape.tensor_parallel()), absl::StrCat(shape.context_parallel()),
        absl::StrCat(shape.pipeline_parallel()), absl::StrCat(shape.data_parallel())};
    if (show_ep) row.push_back(absl::StrCat(std::max<int64_t>(shape.expert_parallel(), 1)));
    if (show_etp) {
      row.push_back(absl::StrCat(shape.expert_tensor_parallel() == 0
                                     ? shape.tensor_parallel()
                                     : shape.expert_tensor_parallel()));
    }
    if (show_vp) row.push_back(absl::StrCat(std::max<int64_t>(shape.virtual_pipeline(), 1)));
    if (show_recompute) {
      row.push_back(absl::AsciiStrToLower(
          absl::StripPrefix(v1::Recompute_Name(shape.recompute()), "RECOMPUTE_")));
    }
    // Cells are ascending by micro-batch size, as the columns.
    int cell = 0;
    for (int64_t size : map.micro_batch_sizes()) {
      if (cell >= map_row.cells_size() || map_row.cells(cell).micro_batch_size() != size) {
        row.push_back(Colored("-", Color::kDim, color));
        continue;
      }
      const v1::MemoryMapCell& entry = map_row.cells(cell++);
      row.push_back(Colored(absl::StrFormat("%.0f%% %s", 100.0 * entry.fraction_of_capacity(),
                                            VerdictName(entry.verdict())),
                            VerdictColor(entry.verdict()), color));
    }
    table.AddRow(std::move(row));
  }
  std::string out = absl::StrCat(
      "Memory map: estimated peak memory per GPU as a share of ",
      GiB(static_cast<double>(map.capacity_bytes())), " (", Colored("SAFE", Color::kGreen, color),
      " below ", Percent(map.safe_fraction()), ", ", Colored("RISKY", Color::kYellow, color),
      " up to 100%, ", Colored("OOM", Color::kRed, color), " above; - breaks a rule)\n",
      table.Render());
  if (map.rows_size() < map.total_rows()) {
    absl::StrAppendFormat(&out,
                          "(%d of %d rows shown: those holding the best predicted candidates; "
                          "--limit=0 shows all)\n",
                          map.rows_size(), map.total_rows());
  }
  return out;
}

std::string FormatExplanation(const v1::ParallelConfig& config,
                              const v1::ExplainResponse& explanation) {
  std::string out = absl::StrCat(DescribeConfig(config), ": ", explanation.reason(), "\n");
  if (explanation.has_estimate()) {
    absl::StrAppend(&out, "\n", FormatEstimate(config, explanation.estimate()));
  }
  return out;
}

}  // namespace paratune
