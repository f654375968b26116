#include "server/store/store_schema.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "convert/search_progress.h"
#include "proto/search.pb.h"

namespace paratune {
namespace {

// Moves each stored search's candidates out of its blob into the candidates table.
absl::Status MoveCandidatesToRows(SqliteDatabase& db);
absl::Status FillMeasuredTflops(SqliteDatabase& db);
absl::Status FillProgress(SqliteDatabase& db);

// One schema step: its SQL, then, where rows must be rewritten, code.
struct Migration {
  const char* sql;
  absl::Status (*rewrite)(SqliteDatabase&) = nullptr;
};

// kMigrations[i] takes version i to i + 1. Append only: a released step never changes.
constexpr Migration kMigrations[] = {
    // 0 -> 1: searches (each a serialized paratune.v1.Search, its state apart for the query
    // of unfinished ones) and workers.
    {R"sql(
      CREATE TABLE searches (
        id INTEGER PRIMARY KEY,
        state INTEGER NOT NULL,
        search BLOB NOT NULL
      );
      CREATE TABLE workers (
        id INTEGER PRIMARY KEY,
        worker BLOB NOT NULL
      );
    )sql"},
    // 1 -> 2: probe leases (serialized paratune.internal.LeaseState), so reports for probes
    // leased before a restart are accepted, and each search's event log.
    {R"sql(
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
    )sql"},
    // 2 -> 3: the largest worker id handed out, kept apart from the workers table: a worker
    // that deregisters loses its row, and its id must not be handed out again.
    {R"sql(
      CREATE TABLE counters (
        name TEXT PRIMARY KEY,
        value INTEGER NOT NULL
      );
    )sql"},
    // 3 -> 4: one row per candidate (a serialized paratune.v1.Candidate at its index in
    // Search.candidates), so a probe result rewrites one candidate, not the whole search;
    // searches.search keeps the search without its candidates.
    {R"sql(
      CREATE TABLE candidates (
        search_id INTEGER NOT NULL,
        position INTEGER NOT NULL,
        candidate BLOB NOT NULL,
        PRIMARY KEY (search_id, position)
      ) WITHOUT ROWID;
    )sql",
     MoveCandidatesToRows},
    // 4 -> 5: each candidate's measured TFLOP/s per GPU (MeasuredTflopsColumn), so that
    // ListSearches returns each search's best candidate without reading all of them.
    {R"sql(
      ALTER TABLE candidates ADD COLUMN measured_tflops REAL NOT NULL DEFAULT -1;
      CREATE INDEX candidates_by_measured ON candidates (search_id, measured_tflops);
    )sql",
     FillMeasuredTflops},
    // 5 -> 6: events as data (a serialized paratune.v1.SearchEvent, its text left empty: the
    // server renders it on every read); rows written before keep their text and no event.
    {R"sql(
      ALTER TABLE events ADD COLUMN event BLOB;
    )sql"},
    // 6 -> 7: each search's Search.progress, counted from its candidates (ProgressOf), since
    // ListSearches sends it without reading them. Nothing changes in the tables.
    {"", FillProgress},
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kStoreSchemaVersion,
              "one migration per schema version");

absl::StatusOr<int64_t> UserVersion(SqliteDatabase& db) {
  PT_ASSIGN_OR_RETURN(SqliteStatement statement, db.Prepare("PRAGMA user_version"));
  PT_ASSIGN_OR_RETURN(const bool row, statement.Step());
  return row ? statement.ColumnInt(0) : 0;
}

absl::Status MoveCandidatesToRows(SqliteDatabase& db) {
  // The ids first: rows are not rewritten under an open read of their table.
  std::vector<int64_t> ids;
  {
    PT_ASSIGN_OR_RETURN(SqliteStatement list, db.Prepare("SELECT id FROM searches ORDER BY id"));
    while (true) {
      PT_ASSIGN_OR_RETURN(const bool row, list.Step());
      if (!row) break;
      ids.push_back(list.ColumnInt(0));
    }
  }
  for (const int64_t id : ids) {
    PT_ASSIGN_OR_RETURN(SqliteStatement get,
                        db.Prepare("SELECT search FROM searches WHERE id = ?"));
    get.Bind(1, id);
    PT_ASSIGN_OR_RETURN(const bool row, get.Step());
    if (!row) continue;
    v1::Search search;
    if (!search.ParseFromString(get.ColumnBytes(0))) {
      return absl::DataLossError(absl::StrCat(
          "row searches/", id, " of table searches does not parse as ", search.GetTypeName()));
    }
    // A statement per row: SqliteStatement has no reset for rebinding.
    for (int position = 0; position < search.candidates_size(); ++position) {
      PT_ASSIGN_OR_RETURN(
          SqliteStatement put_candidate,
          db.Prepare("INSERT INTO candidates (search_id, position, candidate) VALUES (?, ?, ?)"));
      PT_RETURN_IF_ERROR(put_candidate.Bind(1, id)
                             .Bind(2, int64_t{position})
                             .BindBlob(3, search.candidates(position).SerializeAsString())
                             .Run());
    }
    search.clear_candidates();
    PT_ASSIGN_OR_RETURN(SqliteStatement put_search,
                        db.Prepare("UPDATE searches SET search = ? WHERE id = ?"));
    PT_RETURN_IF_ERROR(put_search.BindBlob(1, search.SerializeAsString()).Bind(2, id).Run());
  }
  return absl::OkStatus();
}

