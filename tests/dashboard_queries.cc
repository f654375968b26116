#include "tests/dashboard_queries.h"

#include <cstdio>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tests/metrics_text.h"

namespace paratune {

absl::StatusOr<std::vector<DashboardPanel>> ReadDashboardPanels(
    const std::string& path, const std::map<std::string, std::string>& variables) {
  absl::StatusOr<std::string> text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  google::protobuf::Struct dashboard;
  const auto parsed = google::protobuf::util::JsonStringToMessage(*text, &dashboard);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", std::string(parsed.message())));
  }
  std::vector<std::pair<std::string, std::string>> replacements;
  for (const auto& [name, value] : variables) {
    replacements.push_back({absl::StrCat("${", name, "}"), value});
    replacements.push_back({absl::StrCat("$", name), value});
  }
  std::vector<DashboardPanel> panels;
  for (const auto& panel : dashboard.fields().at("panels").list_value().values()) {
    const auto& fields = panel.struct_value().fields();
    DashboardPanel& read = panels.emplace_back();
    read.title = fields.at("title").string_value();
    for (const auto& target : fields.at("targets").list_value().values()) {
      read.queries.push_back(absl::StrReplaceAll(
          target.struct_value().fields().at("expr").string_value(), replacements));
    }
  }
  return panels;
}

DashboardTest CheckedBy(const DashboardPanel& panel) {
  for (const std::string& query : panel.queries) {
    if (absl::StrContains(query, "paratune_slurm_")) return DashboardTest::kSlurmLauncher;
  }
  return DashboardTest::kPrometheus;
}

absl::StatusOr<std::vector<std::string>> QueriesWithoutData(PrometheusServer& prometheus,
                                                            const DashboardPanel& panel,
                                                            absl::Time start) {
  std::vector<std::string> empty;
  for (const std::string& query : panel.queries) {
    absl::StatusOr<bool> has_data = prometheus.WaitForRangeData(query, start);
    if (!has_data.ok()) return has_data.status();
    std::printf("panel \"%s\": %s -> %s\n", panel.title.c_str(), query.c_str(),
                *has_data ? "data" : "NO DATA");
    if (!*has_data) empty.push_back(query);
  }
  return empty;
}

}  // namespace paratune
