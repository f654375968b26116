#include "server/store/sqlite.h"

#include <sqlite3.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace paratune {
namespace {

// SQLITE_BUSY and SQLITE_LOCKED mean another process holds the database: a condition to
// report, not a bug.
absl::Status SqliteError(sqlite3* db, int code, absl::string_view context) {
  const std::string message =
      absl::StrCat(context, ": ", sqlite3_errmsg(db), " (SQLite code ", code, ")");
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED) return absl::UnavailableError(message);
  if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB) return absl::DataLossError(message);
  return absl::InternalError(message);
}

}  // namespace

SqliteStatement::SqliteStatement(sqlite3* db, sqlite3_stmt* statement)
    : db_(db), statement_(statement) {}

SqliteStatement::SqliteStatement(SqliteStatement&& other) noexcept
    : db_(other.db_),
      statement_(std::exchange(other.statement_, nullptr)),
      bind_status_(std::move(other.bind_status_)) {}

SqliteStatement::~SqliteStatement() { sqlite3_finalize(statement_); }

SqliteStatement& SqliteStatement::Bind(int index, int64_t value) {
  const int code = sqlite3_bind_int64(statement_, index, value);
  if (code != SQLITE_OK && bind_status_.ok()) {
    bind_status_ = SqliteError(db_, code, absl::StrCat("binding parameter ", index));
  }
  return *this;
}

SqliteStatement& SqliteStatement::Bind(int index, absl::string_view text) {
  const int code = sqlite3_bind_text64(statement_, index, text.data(), text.size(),
                                       SQLITE_TRANSIENT, SQLITE_UTF8);
  if (code != SQLITE_OK && bind_status_.ok()) {
    bind_status_ = SqliteError(db_, code, absl::StrCat("binding parameter ", index));
  }
  return *this;
}

SqliteStatement& SqliteStatement::BindDouble(int index, double value) {
  const int code = sqlite3_bind_double(statement_, index, value);
  if (code != SQLITE_OK && bind_status_.ok()) {
    bind_status_ = SqliteError(db_, code, absl::StrCat("binding parameter ", index));
  }
  return *this;
}

SqliteStatement& SqliteStatement::BindBlob(int index, absl::string_view bytes) {
  const int code =
      sqlite3_bind_blob64(statement_, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
  if (code != SQLITE_OK && bind_status_.ok()) {
    bind_status_ = SqliteError(db_, code, absl::StrCat("binding parameter ", index));
  }
  return *this;
}

absl::StatusOr<bool> SqliteStatement::Step() {
  if (!bind_status_.ok()) return bind_status_;
  const int code = sqlite3_step(statement_);
  if (code == SQLITE_ROW) return true;
  if (code == SQLITE_DONE) return false;
  return SqliteError(db_, code, absl::StrCat("running \"", sqlite3_sql(statement_), "\""));
}

absl::Status SqliteStatement::Run() {
  while (true) {
    absl::StatusOr<bool> row = Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
  }
}

int64_t SqliteStatement::ColumnInt(int index) const {
  return sqlite3_column_int64(statement_, index);
}

std::string SqliteStatement::ColumnBytes(int index) const {
  const void* data = sqlite3_column_blob(statement_, index);
  const int size = sqlite3_column_bytes(statement_, index);
  return data == nullptr ? std::string() : std::string(static_cast<const char*>(data), size);
}

absl::StatusOr<std::unique_ptr<SqliteDatabase>> SqliteDatabase::Open(const std::string& path) {
  sqlite3* db = nullptr;
  const int code = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (code != SQLITE_OK) {
    const std::string message =
        absl::StrCat("cannot open database \"", path,
                     "\": ", db != nullptr ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return absl::UnavailableError(message);
  }
  return std::unique_ptr<SqliteDatabase>(new SqliteDatabase(db, path));
}

SqliteDatabase::~SqliteDatabase() { sqlite3_close(db_); }

absl::Status SqliteDatabase::Execute(absl::string_view sql) {
  char* error = nullptr;
  const int code = sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, &error);
  if (code == SQLITE_OK) return absl::OkStatus();
  absl::Status status = SqliteError(
      db_, code, absl::StrCat("running \"", sql.substr(0, 80), sql.size() > 80 ? "...\"" : "\""));
  sqlite3_free(error);
  return status;
}

absl::StatusOr<SqliteStatement> SqliteDatabase::Prepare(absl::string_view sql) {
  sqlite3_stmt* statement = nullptr;
  const int code =
      sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &statement, nullptr);
  if (code != SQLITE_OK) {
    return SqliteError(db_, code, absl::StrCat("preparing \"", sql, "\""));
  }
  return SqliteStatement(db_, statement);
}

}  // namespace paratune
