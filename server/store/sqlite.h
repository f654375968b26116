// A thin RAII layer over SQLite's C API whose errors are absl::Status with SQLite's own
// message, for the scheduler's store (DESIGN.md §7).
#ifndef PARATUNE_SERVER_STORE_SQLITE_H_
#define PARATUNE_SERVER_STORE_SQLITE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

struct sqlite3;
struct sqlite3_stmt;

namespace paratune {

// A prepared statement. Bind parameters by 1-based index, Step() through the rows, read
// columns by 0-based index. Not thread-safe; used under its database's owner's lock.
class SqliteStatement {
 public:
  SqliteStatement(SqliteStatement&& other) noexcept;
  SqliteStatement& operator=(SqliteStatement&&) = delete;
  ~SqliteStatement();

  SqliteStatement& Bind(int index, int64_t value);
  SqliteStatement& Bind(int index, absl::string_view text);
  // A REAL (named apart: an int argument would be ambiguous between the overloads).
  SqliteStatement& BindDouble(int index, double value);
  // A BLOB (text is bound as TEXT).
  SqliteStatement& BindBlob(int index, absl::string_view bytes);

  // true with a row to read, false when done; errors name the statement's SQL.
  absl::StatusOr<bool> Step();
  // Steps to the end, for statements that return no rows.
  absl::Status Run();

  int64_t ColumnInt(int index) const;
  // TEXT or BLOB bytes.
  std::string ColumnBytes(int index) const;

 private:
  friend class SqliteDatabase;
  SqliteStatement(sqlite3* db, sqlite3_stmt* statement);

  sqlite3* db_;
  sqlite3_stmt* statement_;
  // The first error of a Bind, returned by the next Step.
  absl::Status bind_status_;
};

// One connection. Not thread-safe.
class SqliteDatabase {
 public:
  // Opens (creating if absent) the database at `path`; ":memory:" for one in memory.
  // UNAVAILABLE naming the path when it cannot be opened.
  static absl::StatusOr<std::unique_ptr<SqliteDatabase>> Open(const std::string& path);
  SqliteDatabase(const SqliteDatabase&) = delete;
  SqliteDatabase& operator=(const SqliteDatabase&) = delete;
  ~SqliteDatabase();

  // Runs one or more statements that return no rows.
  absl::Status Execute(absl::string_view sql);
  absl::StatusOr<SqliteStatement> Prepare(absl::string_view sql);

  const std::string& path() const { return path_; }

 private:
  SqliteDatabase(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

  sqlite3* const db_;
  const std::string path_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_STORE_SQLITE_H_
