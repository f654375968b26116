#include "cli/table.h"

#include <algorithm>

#include "cli/text_width.h"

namespace paratune {
namespace {

std::string Pad(const std::string& text, size_t width, bool right_align) {
  const size_t visible = VisibleWidth(text);
  const std::string padding(width > visible ? width - visible : 0, ' ');
  return right_align ? padding + text : text + padding;
}

// Columns the shown columns take, with two spaces between them.
size_t TotalWidth(const std::vector<size_t>& widths) {
  size_t total = 0;
  size_t shown = 0;
  for (size_t width : widths) {
    if (width == 0) continue;
    total += width;
    ++shown;
  }
  return shown > 0 ? total + 2 * (shown - 1) : 0;
}

}  // namespace

std::vector<size_t> Table::NaturalWidths() const {
  std::vector<size_t> widths(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) {
    // At least 1, so that 0 can mean "left out".
    widths[c] = std::max<size_t>(VisibleWidth(columns_[c].header), 1);
    for (const auto& row : rows_) {
      if (c < row.size()) widths[c] = std::max(widths[c], VisibleWidth(row[c]));
    }
  }
  return widths;
}

std::string Table::RenderAt(const std::vector<size_t>& widths) const {
  auto render_line = [&](auto cell_at) {
    std::string line;
    for (size_t c = 0; c < columns_.size(); ++c) {
      if (widths[c] == 0) continue;
      if (!line.empty()) line += "  ";
      std::string cell = cell_at(c);
      if (VisibleWidth(cell) > widths[c]) cell = CutToWidth(cell, widths[c]);
      line += Pad(cell, widths[c], columns_[c].numeric);
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

std::string Table::Render() const { return RenderAt(NaturalWidths()); }

std::string Table::RenderFitted(size_t width) const {
  std::vector<size_t> widths = NaturalWidths();
  int last_step = 0;
  for (const Column& column : columns_) {
    last_step = std::max({last_step, column.cut_step, column.drop_step});
  }
  for (int step = 1; step <= last_step && TotalWidth(widths) > width; ++step) {
    for (size_t c = 0; c < columns_.size() && TotalWidth(widths) > width; ++c) {
      if (widths[c] == 0) continue;
      if (columns_[c].drop_step == step) {
        widths[c] = 0;
      } else if (columns_[c].cut_step == step && widths[c] > columns_[c].min_width) {
        const size_t excess = TotalWidth(widths) - width;
        widths[c] = std::max(columns_[c].min_width, widths[c] > excess ? widths[c] - excess : 0);
        widths[c] = std::max<size_t>(widths[c], 1);
      }
    }
  }
  return RenderAt(widths);
}

}  // namespace paratune
