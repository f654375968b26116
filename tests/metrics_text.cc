#include "tests/metrics_text.h"

#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace paratune {

std::set<std::string> ExposedMetricNames(const std::string& exposition) {
  std::set<std::string> names;
  for (absl::string_view line : absl::StrSplit(exposition, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "# TYPE ")) {
      std::vector<absl::string_view> words = absl::StrSplit(line, ' ');
      if (words.size() >= 3) names.insert(std::string(words[2]));
    } else if (!absl::StartsWith(line, "#")) {
      names.insert(std::string(line.substr(0, line.find_first_of("{ "))));
    }
  }
  return names;
}

std::set<std::string> ReferencedMetricNames(const std::string& text) {
  static const std::regex* const name = new std::regex("paratune_[a-zA-Z0-9_]+");
  std::set<std::string> names;
  for (std::sregex_iterator it(text.begin(), text.end(), *name), end; it != end; ++it) {
    names.insert(it->str());
  }
  return names;
}

absl::StatusOr<double> SampleValue(const std::string& exposition,
                                   const std::string& name_and_labels) {
  for (absl::string_view line : absl::StrSplit(exposition, '\n', absl::SkipEmpty())) {
    if (!absl::ConsumePrefix(&line, name_and_labels) || !absl::ConsumePrefix(&line, " ")) {
      continue;
    }
    double value = 0;
    if (absl::SimpleAtod(line, &value)) return value;
  }
  return absl::NotFoundError(absl::StrCat("no sample ", name_and_labels, " in the exposition"));
}

absl::StatusOr<std::string> ReadTextFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

}  // namespace paratune
