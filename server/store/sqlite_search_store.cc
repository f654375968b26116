#include "server/store/sqlite_search_store.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "convert/search_request.h"
#include "convert/search_state.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
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

size_t Fingerprint(absl::string_view bytes) { return absl::Hash<absl::string_view>()(bytes); }

// Deterministic, so that an unchanged candidate serializes to the same bytes (maps).
std::string SerializeDeterministically(const v1::Search& search) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    search.SerializeToCodedStream(&coded);
  }
  return bytes;
}

bool ReadVarint(absl::string_view& bytes, uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64 && !bytes.empty(); shift += 7) {
    const uint8_t byte = static_cast<uint8_t>(bytes.front());
    bytes.remove_prefix(1);
    value |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80u) == 0) return true;
  }
  return false;
}

// A serialized v1::Search cut at its top-level fields: each candidate's bytes (a serialized
// v1::Candidate, in order) and the other fields' (the search without its candidates). Cutting
// the one serialization avoids copying the search to clear its candidates.
struct SplitSearch {
  std::string without_candidates;
  std::vector<absl::string_view> candidates;
};

// `serialized` must outlive the result. INTERNAL when it is not a well-formed message.
absl::StatusOr<SplitSearch> Split(absl::string_view serialized) {
  SplitSearch split;
  absl::string_view rest = serialized;
  while (!rest.empty()) {
    const char* const field_start = rest.data();
    uint64_t tag = 0;
    uint64_t value = 0;
    absl::string_view payload;
    bool ok = ReadVarint(rest, tag);
    const int wire_type = static_cast<int>(tag & 7);
    if (ok) {
      switch (wire_type) {
        case 0:
          ok = ReadVarint(rest, value);
          break;
        case 1:
        case 5: {
          const size_t size = wire_type == 1 ? 8 : 4;
          ok = rest.size() >= size;
          if (ok) rest.remove_prefix(size);
          break;
        }
        case 2:
          ok = ReadVarint(rest, value) && value <= rest.size();
          if (ok) {
            payload = rest.substr(0, value);
            rest.remove_prefix(value);
          }
          break;
        default:  // groups: proto3 has none
          ok = false;
      }
    }
    if (!ok) {
      return absl::InternalError(absl::StrCat("cannot split a serialized search at byte ",
                                              field_start - serialized.data()));
    }
    if (tag >> 3 == v1::Search::kCandidatesFieldNumber && wire_type == 2) {
      split.candidates.push_back(payload);
    } else {
      split.without_candidates.append(field_start, rest.data() - field_start);
    }
  }
  return split;
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
  absl::flat_hash_map<int64_t, Fingerprints> written;
  absl::Status status = ApplyLocked(batch, written);
  if (status.ok()) status = db_->Execute("COMMIT");
  if (!status.ok()) {
    db_->Execute("ROLLBACK").IgnoreError();
    // Whatever the database now holds for them is read back on their next write.
    for (const auto& [id, search] : batch.searches) stored_candidates_.erase(id);
    return status;
  }
  for (auto& [id, fingerprints] : written) {
    if (SearchEnded(batch.searches.at(id).state())) {
      stored_candidates_.erase(id);
    } else {
      stored_candidates_[id] = std::move(fingerprints);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<SqliteSearchStore::Fingerprints> SqliteSearchStore::StoredFingerprintsLocked(
    int64_t id) {
  if (auto it = stored_candidates_.find(id); it != stored_candidates_.end()) return it->second;
  PT_ASSIGN_OR_RETURN(
      SqliteStatement list,
      db_->Prepare("SELECT position, candidate FROM candidates WHERE search_id = ? ORDER BY "
                   "position"));
  list.Bind(1, id);
  Fingerprints fingerprints;
  while (true) {
    PT_ASSIGN_OR_RETURN(const bool row, list.Step());
    if (!row) break;
    const int64_t position = list.ColumnInt(0);
    // Positions are dense from 0; a gap (none is ever written) reads as a row to rewrite.
    if (position >= static_cast<int64_t>(fingerprints.size())) {
      fingerprints.resize(position + 1, 0);
    }
    fingerprints[position] = Fingerprint(list.ColumnBytes(1));
  }
  return fingerprints;
}

absl::Status SqliteSearchStore::PutSearchLocked(int64_t id, const v1::Search& search,
                                                Fingerprints& written) {
  const std::string serialized = SerializeDeterministically(search);
  PT_ASSIGN_OR_RETURN(const SplitSearch split, Split(serialized));
  PT_ASSIGN_OR_RETURN(const Fingerprints stored, StoredFingerprintsLocked(id));
  PT_ASSIGN_OR_RETURN(
      SqliteStatement put,
      db_->Prepare("INSERT OR REPLACE INTO searches (id, state, search) VALUES (?, ?, ?)"));
  PT_RETURN_IF_ERROR(
      put.Bind(1, id).Bind(2, int64_t{search.state()}).BindBlob(3, split.without_candidates).Run());
  written.resize(split.candidates.size());
  for (size_t position = 0; position < split.candidates.size(); ++position) {
    written[position] = Fingerprint(split.candidates[position]);
    // Equal fingerprints of different bytes (odds 2^-64 per changed candidate) would keep
    // the old row.
    if (position < stored.size() && stored[position] == written[position]) continue;
    PT_ASSIGN_OR_RETURN(
        SqliteStatement put_candidate,
        db_->Prepare("INSERT OR REPLACE INTO candidates (search_id, position, candidate) "
                     "VALUES (?, ?, ?)"));
    PT_RETURN_IF_ERROR(put_candidate.Bind(1, id)
                           .Bind(2, static_cast<int64_t>(position))
                           .BindBlob(3, split.candidates[position])
                           .Run());
  }
  if (stored.size() > split.candidates.size()) {
    PT_ASSIGN_OR_RETURN(
        SqliteStatement remove,
        db_->Prepare("DELETE FROM candidates WHERE search_id = ? AND position >= ?"));
    PT_RETURN_IF_ERROR(
        remove.Bind(1, id).Bind(2, static_cast<int64_t>(split.candidates.size())).Run());
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Search> SqliteSearchStore::ReadSearchLocked(int64_t id,
                                                               const std::string& row_bytes,
                                                               Fingerprints* fingerprints) {
  PT_ASSIGN_OR_RETURN(v1::Search search, ParseSearchRow(row_bytes, id));
  PT_ASSIGN_OR_RETURN(
      SqliteStatement list,
      db_->Prepare("SELECT position, candidate FROM candidates WHERE search_id = ? ORDER BY "
                   "position"));
  list.Bind(1, id);
  while (true) {
    PT_ASSIGN_OR_RETURN(const bool row, list.Step());
    if (!row) break;
    const std::string bytes = list.ColumnBytes(1);
    if (!search.add_candidates()->ParseFromString(bytes)) {
      return absl::DataLossError(
          absl::StrCat("row ", SearchName(id), " position ", list.ColumnInt(0),
                       " of table candidates does not parse as ", v1::Candidate().GetTypeName()));
    }
    if (fingerprints != nullptr) fingerprints->push_back(Fingerprint(bytes));
  }
  return search;
}

absl::Status SqliteSearchStore::ApplyLocked(const StoreBatch& batch,
                                            absl::flat_hash_map<int64_t, Fingerprints>& written) {
  for (const auto& [id, search] : batch.searches) {
    PT_RETURN_IF_ERROR(PutSearchLocked(id, search, written[id]));
  }
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
  for (const SearchEvent& event : batch.events) {
    PT_ASSIGN_OR_RETURN(
        SqliteStatement append,
        db_->Prepare("INSERT INTO events (search_id, time_unix_nanos, text) VALUES (?, ?, ?)"));
    PT_RETURN_IF_ERROR(append.Bind(1, event.search_id)
                           .Bind(2, absl::ToUnixNanos(event.time))
                           .Bind(3, event.text)
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
    const int64_t id = searches.ColumnInt(0);
    Fingerprints fingerprints;
    PT_ASSIGN_OR_RETURN(v1::Search search,
                        ReadSearchLocked(id, searches.ColumnBytes(1), &fingerprints));
    stored_candidates_[id] = std::move(fingerprints);
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
  return ReadSearchLocked(id, get.ColumnBytes(0), nullptr);
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
    // The row holds the search without its candidates.
    PT_ASSIGN_OR_RETURN(v1::Search search, ParseSearchRow(list.ColumnBytes(1), list.ColumnInt(0)));
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

absl::StatusOr<std::vector<SearchEvent>> SqliteSearchStore::ListEvents(int64_t search_id,
                                                                       int64_t after_sequence,
                                                                       int64_t limit) {
  absl::MutexLock lock(&mu_);
  PT_ASSIGN_OR_RETURN(SqliteStatement list,
                      db_->Prepare("SELECT sequence, time_unix_nanos, text FROM events "
                                   "WHERE search_id = ? AND sequence > ? ORDER BY sequence "
                                   "LIMIT ?"));
  list.Bind(1, search_id).Bind(2, after_sequence).Bind(3, limit);
  std::vector<SearchEvent> events;
  while (true) {
    PT_ASSIGN_OR_RETURN(const bool row, list.Step());
    if (!row) break;
    events.push_back(SearchEvent{search_id, list.ColumnInt(0),
                                 absl::FromUnixNanos(list.ColumnInt(1)), list.ColumnBytes(2)});
  }
  return events;
}

}  // namespace paratune
