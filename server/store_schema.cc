#include "server/store_schema.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace paratune {
namespace {

// kMigrations[i] takes version i to i + 1. Append only: a released step never changes.
constexpr const char* kMigrations[] = {
    // 0 -> 1: searches (each a serialized paratune.v1.Search, its state apart for the query
    // of unfinished ones) and workers.
    R"sql(
      CREATE TABLE searches (
        id INTEGER PRIMARY KEY,
        state INTEGER NOT NULL,
        search BLOB NOT NULL
      );
      CREATE TABLE workers (
        id INTEGER PRIMARY KEY,
        worker BLOB NOT NULL
      );
    )sql",
    // 1 -> 2: probe leases (serialized paratune.internal.LeaseState), so reports for probes
    // leased before a restart are accepted, and each search's event log.
    R"sql(
      CREATE TABLE leases (
        probe TEXT PRIMARY KEY,
        search_id INTEGER NOT NULL,
        lease BLOB NOT NULL
      );
      CREATE TABLE events (
        sequence INTEGER PRIMARY KEY AUTOINCREMENT,
        search_id INTEGER NOT NULL,
        time_unix_nanos INTEGER NOT NULL,
        text TEXT NOT NULL
      );
      CREATE INDEX events_by_search ON events (search_id, sequence);
    )sql",
    // 2 -> 3: the largest worker id handed out, kept apart from the workers table: a worker
    // that deregisters loses its row, and its id must not be handed out again.
    R"sql(
      CREATE TABLE counters (
        name TEXT PRIMARY KEY,
        value INTEGER NOT NULL
      );
    )sql",
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kStoreSchemaVersion,
              "one migration per schema version");

absl::StatusOr<int64_t> UserVersion(SqliteDatabase& db) {
  PT_ASSIGN_OR_RETURN(SqliteStatement statement, db.Prepare("PRAGMA user_version"));
  PT_ASSIGN_OR_RETURN(const bool row, statement.Step());
  return row ? statement.ColumnInt(0) : 0;
}

}  // namespace

absl::Status MigrateStoreSchema(SqliteDatabase& db, int target_version) {
  PT_ASSIGN_OR_RETURN(const int64_t version, UserVersion(db));
  if (version > target_version) {
    return absl::FailedPreconditionError(
        absl::StrCat("database \"", db.path(), "\" has schema version ", version,
                     ", newer than this paratune-server's ", target_version,
                     "; run a paratune-server at least as new as the one that wrote it"));
  }
  for (int64_t step = version; step < target_version; ++step) {
    // PRAGMA user_version takes no bound parameter; the value is our own integer.
    const std::string sql =
        absl::StrCat("BEGIN;", kMigrations[step], "PRAGMA user_version = ", step + 1, "; COMMIT;");
    if (absl::Status status = db.Execute(sql); !status.ok()) {
      db.Execute("ROLLBACK").IgnoreError();
      return absl::Status(status.code(), absl::StrCat("migrating \"", db.path(), "\" to schema ",
                                                      step + 1, ": ", status.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace paratune
