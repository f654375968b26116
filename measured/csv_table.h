// A CSV file read whole, with typed cell access whose errors name the file, line and column.
#ifndef PARATUNE_MEASURED_CSV_TABLE_H_
#define PARATUNE_MEASURED_CSV_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace paratune {

// RFC 4180 CSV with a header line: fields separated by commas, optionally double-quoted, ""
// for a quote inside quotes. Immutable once parsed.
class CsvTable {
 public:
  // NOT_FOUND when the file cannot be read; INVALID_ARGUMENT "path:line: ..." when a quote is
  // unterminated or a row's field count differs from the header's.
  static absl::StatusOr<CsvTable> Load(const std::string& path);
  // The same for text already in memory; `path` only names it in errors.
  static absl::StatusOr<CsvTable> Parse(const std::string& path, absl::string_view text);

  const std::string& path() const { return path_; }
  size_t num_rows() const { return rows_.size(); }
  // 1-based line of the file where data row `row` starts (the header is line 1).
  int64_t line(size_t row) const { return lines_[row]; }

  // INVALID_ARGUMENT "path: no column \"name\"" when the header lacks it. The typed getters
  // below report an unparsable cell as "path:line: column \"name\" (n): cannot parse ...".
  absl::StatusOr<std::string> String(size_t row, absl::string_view column) const;
  absl::StatusOr<int64_t> Int(size_t row, absl::string_view column) const;
  absl::StatusOr<double> Double(size_t row, absl::string_view column) const;
  // `fallback` when the cell is empty, the parsed value otherwise.
  absl::StatusOr<int64_t> IntOr(size_t row, absl::string_view column, int64_t fallback) const;
  // "true" or "false".
  absl::StatusOr<bool> Bool(size_t row, absl::string_view column) const;
  // INVALID_ARGUMENT "path:line: column \"name\": what", for a cell that parses but that a
  // reader refuses (an unknown name, a value out of range).
  absl::Status InvalidCell(size_t row, absl::string_view column, absl::string_view what) const;

 private:
  CsvTable() = default;
  absl::StatusOr<size_t> ColumnIndex(absl::string_view column) const;
  absl::Status CellError(size_t row, size_t column, absl::string_view what) const;

  std::string path_;
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<int64_t> lines_;
};

}  // namespace paratune

#endif  // PARATUNE_MEASURED_CSV_TABLE_H_
