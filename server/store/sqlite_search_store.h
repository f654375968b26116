// The scheduler's durable store (DESIGN.md §7): one SQLite database in WAL mode, the
// embedded default (`paratune-server --db=paratune.db`). Every StoreBatch is one transaction,
// so whatever Apply returned OK for survives kill -9 of the server.
//
// A search is stored as one row without its candidates and one row per candidate
// (docs/storage.md); Apply rewrites only the candidates whose bytes changed since the store
// last wrote or read them, so a probe result writes about the same bytes in a search of 20
// and of 20,000 candidates.
#ifndef PARATUNE_SERVER_STORE_SQLITE_SEARCH_STORE_H_
#define PARATUNE_SERVER_STORE_SQLITE_SEARCH_STORE_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/core/search_store.h"
#include "server/store/sqlite.h"

namespace paratune {

// Thread-safe (one mutex around the connection).
class SqliteSearchStore : public SearchStore {
 public:
  // Opens or creates the database at `path` (":memory:" for one that lives as long as the
  // store), migrates its schema (store_schema.h) and takes it exclusively: a second server on
  // the same file is refused. UNAVAILABLE naming the path when it cannot be opened or another
  // process holds it; FAILED_PRECONDITION when a newer paratune-server wrote it; DATA_LOSS when
  // it is not a SQLite database.
  static absl::StatusOr<std::unique_ptr<SqliteSearchStore>> Open(const std::string& path);

  absl::StatusOr<int64_t> AllocateSearchId() override;
  absl::Status Apply(const StoreBatch& batch) override;
  absl::StatusOr<StoredState> Load() override;
  absl::StatusOr<v1::Search> GetSearch(int64_t id) override;
  absl::StatusOr<SearchPage> ListSearches(int64_t page_size, int64_t before_id) override;
  absl::StatusOr<std::vector<v1::Worker>> ListWorkers() override;
  absl::StatusOr<std::vector<SearchEvent>> ListEvents(int64_t search_id, int64_t after_sequence,
                                                      int64_t limit) override;

 private:
  explicit SqliteSearchStore(std::unique_ptr<SqliteDatabase> db) : db_(std::move(db)) {}

  // A fingerprint per candidate row of one search, by position.
  using Fingerprints = std::vector<size_t>;

  // `written` receives the fingerprints of the candidate rows as the transaction leaves them.
  absl::Status ApplyLocked(const StoreBatch& batch,
                           absl::flat_hash_map<int64_t, Fingerprints>& written)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status PutSearchLocked(int64_t id, const v1::Search& search, Fingerprints& written)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The fingerprints of what the candidates table holds for the search: cached, else read.
  absl::StatusOr<Fingerprints> StoredFingerprintsLocked(int64_t id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads the search's row and its candidates; NOT_FOUND when absent. Records the candidates'
  // fingerprints in `fingerprints` when not null.
  absl::StatusOr<v1::Search> ReadSearchLocked(int64_t id, const std::string& row_bytes,
                                              Fingerprints* fingerprints)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  const std::unique_ptr<SqliteDatabase> db_ ABSL_PT_GUARDED_BY(mu_);
  int64_t last_search_id_ ABSL_GUARDED_BY(mu_) = 0;
  // What the candidates table holds for each unfinished search this store wrote or loaded
  // (committed state only); a search's entry goes when it ends and is read back on demand.
  absl::flat_hash_map<int64_t, Fingerprints> stored_candidates_ ABSL_GUARDED_BY(mu_);
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_STORE_SQLITE_SEARCH_STORE_H_
