// The scheduler's durable store (DESIGN.md §7): one SQLite database in WAL mode, the
// embedded default (`paratune-server --db=paratune.db`). Every StoreBatch is one transaction,
// so whatever Apply returned OK for survives kill -9 of the server.
//
// A search is stored as one row without its candidates and one row per candidate
// (docs/storage.md); Apply writes the search's row and the rows of the candidates its update
// names, so a probe result costs the same in a search of 20 and of 20,000 candidates.
#ifndef PARATUNE_SERVER_STORE_SQLITE_SEARCH_STORE_H_
#define PARATUNE_SERVER_STORE_SQLITE_SEARCH_STORE_H_

#include <memory>
#include <string>
#include <vector>

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
  absl::StatusOr<std::vector<StoredEvent>> ListEvents(int64_t search_id, int64_t after_sequence,
                                                      int64_t limit) override;

 private:
  explicit SqliteSearchStore(std::unique_ptr<SqliteDatabase> db) : db_(std::move(db)) {}

  absl::Status ApplyLocked(const StoreBatch& batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // INVALID_ARGUMENT when `update` holds candidates in its fields, or a new candidate whose n
  // would leave a gap after the stored ones.
  absl::Status PutSearchLocked(int64_t id, const SearchUpdate& update)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The search of row `row_bytes` with its candidates; DATA_LOSS when a row does not parse or
  // the candidates' positions have a gap.
  absl::StatusOr<v1::Search> ReadSearchLocked(int64_t id, const std::string& row_bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  const std::unique_ptr<SqliteDatabase> db_ ABSL_PT_GUARDED_BY(mu_);
  int64_t last_search_id_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_STORE_SQLITE_SEARCH_STORE_H_
