#include "server/sqlite_search_store.h"

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/sqlite.h"
#include "server/store_schema.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

v1::Search SearchWithCandidate(int64_t id, v1::SearchState state = v1::PROBING) {
  v1::Search search;
  search.set_name(absl::StrCat("searches/", id));
  search.set_state(state);
  search.add_candidates()->set_name(search.name() + "/candidates/0");
  return search;
}

std::unique_ptr<SqliteSearchStore> OpenOrDie(const std::string& path) {
  absl::StatusOr<std::unique_ptr<SqliteSearchStore>> store = SqliteSearchStore::Open(path);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

// A database file in the test's temporary directory, removed with its WAL at the end.
class DatabaseFile {
 public:
  explicit DatabaseFile(const std::string& name)
      : path_(absl::StrCat(::testing::TempDir(), "/", name)) {
    Remove();
  }
  ~DatabaseFile() { Remove(); }
  const std::string& path() const { return path_; }

 private:
  void Remove() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path_ + suffix).c_str());
  }
  std::string path_;
};

TEST(SqliteSearchStoreTest, AllocatesIncreasingIds) {
  std::unique_ptr<SqliteSearchStore> store = OpenOrDie(":memory:");
  EXPECT_EQ(store->AllocateSearchId().value(), 1);
  EXPECT_EQ(store->AllocateSearchId().value(), 2);
}

TEST(SqliteSearchStoreTest, ApplyReplacesAndGetReturns) {
  std::unique_ptr<SqliteSearchStore> store = OpenOrDie(":memory:");
  StoreBatch batch;
  batch.searches[1] = SearchWithCandidate(1);
  ASSERT_TRUE(store->Apply(batch).ok());
  batch.searches[1].set_state(v1::SUCCEEDED);
  ASSERT_TRUE(store->Apply(batch).ok());
  absl::StatusOr<v1::Search> got = store->GetSearch(1);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->state(), v1::SUCCEEDED);
  EXPECT_EQ(got->candidates_size(), 1);
  EXPECT_EQ(store->GetSearch(2).status(), absl::NotFoundError("search searches/2 not found"));
}

TEST(SqliteSearchStoreTest, SearchesStoredBeforeMemoryPoliciesAreReadWithTheOneTheyRan) {
  std::unique_ptr<SqliteSearchStore> store = OpenOrDie(":memory:");
  StoreBatch batch;
  batch.searches[1] = SearchWithCandidate(1);  // SAFE only, as every search then was
  batch.searches[2] = SearchWithCandidate(2);
  batch.searches[2].mutable_spec()->mutable_space()->set_include_risky(true);
  ASSERT_TRUE(store->Apply(batch).ok());
  EXPECT_EQ(store->GetSearch(1)->spec().space().memory_policy(), v1::SAFE_ONLY);
  EXPECT_EQ(store->GetSearch(2)->spec().space().memory_policy(), v1::MEASURE_RISKY);
  absl::StatusOr<StoredState> state = store->Load();
  ASSERT_TRUE(state.ok()) << state.status();
  ASSERT_EQ(state->unfinished_searches.size(), 2u);
  EXPECT_EQ(state->unfinished_searches[0].spec().space().memory_policy(), v1::SAFE_ONLY);
  absl::StatusOr<SearchPage> page = store->ListSearches(10, 0);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->searches[0].spec().space().memory_policy(), v1::MEASURE_RISKY);
}

TEST(SqliteSearchStoreTest, ListsNewestFirstInPagesWithoutCandidates) {
  std::unique_ptr<SqliteSearchStore> store = OpenOrDie(":memory:");
  StoreBatch batch;
  for (int64_t id = 1; id <= 5; ++id) batch.searches[id] = SearchWithCandidate(id);
  ASSERT_TRUE(store->Apply(batch).ok());
  absl::StatusOr<SearchPage> first = store->ListSearches(2, 0);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->searches.size(), 2u);
  EXPECT_EQ(first->searches[0].name(), "searches/5");
  EXPECT_EQ(first->searches[1].name(), "searches/4");
  EXPECT_EQ(first->searches[0].candidates_size(), 0);
  EXPECT_TRUE(first->more);
  absl::StatusOr<SearchPage> last = store->ListSearches(3, 4);
  ASSERT_TRUE(last.ok());
  ASSERT_EQ(last->searches.size(), 3u);
  EXPECT_EQ(last->searches[2].name(), "searches/1");
  EXPECT_FALSE(last->more);
}

TEST(SqliteSearchStoreTest, LoadReturnsWhatAResumingSchedulerNeeds) {
  std::unique_ptr<SqliteSearchStore> store = OpenOrDie(":memory:");
  StoreBatch batch;
  batch.searches[1] = SearchWithCandidate(1, v1::SUCCEEDED);
  batch.searches[2] = SearchWithCandidate(2, v1::PROBING);
  batch.searches[3] = SearchWithCandidate(3, v1::CANCELLED);
  batch.workers[7].set_name("workers/7");
  batch.workers[8].set_name("workers/8");
  batch.leases["searches/2/candidates/0/probes/1"].set_search_id(2);
  batch.leases["searches/2/candidates/0/probes/1"].set_probe("searches/2/candidates/0/probes/1");
  batch.leases["searches/2/candidates/1/probes/1"].set_probe("searches/2/candidates/1/probes/1");
  ASSERT_TRUE(store->Apply(batch).ok());
  StoreBatch end;
  end.ended_leases.insert("searches/2/candidates/1/probes/1");
  end.removed_workers.insert(8);
  ASSERT_TRUE(store->Apply(end).ok());

  absl::StatusOr<StoredState> state = store->Load();
  ASSERT_TRUE(state.ok()) << state.status();
  ASSERT_EQ(state->unfinished_searches.size(), 1u);
  EXPECT_EQ(state->unfinished_searches[0].name(), "searches/2");
  EXPECT_EQ(state->unfinished_searches[0].candidates_size(), 1);
  ASSERT_EQ(state->workers.size(), 1u);
  EXPECT_EQ(state->workers.at(7).name(), "workers/7");
  // workers/8 deregistered: its row is gone, its id is not free again.
  EXPECT_EQ(state->last_worker_id, 8);
  ASSERT_EQ(state->leases.size(), 1u);
  EXPECT_EQ(state->leases[0].probe(), "searches/2/candidates/0/probes/1");
}

