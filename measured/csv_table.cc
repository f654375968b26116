#include "measured/csv_table.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace paratune {
namespace {

// Splits `text` into records of fields; records[i] starts on line record_lines[i].
absl::Status SplitRecords(const std::string& path, absl::string_view text,
                          std::vector<std::vector<std::string>>& records,
                          std::vector<int64_t>& record_lines) {
  std::vector<std::string> record;
  std::string field;
  bool in_quotes = false;
  bool record_started = false;
  int64_t line = 1;
  int64_t record_line = 1;
  int64_t quote_line = 1;
  auto end_record = [&]() {
    record.push_back(std::move(field));
    field.clear();
    records.push_back(std::move(record));
    record.clear();
    record_lines.push_back(record_line);
    record_started = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (!record_started) {
      record_started = true;
      record_line = line;
    }
    if (in_quotes) {
      if (ch == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field.push_back('"');
        ++i;
      } else if (ch == '"') {
        in_quotes = false;
      } else {
        if (ch == '\n') ++line;
        field.push_back(ch);
      }
      continue;
    }
    if (ch == '"') {
      in_quotes = true;
      quote_line = line;
    } else if (ch == ',') {
      record.push_back(std::move(field));
      field.clear();
    } else if (ch == '\n') {
      end_record();
      ++line;
    } else if (ch != '\r') {
      field.push_back(ch);
    }
  }
  if (in_quotes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":", quote_line, ": unterminated quoted field"));
  }
  if (record_started) end_record();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CsvTable> CsvTable::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open the file"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return Parse(path, buffer.str());
}

absl::StatusOr<CsvTable> CsvTable::Parse(const std::string& path, absl::string_view text) {
  std::vector<std::vector<std::string>> records;
  std::vector<int64_t> record_lines;
  absl::Status status = SplitRecords(path, text, records, record_lines);
  if (!status.ok()) return status;
  if (records.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":1: no header line"));
  }
  CsvTable table;
  table.path_ = path;
  table.header_ = std::move(records[0]);
  for (size_t r = 1; r < records.size(); ++r) {
    if (records[r].size() == 1 && records[r][0].empty()) continue;  // blank line
    if (records[r].size() != table.header_.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", record_lines[r], ": ", records[r].size(),
                       " fields, but the header has ", table.header_.size()));
    }
    table.rows_.push_back(std::move(records[r]));
    table.lines_.push_back(record_lines[r]);
  }
  return table;
}

absl::StatusOr<size_t> CsvTable::ColumnIndex(absl::string_view column) const {
  for (size_t i = 0; i < header_.size(); ++i) {
    if (header_[i] == column) return i;
  }
  return absl::InvalidArgumentError(absl::StrCat(path_, ": no column \"", column, "\""));
}

absl::Status CsvTable::CellError(size_t row, size_t column, absl::string_view what) const {
  return absl::InvalidArgumentError(absl::StrCat(path_, ":", lines_[row], ": column \"",
                                                 header_[column], "\" (", column + 1, "): ", what));
}

absl::Status CsvTable::InvalidCell(size_t row, absl::string_view column,
                                   absl::string_view what) const {
  return absl::InvalidArgumentError(
      absl::StrCat(path_, ":", lines_[row], ": column \"", column, "\": ", what));
}

absl::StatusOr<std::string> CsvTable::String(size_t row, absl::string_view column) const {
  absl::StatusOr<size_t> index = ColumnIndex(column);
  if (!index.ok()) return index.status();
  return rows_[row][*index];
}

absl::StatusOr<int64_t> CsvTable::Int(size_t row, absl::string_view column) const {
  absl::StatusOr<size_t> index = ColumnIndex(column);
  if (!index.ok()) return index.status();
  int64_t value = 0;
  const std::string& cell = rows_[row][*index];
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(cell), &value)) {
    return CellError(row, *index, absl::StrCat("cannot parse \"", cell, "\" as an integer"));
  }
  return value;
}

absl::StatusOr<double> CsvTable::Double(size_t row, absl::string_view column) const {
  absl::StatusOr<size_t> index = ColumnIndex(column);
  if (!index.ok()) return index.status();
  double value = 0;
  const std::string& cell = rows_[row][*index];
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(cell), &value)) {
    return CellError(row, *index, absl::StrCat("cannot parse \"", cell, "\" as a number"));
  }
  return value;
}

absl::StatusOr<int64_t> CsvTable::IntOr(size_t row, absl::string_view column,
                                        int64_t fallback) const {
  absl::StatusOr<size_t> index = ColumnIndex(column);
  if (!index.ok()) return index.status();
  if (absl::StripAsciiWhitespace(rows_[row][*index]).empty()) return fallback;
  return Int(row, column);
}

absl::StatusOr<bool> CsvTable::Bool(size_t row, absl::string_view column) const {
  absl::StatusOr<size_t> index = ColumnIndex(column);
  if (!index.ok()) return index.status();
  const std::string& cell = rows_[row][*index];
  if (cell == "true") return true;
  if (cell == "false") return false;
  return CellError(row, *index, absl::StrCat("cannot parse \"", cell, "\" as true or false"));
}

}  // namespace paratune
