#include "frameworks/pinned_list.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace paratune {

absl::StatusOr<std::set<std::string>> ReadPinnedList(const std::string& path) {
  std::ifstream in(path);
  if (!in.good()) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::set<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    const absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty() || text[0] == '#') continue;
    names.insert(std::string(text.substr(0, text.find_first_of(" \t"))));
  }
  return names;
}

}  // namespace paratune