TEST(SqliteSearchStoreTest, EventsArePagedInOrderPerSearch) {
  std::unique_ptr<SqliteSearchStore> store = OpenOrDie(":memory:");
  StoreBatch batch;
  for (int i = 0; i < 5; ++i) {
    batch.events.push_back(SearchEvent{1 + i % 2, 0, absl::FromUnixSeconds(i), absl::StrCat(i)});
  }
  ASSERT_TRUE(store->Apply(batch).ok());
  absl::StatusOr<std::vector<SearchEvent>> first = store->ListEvents(1, 0, 2);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 2u);
  EXPECT_EQ((*first)[0].text, "0");
  EXPECT_EQ((*first)[1].text, "2");
  EXPECT_EQ((*first)[1].time, absl::FromUnixSeconds(2));
  absl::StatusOr<std::vector<SearchEvent>> rest = store->ListEvents(1, (*first)[1].sequence, 10);
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(rest->size(), 1u);
  EXPECT_EQ((*rest)[0].text, "4");
}

TEST(SqliteSearchStoreTest, EverythingSurvivesReopeningTheFile) {
  DatabaseFile file("reopen.db");
  {
    std::unique_ptr<SqliteSearchStore> store = OpenOrDie(file.path());
    ASSERT_EQ(store->AllocateSearchId().value(), 1);
    StoreBatch batch;
    batch.searches[1] = SearchWithCandidate(1);
    batch.events.push_back(SearchEvent{1, 0, absl::FromUnixSeconds(1), "created"});
    ASSERT_TRUE(store->Apply(batch).ok());
  }
  std::unique_ptr<SqliteSearchStore> store = OpenOrDie(file.path());
  EXPECT_EQ(store->AllocateSearchId().value(), 2);
  EXPECT_TRUE(store->GetSearch(1).ok());
  EXPECT_EQ(store->ListEvents(1, 0, 10)->size(), 1u);
}

TEST(SqliteSearchStoreTest, ASecondServerIsRefusedTheDatabase) {
  DatabaseFile file("exclusive.db");
  std::unique_ptr<SqliteSearchStore> first = OpenOrDie(file.path());
  absl::StatusOr<std::unique_ptr<SqliteSearchStore>> second = SqliteSearchStore::Open(file.path());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr("in use by another process"));
}

TEST(SqliteSearchStoreTest, MigratesADatabaseOfSchemaOneKeepingItsData) {
  DatabaseFile file("schema1.db");
  {
    absl::StatusOr<std::unique_ptr<SqliteDatabase>> db = SqliteDatabase::Open(file.path());
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(MigrateStoreSchema(**db, /*target_version=*/1).ok());
    absl::StatusOr<SqliteStatement> put =
        (*db)->Prepare("INSERT INTO searches (id, state, search) VALUES (1, ?, ?)");
    ASSERT_TRUE(put.ok());
    put->Bind(1, int64_t{v1::PROBING}).BindBlob(2, SearchWithCandidate(1).SerializeAsString());
    ASSERT_TRUE(put->Run().ok());
    // Version 1 has no event log yet.
    EXPECT_FALSE((*db)->Execute("SELECT * FROM events").ok());
  }
  std::unique_ptr<SqliteSearchStore> store = OpenOrDie(file.path());
  EXPECT_EQ(store->GetSearch(1)->name(), "searches/1");
  EXPECT_EQ(store->AllocateSearchId().value(), 2);
  StoreBatch batch;
  batch.events.push_back(SearchEvent{1, 0, absl::FromUnixSeconds(1), "resumed"});
  EXPECT_TRUE(store->Apply(batch).ok());
  EXPECT_EQ(store->Load()->unfinished_searches.size(), 1u);
}

TEST(SqliteSearchStoreTest, RefusesADatabaseFromANewerServer) {
  DatabaseFile file("newer.db");
  {
    absl::StatusOr<std::unique_ptr<SqliteDatabase>> db = SqliteDatabase::Open(file.path());
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(
        (*db)->Execute(absl::StrCat("PRAGMA user_version = ", kStoreSchemaVersion + 1)).ok());
  }
  const absl::Status status = SqliteSearchStore::Open(file.path()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("newer than this paratune-server's"));
}

TEST(SqliteSearchStoreTest, AFileThatIsNotADatabaseIsDataLoss) {
  DatabaseFile file("garbage.db");
  {
    FILE* f = std::fopen(file.path().c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("this is not a SQLite database, but it is long enough to look at....", f);
    std::fclose(f);
  }
  EXPECT_EQ(SqliteSearchStore::Open(file.path()).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace paratune