absl::Status FillMeasuredTflops(SqliteDatabase& db) {
  // The keys first: rows are not rewritten under an open read of their table.
  struct Row {
    int64_t search_id;
    int64_t position;
    double measured_tflops;
  };
  std::vector<Row> rows;
  {
    PT_ASSIGN_OR_RETURN(SqliteStatement list,
                        db.Prepare("SELECT search_id, position, candidate FROM candidates"));
    while (true) {
      PT_ASSIGN_OR_RETURN(const bool row, list.Step());
      if (!row) break;
      v1::Candidate candidate;
      if (!candidate.ParseFromString(list.ColumnBytes(2))) {
        return absl::DataLossError(
            absl::StrCat("row searches/", list.ColumnInt(0), " position ", list.ColumnInt(1),
                         " of table candidates does not parse as ", candidate.GetTypeName()));
      }
      const double tflops = MeasuredTflopsColumn(candidate);
      if (tflops >= 0) rows.push_back({list.ColumnInt(0), list.ColumnInt(1), tflops});
    }
  }
  for (const Row& row : rows) {
    PT_ASSIGN_OR_RETURN(SqliteStatement put,
                        db.Prepare("UPDATE candidates SET measured_tflops = ? WHERE search_id = ? "
                                   "AND position = ?"));
    PT_RETURN_IF_ERROR(
        put.BindDouble(1, row.measured_tflops).Bind(2, row.search_id).Bind(3, row.position).Run());
  }
  return absl::OkStatus();
}

absl::Status FillProgress(SqliteDatabase& db) {
  // The searches first: rows are not rewritten under an open read of their table.
  std::vector<std::pair<int64_t, v1::Search>> searches;
  {
    PT_ASSIGN_OR_RETURN(SqliteStatement list,
                        db.Prepare("SELECT id, search FROM searches ORDER BY id"));
    while (true) {
      PT_ASSIGN_OR_RETURN(const bool row, list.Step());
      if (!row) break;
      v1::Search search;
      if (!search.ParseFromString(list.ColumnBytes(1))) {
        return absl::DataLossError(absl::StrCat("row searches/", list.ColumnInt(0),
                                                " of table searches does not parse as ",
                                                search.GetTypeName()));
      }
      searches.emplace_back(list.ColumnInt(0), std::move(search));
    }
  }
  for (auto& [id, search] : searches) {
    PT_ASSIGN_OR_RETURN(
        SqliteStatement candidates,
        db.Prepare("SELECT candidate FROM candidates WHERE search_id = ? ORDER BY position"));
    candidates.Bind(1, id);
    while (true) {
      PT_ASSIGN_OR_RETURN(const bool row, candidates.Step());
      if (!row) break;
      if (!search.add_candidates()->ParseFromString(candidates.ColumnBytes(0))) {
        return absl::DataLossError(absl::StrCat("a row of searches/", id,
                                                " in table candidates does not parse as ",
                                                v1::Candidate().GetTypeName()));
      }
    }
    *search.mutable_progress() = ProgressOf(search);
    search.clear_candidates();
    PT_ASSIGN_OR_RETURN(SqliteStatement put,
                        db.Prepare("UPDATE searches SET search = ? WHERE id = ?"));
    PT_RETURN_IF_ERROR(put.BindBlob(1, search.SerializeAsString()).Bind(2, id).Run());
  }
  return absl::OkStatus();
}

}  // namespace

double MeasuredTflopsColumn(const v1::Candidate& candidate) {
  return MeasuredTflops(candidate).value_or(-1);
}

absl::Status MigrateStoreSchema(SqliteDatabase& db, int target_version) {
  PT_ASSIGN_OR_RETURN(const int64_t version, UserVersion(db));
  if (version > target_version) {
    return absl::FailedPreconditionError(
        absl::StrCat("database \"", db.path(), "\" has schema version ", version,
                     ", newer than this paratune-server's ", target_version,
                     "; run a paratune-server at least as new as the one that wrote it"));
  }
  for (int64_t step = version; step < target_version; ++step) {
    const Migration& migration = kMigrations[step];
    absl::Status status = db.Execute(absl::StrCat("BEGIN;", migration.sql));
    if (status.ok() && migration.rewrite != nullptr) status = migration.rewrite(db);
    // PRAGMA user_version takes no bound parameter; the value is our own integer.
    if (status.ok()) {
      status = db.Execute(absl::StrCat("PRAGMA user_version = ", step + 1, "; COMMIT;"));
    }
    if (!status.ok()) {
      db.Execute("ROLLBACK").IgnoreError();
      return absl::Status(status.code(), absl::StrCat("migrating \"", db.path(), "\" to schema ",
                                                      step + 1, ": ", status.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace paratune
