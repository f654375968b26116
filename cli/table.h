// Aligned text tables for terminal output, fitted to a width when asked.
#ifndef PARATUNE_CLI_TABLE_H_
#define PARATUNE_CLI_TABLE_H_

#include <cstddef>
#include <string>
#include <vector>

namespace paratune {

// Columns are left-aligned unless marked numeric, which right-aligns them. Cells may hold
// ANSI colour sequences: widths are measured in terminal columns (cli/text_width.h). Not
// thread-safe.
class Table {
 public:
  struct Column {
    std::string header;
    bool numeric = false;
    // How the column gives way when the table is wider than RenderFitted's width: the table
    // takes steps 1, 2, 3, ... until it fits; at `cut_step` the column's cells (and header)
    // are cut to no less than `min_width` columns, ending in "...", at `drop_step` the
    // column is left out. 0: never. A column with neither is always shown whole.
    int cut_step = 0;
    size_t min_width = 0;
    int drop_step = 0;
  };

  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

  // Cells beyond the column count are dropped; missing cells print empty.
  void AddRow(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  int rows() const { return static_cast<int>(rows_.size()); }

  // Header, a rule of dashes, then the rows; columns separated by two spaces; each line ends
  // with '\n' and has no trailing spaces.
  std::string Render() const;

  // Render, with the columns giving way (Column's steps) until every line fits in `width`
  // columns; cutting takes only what is needed. Wider than `width` only when every step
  // was taken and it still does not fit.
  std::string RenderFitted(size_t width) const;

 private:
  // Render with each column at widths[c] (0 leaves it out), cells longer cut to it.
  std::string RenderAt(const std::vector<size_t>& widths) const;
  // Each column's width: its widest cell or header.
  std::vector<size_t> NaturalWidths() const;

  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace paratune

#endif  // PARATUNE_CLI_TABLE_H_
