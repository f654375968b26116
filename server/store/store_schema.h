// The SQLite schema of the scheduler's store and its migrations (DESIGN.md §7). The schema
// version is SQLite's user_version; migration i takes a database from version i to i + 1, so
// a database written by any earlier paratune-server opens with a later one.
#ifndef PARATUNE_SERVER_STORE_STORE_SCHEMA_H_
#define PARATUNE_SERVER_STORE_STORE_SCHEMA_H_

#include "absl/status/status.h"
#include "proto/search.pb.h"
#include "server/store/sqlite.h"

namespace paratune {

// The version this build writes.
inline constexpr int kStoreSchemaVersion = 7;

// candidates.measured_tflops of `candidate`'s row: the TFLOP/s per GPU BestMeasured ranks it
// by (convert/search_progress.h), or -1 when it has no successful result, so that a search's
// best candidate is one indexed query (`measured_tflops >= 0 ORDER BY measured_tflops DESC,
// position`).
double MeasuredTflopsColumn(const v1::Candidate& candidate);

// Migrates `db` to `target_version` (<= kStoreSchemaVersion), each step in a transaction.
// FAILED_PRECONDITION when the database is newer than target_version (written by a later
// paratune-server); the SQLite error otherwise.
absl::Status MigrateStoreSchema(SqliteDatabase& db, int target_version = kStoreSchemaVersion);

}  // namespace paratune

#endif  // PARATUNE_SERVER_STORE_STORE_SCHEMA_H_
