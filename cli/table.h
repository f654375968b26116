// Aligned text tables for terminal output.
#ifndef PARATUNE_CLI_TABLE_H_
#define PARATUNE_CLI_TABLE_H_

#include <string>
#include <vector>

namespace paratune {

// Columns are left-aligned unless marked numeric, which right-aligns them. Not thread-safe.
class Table {
 public:
  struct Column {
    std::string header;
    bool numeric = false;
  };

  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

  // Cells beyond the column count are dropped; missing cells print empty.
  void AddRow(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  int rows() const { return static_cast<int>(rows_.size()); }

  // Header, a rule of dashes, then the rows; columns separated by two spaces; each line ends
  // with '\n' and has no trailing spaces.
  std::string Render() const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace paratune

#endif  // PARATUNE_CLI_TABLE_H_
