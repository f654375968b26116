#include "cli/table.h"

#include <algorithm>

namespace paratune {
namespace {

std::string Pad(const std::string& text, size_t width, bool right_align) {
  const std::string padding(width > text.size() ? width - text.size() : 0, ' ');
  return right_align ? padding + text : text + padding;
}

}  // namespace

std::string Table::Render() const {
  std::vector<size_t> widths(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) {
    widths[c] = columns_[c].header.size();
    for (const auto& row : rows_) {
      if (c < row.size()) widths[c] = std::max(widths[c], row[c].size());
    }
  }
  auto render_line = [&](auto cell_at) {
    std::string line;
    for (size_t c = 0; c < columns_.size(); ++c) {
      if (c > 0) line += "  ";
      line += Pad(cell_at(c), widths[c], columns_[c].numeric);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    return line + "\n";
  };
  std::string out = render_line([&](size_t c) { return columns_[c].header; });
  out += render_line([&](size_t c) { return std::string(widths[c], '-'); });
  for (const auto& row : rows_) {
    out += render_line([&](size_t c) { return c < row.size() ? row[c] : std::string(); });
  }
  return out;
}

}  // namespace paratune
