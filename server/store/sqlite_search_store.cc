#include "server/store/sqlite_search_store.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "convert/search_request.h"
#include "server/core/resource_names.h"
#include "server/store/store_schema.h"

namespace paratune {
namespace {

template <typename Message>
absl::StatusOr<Message> ParseRow(const std::string& bytes, absl::string_view table,
                                 absl::string_view key) {
  Message message;
  if (!message.ParseFromString(bytes)) {
    return absl::DataLossError(absl::StrCat("row ", key, " of table ", table, " does not parse as ",
                                            message.GetTypeName()));
  }
  return message;
}

// A stored search row (without its candidates) as this server reads it: UpgradeStoredSpec.
absl::StatusOr<v1::Search> ParseSearchRow(const std::string& bytes, int64_t id) {
  PT_ASSIGN_OR_RETURN(v1::Search search, ParseRow<v1::Search>(bytes, "searches", SearchName(id)));
  UpgradeStoredSpec(*search.mutable_spec());
  return search;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteSearchStore>> SqliteSearchStore::Open(
    const std::string& path) {
  PT_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDatabase> db, SqliteDatabase::Open(path));
  // WAL: a commit is one append, and what was committed survives a killed process
  // (synchronous=NORMAL loses at most the last commits on power loss, never consistency).
  // Exclusive locking: one server per database; the lock is taken now and held.
  absl::Status setup = db->Execute(
      "PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL; "
      "PRAGMA synchronous = NORMAL; BEGIN EXCLUSIVE; COMMIT;");
  if (setup.code() == absl::StatusCode::kUnavailable) {
    return absl::UnavailableError(absl::StrCat("database \"", path,
                                               "\" is in use by another process (another "
                                               "paratune-server?): ",
                                               setup.message()));
  }
  PT_RETURN_IF_ERROR(setup);
  PT_RETURN_IF_ERROR(MigrateStoreSchema(*db));
  std::unique_ptr<SqliteSearchStore> store(new SqliteSearchStore(std::move(db)));
  absl::MutexLock lock(&store->mu_);
  PT_ASSIGN_OR_RETURN(SqliteStatement max_id,
                      store->db_->Prepare("SELECT COALESCE(MAX(id), 0) FROM searches"));
  PT_ASSIGN_OR_RETURN(const bool row, max_id.Step());
  if (row) store->last_search_id_ = max_id.ColumnInt(0);
  return store;
}

absl::StatusOr<int64_t> SqliteSearchStore::AllocateSearchId() {
  absl::MutexLock lock(&mu_);
  return ++last_search_id_;
}

absl::Status SqliteSearchStore::Apply(const StoreBatch& batch) {
  if (batch.empty()) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  PT_RETURN_IF_ERROR(db_->Execute("BEGIN"));
  absl::Status status = ApplyLocked(batch);
  if (status.ok()) status = db_->Execute("COMMIT");
  if (!status.ok()) db_->Execute("ROLLBACK").IgnoreError();
  return status;
}

absl::Status SqliteSearchStore::PutSearchLocked(int64_t id, const SearchUpdate& update) {
  if (update.fields.candidates_size() > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the update of ", SearchName(id), " holds ", update.fields.candidates_size(),
                     " candidates in its fields; they belong in SearchUpdate.candidates"));
  }
  if (!update.candidates.empty()) {
    const int64_t first = update.candidates.begin()->first;
    const int64_t last = update.candidates.rbegin()->first;
    if (first < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the update of ", SearchName(id), " names candidate ", first, ": n must be at least 0"));
    }
    // One index lookup: the candidates beyond the stored ones must continue them.
    PT_ASSIGN_OR_RETURN(
        SqliteStatement count,
        db_->Prepare("SELECT COALESCE(MAX(position) + 1, 0) FROM candidates WHERE search_id = ?"));
    count.Bind(1, id);
    PT_ASSIGN_OR_RETURN(const bool row, count.Step());
    const int64_t stored = row ? count.ColumnInt(0) : 0;
    const int64_t added = static_cast<int64_t>(
        std::distance(update.candidates.lower_bound(stored), update.candidates.end()));
    if (last >= stored + added) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the update of ", SearchName(id), " adds candidate ", last, " to ", stored,
          " stored candidates: new candidates must continue from ", stored, " without a gap"));
    }
  }
  PT_ASSIGN_OR_RETURN(
      SqliteStatement put,
      db_->Prepare("INSERT OR REPLACE INTO searches (id, state, search) VALUES (?, ?, ?)"));
  PT_RETURN_IF_ERROR(put.Bind(1, id)
                         .Bind(2, int64_t{update.fields.state()})
                         .BindBlob(3, update.fields.SerializeAsString())
                         .Run());
  for (const auto& [n, candidate] : update.candidates) {
    PT_ASSIGN_OR_RETURN(
        SqliteStatement put_candidate,
        db_->Prepare("INSERT OR REPLACE INTO candidates (search_id, position, candidate, "
                     "measured_tflops) VALUES (?, ?, ?, ?)"));
    PT_RETURN_IF_ERROR(put_candidate.Bind(1, id)
                           .Bind(2, n)
                           .BindBlob(3, candidate.SerializeAsString())
                           .BindDouble(4, MeasuredTflopsColumn(candidate))
                           .Run());
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Search> SqliteSearchStore::ReadSearchLocked(int64_t id,
                                                               const std::string& row_bytes) {
  PT_ASSIGN_OR_RETURN(v1::Search search, ParseSearchRow(row_bytes, id));
  PT_ASSIGN_OR_RETURN(
      SqliteStatement list,
      db_->Prepare("SELECT position, candidate FROM candidates WHERE search_id = ? ORDER BY "
                   "position"));
  list.Bind(1, id);
  while (true) {
    PT_ASSIGN_OR_RETURN(const bool row, list.Step());
    if (!row) break;
    const int64_t position = list.ColumnInt(0);
    // A gap would shift every later candidate's n.
    if (position != search.candidates_size()) {
      return absl::DataLossError(absl::StrCat("table candidates holds no row ", SearchName(id),
                                              " position ", search.candidates_size(),
                                              " but one at position ", position));
    }
    if (!search.add_candidates()->ParseFromString(list.ColumnBytes(1))) {
      return absl::DataLossError(absl::StrCat("row ", SearchName(id), " position ", position,
                                              " of table candidates does not parse as ",
                                              v1::Candidate().GetTypeName()));
    }
  }
  return search;
}

absl::Status SqliteSearchStore::ApplyLocked(const StoreBatch& batch) {
  for (const auto& [id, update] : batch.searches) PT_RETURN_IF_ERROR(PutSearchLocked(id, update));
  for (const auto& [id, worker] : batch.workers) {
    PT_ASSIGN_OR_RETURN(SqliteStatement put,
                        db_->Prepare("INSERT OR REPLACE INTO workers (id, worker) VALUES (?, ?)"));
    PT_RETURN_IF_ERROR(put.Bind(1, id).BindBlob(2, worker.SerializeAsString()).Run());
  }
  for (const int64_t id : batch.removed_workers) {
    PT_ASSIGN_OR_RETURN(SqliteStatement remove, db_->Prepare("DELETE FROM workers WHERE id = ?"));
    PT_RETURN_IF_ERROR(remove.Bind(1, id).Run());
    PT_ASSIGN_OR_RETURN(
        SqliteStatement keep_id,
        db_->Prepare("INSERT INTO counters (name, value) VALUES ('last_worker_id', ?) "
                     "ON CONFLICT (name) DO UPDATE SET value = max(value, excluded.value)"));
    PT_RETURN_IF_ERROR(keep_id.Bind(1, id).Run());
  }
  for (const auto& [probe, lease] : batch.leases) {
    PT_ASSIGN_OR_RETURN(
        SqliteStatement put,
        db_->Prepare("INSERT OR REPLACE INTO leases (probe, search_id, lease) VALUES (?, ?, ?)"));
    PT_RETURN_IF_ERROR(
        put.Bind(1, probe).Bind(2, lease.search_id()).BindBlob(3, lease.SerializeAsString()).Run());
  }
  for (const std::string& probe : batch.ended_leases) {
    PT_ASSIGN_OR_RETURN(SqliteStatement remove, db_->Prepare("DELETE FROM leases WHERE probe = ?"));
    PT_RETURN_IF_ERROR(remove.Bind(1, probe).Run());
  }
  for (const StoredEvent& event : batch.events) {
    PT_ASSIGN_OR_RETURN(SqliteStatement append,
                        db_->Prepare("INSERT INTO events (search_id, time_unix_nanos, text, event) "
                                     "VALUES (?, ?, '', ?)"));
    PT_RETURN_IF_ERROR(append.Bind(1, event.search_id)
                           .Bind(2, absl::ToUnixNanos(event.time))
                           .BindBlob(3, event.event.SerializeAsString())
                           .Run());
  }
  return absl::OkStatus();
}

absl::StatusOr<StoredState> SqliteSearchStore::Load() {
  absl::MutexLock lock(&mu_);
  StoredState state;
  state.last_search_id = last_search_id_;
  PT_ASSIGN_OR_RETURN(
      SqliteStatement searches,
      db_->Prepare("SELECT id, search FROM searches WHERE state NOT IN (?, ?, ?) ORDER BY id"));
  searches.Bind(1, int64_t{v1::SUCCEEDED})
      .Bind(2, int64_t{v1::FAILED})
      .Bind(3, int64_t{v1::CANCELLED});
  while (true) {
    PT_ASSIGN_OR_RETURN(const bool row, searches.Step());
    if (!row) break;
    PT_ASSIGN_OR_RETURN(v1::Search search,
                        ReadSearchLocked(searches.ColumnInt(0), searches.ColumnBytes(1)));
    state.unfinished_searches.push_back(std::move(search));
  }
  PT_ASSIGN_OR_RETURN(SqliteStatement workers,
                      db_->Prepare("SELECT id, worker FROM workers ORDER BY id"));
  while (true) {
    PT_ASSIGN_OR_RETURN(const bool row, workers.Step());
    if (!row) break;
    const int64_t id = workers.ColumnInt(0);
    PT_ASSIGN_OR_RETURN(state.workers[id],
                        ParseRow<v1::Worker>(workers.ColumnBytes(1), "workers", WorkerName(id)));
    state.last_worker_id = std::max(state.last_worker_id, id);
  }
  PT_ASSIGN_OR_RETURN(SqliteStatement counter,
                      db_->Prepare("SELECT value FROM counters WHERE name = 'last_worker_id'"));
  PT_ASSIGN_OR_RETURN(const bool has_counter, counter.Step());
  if (has_counter) state.last_worker_id = std::max(state.last_worker_id, counter.ColumnInt(0));
  PT_ASSIGN_OR_RETURN(SqliteStatement leases,
                      db_->Prepare("SELECT probe, lease FROM leases ORDER BY probe"));
  while (true) {
    PT_ASSIGN_OR_RETURN(const bool row, leases.Step());
    if (!row) break;
    PT_ASSIGN_OR_RETURN(
        internal::LeaseState lease,
        ParseRow<internal::LeaseState>(leases.ColumnBytes(1), "leases", leases.ColumnBytes(0)));
    state.leases.push_back(std::move(lease));
  }
  return state;
}

absl::StatusOr<v1::Search> SqliteSearchStore::GetSearch(int64_t id) {
  absl::MutexLock lock(&mu_);
  PT_ASSIGN_OR_RETURN(SqliteStatement get,
                      db_->Prepare("SELECT search FROM searches WHERE id = ?"));
  get.Bind(1, id);
  PT_ASSIGN_OR_RETURN(const bool row, get.Step());
  if (!row) return absl::NotFoundError(absl::StrCat("search ", SearchName(id), " not found"));
  return ReadSearchLocked(id, get.ColumnBytes(0));
}

absl::StatusOr<SearchPage> SqliteSearchStore::ListSearches(int64_t page_size, int64_t before_id) {
  absl::MutexLock lock(&mu_);
  PT_ASSIGN_OR_RETURN(SqliteStatement list,
                      db_->Prepare("SELECT id, search FROM searches WHERE (?1 = 0 OR id < ?1) "
                                   "ORDER BY id DESC LIMIT ?2"));
  // One more than asked: whether it exists says whether there is a next page.
  list.Bind(1, before_id).Bind(2, page_size + 1);
  SearchPage page;
  while (true) {
    PT_ASSIGN_OR_RETURN(const bool row, list.Step());
    if (!row) break;
    if (static_cast<int64_t>(page.searches.size()) == page_size) {
      page.more = true;
      break;
    }
    // The row holds the search without its candidates; its best one is one indexed lookup.
    const int64_t id = list.ColumnInt(0);
    PT_ASSIGN_OR_RETURN(v1::Search search, ParseSearchRow(list.ColumnBytes(1), id));
    PT_ASSIGN_OR_RETURN(
        SqliteStatement best,
        db_->Prepare("SELECT candidate FROM candidates WHERE search_id = ? AND measured_tflops "
                     ">= 0 ORDER BY measured_tflops DESC, position LIMIT 1"));
    best.Bind(1, id);
    PT_ASSIGN_OR_RETURN(const bool found, best.Step());
    if (found && !search.mutable_best_candidate()->ParseFromString(best.ColumnBytes(0))) {
      return absl::DataLossError(absl::StrCat("the best candidate row of ", SearchName(id),
                                              " in table candidates does not parse as ",
                                              search.best_candidate().GetTypeName()));
    }
    page.searches.push_back(std::move(search));
  }
  return page;
}

absl::StatusOr<std::vector<v1::Worker>> SqliteSearchStore::ListWorkers() {
  absl::MutexLock lock(&mu_);
  PT_ASSIGN_OR_RETURN(SqliteStatement list,
                      db_->Prepare("SELECT id, worker FROM workers ORDER BY id"));
  std::vector<v1::Worker> workers;
  while (true) {
    PT_ASSIGN_OR_RETURN(const bool row, list.Step());
    if (!row) break;
    PT_ASSIGN_OR_RETURN(v1::Worker worker, ParseRow<v1::Worker>(list.ColumnBytes(1), "workers",
                                                                WorkerName(list.ColumnInt(0))));
    workers.push_back(std::move(worker));
  }
  return workers;
}

absl::StatusOr<std::vector<StoredEvent>> SqliteSearchStore::ListEvents(int64_t search_id,
                                                                       int64_t after_sequence,
                                                                       int64_t limit) {
  absl::MutexLock lock(&mu_);
  PT_ASSIGN_OR_RETURN(SqliteStatement list,
                      db_->Prepare("SELECT sequence, time_unix_nanos, text, event FROM events "
                                   "WHERE search_id = ? AND sequence > ? ORDER BY sequence "
                                   "LIMIT ?"));
  list.Bind(1, search_id).Bind(2, after_sequence).Bind(3, limit);
  std::vector<StoredEvent> events;
  while (true) {
    PT_ASSIGN_OR_RETURN(const bool row, list.Step());
    if (!row) break;
    StoredEvent& event = events.emplace_back();
    event.search_id = search_id;
    event.sequence = list.ColumnInt(0);
    event.time = absl::FromUnixNanos(list.ColumnInt(1));
    // A row of schema 5 or older has its text and no event (NULL reads as empty); a stored
    // event always holds its kind, so it is never empty.
    const std::string stored = list.ColumnBytes(3);
    if (stored.empty()) {
      event.event.set_text(list.ColumnBytes(2));
    } else if (!event.event.ParseFromString(stored)) {
      return absl::DataLossError(absl::StrCat("row ", event.sequence,
                                              " of table events does not parse as ",
                                              event.event.GetTypeName()));
    }
  }
  return events;
}

}  // namespace paratune
