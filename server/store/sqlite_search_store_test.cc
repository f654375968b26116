#include "server/store/sqlite_search_store.h"

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "convert/search_progress.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "server/store/sqlite.h"
#include "server/store/store_schema.h"

namespace paratune {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::HasSubstr;

v1::Search SearchWithCandidate(int64_t id, v1::SearchState state = v1::PROBING) {
  v1::Search search;
  search.set_name(absl::StrCat("searches/", id));
  search.set_state(state);
  search.add_candidates()->set_name(search.name() + "/candidates/0");
  return search;
}

// A search of `count` candidates that differ from one another, some probed.
v1::Search SearchWithCandidates(int64_t id, int count, v1::SearchState state = v1::PROBING) {
  v1::Search search;
  search.set_name(absl::StrCat("searches/", id));
  search.set_display_name(absl::StrCat("search ", id));
  search.mutable_spec()->mutable_space()->set_memory_policy(v1::SAFE_ONLY);
  search.set_state(state);
  search.mutable_counts()->set_selected(count);
  search.mutable_counts()->mutable_failed_by_outcome()->insert({"PROBE_OUT_OF_MEMORY", id});
  search.mutable_counts()->mutable_failed_by_outcome()->insert({"PROBE_TIMEOUT", 2 * id});
  for (int n = 0; n < count; ++n) {
    v1::Candidate& candidate = *search.add_candidates();
    candidate.set_name(absl::StrCat(search.name(), "/candidates/", n));
    candidate.mutable_config()->set_data_parallel(1 + n % 7);
    candidate.mutable_config()->set_tensor_parallel(1 << (n % 4));
    candidate.mutable_predicted()->set_step_time_seconds(1.0 + n / 100.0);
    candidate.set_selection_note(absl::StrCat("rank ", count - n));
    candidate.set_optimistic_tflops_per_gpu(400.5 + n);
    candidate.set_state(n % 3 == 0 ? v1::CANDIDATE_PROBED : v1::CANDIDATE_QUEUED);
    if (n % 3 == 0) {
      candidate.mutable_probe_result()->set_outcome(v1::PROBE_OK);
      candidate.mutable_probe_result()->add_step_times_seconds(0.5 + n);
      candidate.set_attempts(1);
    }
  }
  return search;
}

// An update that stores `search` whole: its fields and every candidate.
// An event of search `search_id` at `seconds` that says `reason`.
StoredEvent Waiting(int64_t search_id, int64_t seconds, const std::string& reason) {
  StoredEvent stored{search_id, 0, absl::FromUnixSeconds(seconds), {}};
  stored.event.set_kind(v1::EVENT_WAITING);
  stored.event.set_candidate(absl::StrCat("searches/", search_id, "/candidates/0"));
  stored.event.set_reason(reason);
  return stored;
}

SearchUpdate Whole(const v1::Search& search) {
  SearchUpdate update;
  update.fields = search;
  update.fields.clear_candidates();
  for (int n = 0; n < search.candidates_size(); ++n) update.candidates[n] = search.candidates(n);
  return update;
}

// An update of `search`'s fields and of its candidates `changed`.
SearchUpdate Changed(const v1::Search& search, const std::vector<int>& changed) {
  SearchUpdate update;
  update.fields = search;
  update.fields.clear_candidates();
  for (int n : changed) update.candidates[n] = search.candidates(n);
  return update;
}

// Every search in `expected` reads back from `store` equal, candidates in the same order.
void ExpectStored(SqliteSearchStore& store, const std::map<int64_t, v1::Search>& expected) {
  for (const auto& [id, search] : expected) {
    absl::StatusOr<v1::Search> got = store.GetSearch(id);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(MessageDifferencer::Equals(*got, search)) << "searches/" << id << " reads back as\n"
                                                          << got->DebugString() << "\ninstead of\n"
                                                          << search.DebugString();
  }
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
  batch.searches[1] = Whole(SearchWithCandidate(1));
  ASSERT_TRUE(store->Apply(batch).ok());
  batch.searches[1].fields.set_state(v1::SUCCEEDED);
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
  batch.searches[1] = Whole(SearchWithCandidate(1));  // SAFE only, as every search then was
  batch.searches[2] = Whole(SearchWithCandidate(2));
  batch.searches[2].fields.mutable_spec()->mutable_space()->set_include_risky(true);
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
  for (int64_t id = 1; id <= 5; ++id) batch.searches[id] = Whole(SearchWithCandidate(id));
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

// A candidate `n` of searches/1 in `state` with a result of `outcome` at `tflops` (in
// screening_result when `screening`).
v1::Candidate Measured(int n, v1::CandidateState state, v1::ProbeOutcome outcome, double tflops,
                       bool screening = false) {
  v1::Candidate candidate;
  candidate.set_name(absl::StrCat("searches/1/candidates/", n));
  candidate.set_state(state);
  v1::ProbeResult& result =
      screening ? *candidate.mutable_screening_result() : *candidate.mutable_probe_result();
  result.set_outcome(outcome);
  result.set_model_tflops_per_gpu(tflops);
  return candidate;
}

TEST(SqliteSearchStoreTest, ListsEachSearchWithItsBestCandidate) {
  std::unique_ptr<SqliteSearchStore> store = OpenOrDie(":memory:");
  v1::Search search;
  search.set_name("searches/1");
  search.set_state(v1::PROBING);
  *search.add_candidates() = Measured(0, v1::CANDIDATE_PROBED, v1::PROBE_OK, 400);
  *search.add_candidates() = Measured(1, v1::CANDIDATE_PROBED, v1::PROBE_OK, 450);
  *search.add_candidates() = Measured(2, v1::CANDIDATE_PROBED, v1::PROBE_OUT_OF_MEMORY, 900);
  // Under confirmation: its screening result counts (BestMeasured).
  *search.add_candidates() =
      Measured(3, v1::CANDIDATE_RUNNING, v1::PROBE_OK, 500, /*screening=*/true);
  StoreBatch batch;
  batch.searches[1] = Whole(search);
  batch.searches[2] = Whole(SearchWithCandidate(2));  // nothing measured
  ASSERT_TRUE(store->Apply(batch).ok());
  const auto best_of = [&store](int64_t id) {
    absl::StatusOr<SearchPage> page = store->ListSearches(10, 0);
    EXPECT_TRUE(page.ok()) << page.status();
    for (const v1::Search& listed : page->searches) {
      EXPECT_EQ(listed.candidates_size(), 0);
      if (listed.name() == absl::StrCat("searches/", id)) {
        return listed.has_best_candidate() ? listed.best_candidate().name() : std::string("none");
      }
    }
    return std::string("not listed");
  };
  EXPECT_EQ(best_of(1), "searches/1/candidates/3");
  EXPECT_EQ(best_of(2), "none");

  // The confirmation measures less: the best is the next, as BestMeasured says.
  *search.mutable_candidates(3) = Measured(3, v1::CANDIDATE_PROBED, v1::PROBE_OK, 420);
  batch.searches.clear();
  batch.searches[1] = Changed(search, {3});
  ASSERT_TRUE(store->Apply(batch).ok());
  EXPECT_EQ(best_of(1), "searches/1/candidates/1");
  EXPECT_EQ(BestMeasured(search)->name(), "searches/1/candidates/1");
}

TEST(SqliteSearchStoreTest, LoadReturnsWhatAResumingSchedulerNeeds) {
  std::unique_ptr<SqliteSearchStore> store = OpenOrDie(":memory:");
  StoreBatch batch;
  batch.searches[1] = Whole(SearchWithCandidate(1, v1::SUCCEEDED));
  batch.searches[2] = Whole(SearchWithCandidate(2, v1::PROBING));
  batch.searches[3] = Whole(SearchWithCandidate(3, v1::CANCELLED));
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
    batch.events.push_back(Waiting(1 + i % 2, i, absl::StrCat(i)));
  }
  ASSERT_TRUE(store->Apply(batch).ok());
  absl::StatusOr<std::vector<StoredEvent>> first = store->ListEvents(1, 0, 2);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 2u);
  EXPECT_EQ((*first)[0].event.reason(), "0");
  EXPECT_EQ((*first)[1].event.reason(), "2");
  EXPECT_EQ((*first)[1].event.kind(), v1::EVENT_WAITING);
  EXPECT_EQ((*first)[1].event.candidate(), "searches/1/candidates/0");
  EXPECT_EQ((*first)[1].time, absl::FromUnixSeconds(2));
  absl::StatusOr<std::vector<StoredEvent>> rest = store->ListEvents(1, (*first)[1].sequence, 10);
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(rest->size(), 1u);
  EXPECT_EQ((*rest)[0].event.reason(), "4");
}

TEST(SqliteSearchStoreTest, EverythingSurvivesReopeningTheFile) {
  DatabaseFile file("reopen.db");
  {
    std::unique_ptr<SqliteSearchStore> store = OpenOrDie(file.path());
    ASSERT_EQ(store->AllocateSearchId().value(), 1);
    StoreBatch batch;
    batch.searches[1] = Whole(SearchWithCandidate(1));
    batch.events.push_back(Waiting(1, 1, "created"));
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
  batch.events.push_back(Waiting(1, 1, "resumed"));
  EXPECT_TRUE(store->Apply(batch).ok());
  EXPECT_EQ(store->Load()->unfinished_searches.size(), 1u);
}

TEST(SqliteSearchStoreTest, CandidatesRoundTripThroughIncrementalWrites) {
  DatabaseFile file("incremental.db");
  std::map<int64_t, v1::Search> expected = {{1, SearchWithCandidates(1, 50)},
                                            {2, SearchWithCandidates(2, 0)}};
  std::unique_ptr<SqliteSearchStore> store = OpenOrDie(file.path());
  auto apply = [&](int64_t id, const SearchUpdate& update) {
    StoreBatch batch;
    batch.searches[id] = update;
    ASSERT_TRUE(store->Apply(batch).ok());
    ExpectStored(*store, {{id, expected.at(id)}});
  };
  apply(1, Whole(expected[1]));
  apply(2, Whole(expected[2]));
  // A probe result: one candidate and the counts change.
  expected[1].mutable_candidates(7)->mutable_probe_result()->set_outcome(v1::PROBE_OUT_OF_MEMORY);
  expected[1].mutable_counts()->set_probed(1);
  apply(1, Changed(expected[1], {7}));
  // Only the search's own fields change.
  expected[1].set_stop_reason("not yet");
  apply(1, Changed(expected[1], {}));
  // Candidates appended, and a search that had none gains some.
  *expected[1].add_candidates() = SearchWithCandidates(1, 60).candidates(55);
  *expected[1].add_candidates() = SearchWithCandidates(1, 60).candidates(56);
  *expected[2].add_candidates() = SearchWithCandidates(2, 1).candidates(0);
  expected[1].mutable_candidates(3)->set_waiting_reason("needs 8 GPUs");
  apply(1, Changed(expected[1], {50, 3, 51}));
  apply(2, Changed(expected[2], {0}));

  // A reopened store changes what the table holds.
  store.reset();
  store = OpenOrDie(file.path());
  expected[1].mutable_candidates(4)->set_attempts(9);
  apply(1, Changed(expected[1], {4}));
  absl::StatusOr<StoredState> state = store->Load();
  ASSERT_TRUE(state.ok()) << state.status();
  ASSERT_EQ(state->unfinished_searches.size(), 2u);
  EXPECT_TRUE(MessageDifferencer::Equals(state->unfinished_searches[0], expected[1]));

  expected[1].set_state(v1::SUCCEEDED);
  expected[1].mutable_candidates(5)->set_selection_note("exported");
  apply(1, Changed(expected[1], {5}));
  absl::StatusOr<SearchPage> page = store->ListSearches(10, 0);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->searches.size(), 2u);
  // Listed without its candidates, with its best (here the first of the equal 0 TFLOP/s).
  v1::Search listed = expected[1];
  *listed.mutable_best_candidate() = *BestMeasured(expected[1]);
  listed.clear_candidates();
  EXPECT_EQ(listed.best_candidate().name(), "searches/1/candidates/0");
  EXPECT_TRUE(MessageDifferencer::Equals(page->searches[1], listed));
}

TEST(SqliteSearchStoreTest, AnUpdateWritesOnlyTheCandidatesItNames) {
  std::unique_ptr<SqliteSearchStore> store = OpenOrDie(":memory:");
  v1::Search search = SearchWithCandidates(1, 3);
  StoreBatch create;
  create.searches[1] = Whole(search);
  ASSERT_TRUE(store->Apply(create).ok());
  search.mutable_candidates(0)->set_attempts(5);
  search.mutable_candidates(2)->set_attempts(7);
  StoreBatch batch;
  batch.searches[1] = Changed(search, {2});
  ASSERT_TRUE(store->Apply(batch).ok());
  absl::StatusOr<v1::Search> stored = store->GetSearch(1);
  ASSERT_TRUE(stored.ok()) << stored.status();
  // Candidate 0 changed but was not named: the store kept it as it was.
  EXPECT_EQ(stored->candidates(0).attempts(), 1);
  EXPECT_EQ(stored->candidates(2).attempts(), 7);
}

TEST(SqliteSearchStoreTest, RefusesCandidatesInTheFieldsAndGapsAndKeepsTheBatchOut) {
  std::unique_ptr<SqliteSearchStore> store = OpenOrDie(":memory:");
  const v1::Search search = SearchWithCandidates(1, 3);
  StoreBatch create;
  create.searches[1] = Whole(search);
  ASSERT_TRUE(store->Apply(create).ok());

  StoreBatch in_fields;
  in_fields.searches[1].fields = search;
  in_fields.events.push_back(Waiting(1, 1, "refused"));
  absl::Status status = store->Apply(in_fields);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("searches/1 holds 3 candidates in its fields"));

  StoreBatch gap = create;
  gap.searches[1].candidates.clear();
  gap.searches[1].candidates[4] = search.candidates(0);
  status = store->Apply(gap);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("adds candidate 4 to 3 stored candidates"));
  // Nor a negative n.
  gap.searches[1].candidates.clear();
  gap.searches[1].candidates[-1] = search.candidates(0);
  EXPECT_EQ(store->Apply(gap).code(), absl::StatusCode::kInvalidArgument);

  EXPECT_TRUE(store->ListEvents(1, 0, 10)->empty());
  ExpectStored(*store, {{1, search}});
}

TEST(SqliteSearchStoreTest, AGapInTheCandidateRowsIsDataLoss) {
  DatabaseFile file("gap.db");
  {
    std::unique_ptr<SqliteSearchStore> store = OpenOrDie(file.path());
    StoreBatch create;
    create.searches[1] = Whole(SearchWithCandidates(1, 2));
    ASSERT_TRUE(store->Apply(create).ok());
  }
  {
    absl::StatusOr<std::unique_ptr<SqliteDatabase>> db = SqliteDatabase::Open(file.path());
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Execute("DELETE FROM candidates WHERE position = 0").ok());
  }
  std::unique_ptr<SqliteSearchStore> store = OpenOrDie(file.path());
  const absl::Status status = store->GetSearch(1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("no row searches/1 position 0 but one at position 1"));
}

TEST(SqliteSearchStoreTest, MigratesBlobsOfSchemaThreeIntoCandidateRows) {
  DatabaseFile file("schema3.db");
  std::map<int64_t, v1::Search> expected = {{1, SearchWithCandidates(1, 20, v1::SUCCEEDED)},
                                            {2, SearchWithCandidates(2, 0, v1::PROBING)},
                                            {3, SearchWithCandidates(3, 300, v1::PROBING)},
                                            {4, SearchWithCandidates(4, 5, v1::CANCELLED)}};
  {
    absl::StatusOr<std::unique_ptr<SqliteDatabase>> db = SqliteDatabase::Open(file.path());
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(MigrateStoreSchema(**db, /*target_version=*/3).ok());
    for (const auto& [id, search] : expected) {
      absl::StatusOr<SqliteStatement> put =
          (*db)->Prepare("INSERT INTO searches (id, state, search) VALUES (?, ?, ?)");
      ASSERT_TRUE(put.ok());
      put->Bind(1, id).Bind(2, int64_t{search.state()}).BindBlob(3, search.SerializeAsString());
      ASSERT_TRUE(put->Run().ok());
    }
  }
  // Schema 7 counted each search's progress from its candidates.
  for (auto& [id, search] : expected) *search.mutable_progress() = ProgressOf(search);
  {
    std::unique_ptr<SqliteSearchStore> store = OpenOrDie(file.path());
    ExpectStored(*store, expected);
    absl::StatusOr<StoredState> state = store->Load();
    ASSERT_TRUE(state.ok()) << state.status();
    ASSERT_EQ(state->unfinished_searches.size(), 2u);
    EXPECT_TRUE(MessageDifferencer::Equals(state->unfinished_searches[0], expected[2]));
    EXPECT_TRUE(MessageDifferencer::Equals(state->unfinished_searches[1], expected[3]));
    EXPECT_EQ(store->AllocateSearchId().value(), 5);
  }
  // The blobs lost their candidates to one row each.
  absl::StatusOr<std::unique_ptr<SqliteDatabase>> db = SqliteDatabase::Open(file.path());
  ASSERT_TRUE(db.ok());
  absl::StatusOr<SqliteStatement> count = (*db)->Prepare("SELECT COUNT(*) FROM candidates");
  ASSERT_TRUE(count.ok());
  ASSERT_TRUE(count->Step().value());
  EXPECT_EQ(count->ColumnInt(0), 20 + 300 + 5);
  absl::StatusOr<SqliteStatement> blob = (*db)->Prepare("SELECT search FROM searches WHERE id = 3");
  ASSERT_TRUE(blob.ok());
  ASSERT_TRUE(blob->Step().value());
  v1::Search row;
  ASSERT_TRUE(row.ParseFromString(blob->ColumnBytes(0)));
  EXPECT_EQ(row.candidates_size(), 0);
  EXPECT_EQ(row.name(), "searches/3");
}

TEST(SqliteSearchStoreTest, MigratingSchemaFourRanksTheStoredCandidates) {
  DatabaseFile file("schema4.db");
  {
    absl::StatusOr<std::unique_ptr<SqliteDatabase>> db = SqliteDatabase::Open(file.path());
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(MigrateStoreSchema(**db, /*target_version=*/4).ok());
    v1::Search row;
    row.set_name("searches/1");
    row.set_state(v1::SUCCEEDED);
    absl::StatusOr<SqliteStatement> put =
        (*db)->Prepare("INSERT INTO searches (id, state, search) VALUES (1, ?, ?)");
    ASSERT_TRUE(put.ok());
    put->Bind(1, int64_t{row.state()}).BindBlob(2, row.SerializeAsString());
    ASSERT_TRUE(put->Run().ok());
    const std::vector<v1::Candidate> candidates = {
        Measured(0, v1::CANDIDATE_PROBED, v1::PROBE_OK, 300),
        Measured(1, v1::CANDIDATE_PROBED, v1::PROBE_OK, 350),
        Measured(2, v1::CANDIDATE_SKIPPED, v1::PROBE_OK, 999, /*screening=*/true)};
    for (int n = 0; n < static_cast<int>(candidates.size()); ++n) {
      absl::StatusOr<SqliteStatement> put_candidate = (*db)->Prepare(
          "INSERT INTO candidates (search_id, position, candidate) VALUES (1, ?, ?)");
      ASSERT_TRUE(put_candidate.ok());
      put_candidate->Bind(1, int64_t{n}).BindBlob(2, candidates[n].SerializeAsString());
      ASSERT_TRUE(put_candidate->Run().ok());
    }
  }
  std::unique_ptr<SqliteSearchStore> store = OpenOrDie(file.path());
  absl::StatusOr<SearchPage> page = store->ListSearches(1, 0);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->searches.size(), 1u);
  EXPECT_EQ(page->searches[0].best_candidate().name(), "searches/1/candidates/1");
}

// A search stored before searches had their progress reads with it, counted from its
// candidates, in ListSearches too, which does not read them.
TEST(SqliteSearchStoreTest, MigratingSchemaSixCountsEachSearchsProgress) {
  DatabaseFile file("schema6.db");
  v1::Search row;
  row.set_name("searches/1");
  row.set_state(v1::FAILED);
  row.mutable_counts()->set_memory_safe(40);
  row.mutable_counts()->set_probed(3);
  const std::vector<v1::Candidate> candidates = {
      Measured(0, v1::CANDIDATE_PROBED, v1::PROBE_OK, 300),
      Measured(1, v1::CANDIDATE_PROBED, v1::PROBE_OUT_OF_MEMORY, 0),
      Measured(2, v1::CANDIDATE_SKIPPED, v1::PROBE_OK, 999, /*screening=*/true)};
  {
    absl::StatusOr<std::unique_ptr<SqliteDatabase>> db = SqliteDatabase::Open(file.path());
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(MigrateStoreSchema(**db, /*target_version=*/6).ok());
    absl::StatusOr<SqliteStatement> put =
        (*db)->Prepare("INSERT INTO searches (id, state, search) VALUES (1, ?, ?)");
    ASSERT_TRUE(put.ok());
    put->Bind(1, int64_t{row.state()}).BindBlob(2, row.SerializeAsString());
    ASSERT_TRUE(put->Run().ok());
    for (int n = 0; n < static_cast<int>(candidates.size()); ++n) {
      absl::StatusOr<SqliteStatement> put_candidate = (*db)->Prepare(
          "INSERT INTO candidates (search_id, position, candidate, measured_tflops) VALUES "
          "(1, ?, ?, ?)");
      ASSERT_TRUE(put_candidate.ok());
      put_candidate->Bind(1, int64_t{n})
          .BindBlob(2, candidates[n].SerializeAsString())
          .BindDouble(3, MeasuredTflopsColumn(candidates[n]));
      ASSERT_TRUE(put_candidate->Run().ok());
    }
  }
  std::unique_ptr<SqliteSearchStore> store = OpenOrDie(file.path());
  absl::StatusOr<SearchPage> page = store->ListSearches(1, 0);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->searches.size(), 1u);
  const v1::SearchProgress& progress = page->searches[0].progress();
  EXPECT_EQ(progress.candidates(), 40);
  EXPECT_EQ(progress.probed(), 2);
  EXPECT_EQ(progress.ok(), 1);
  EXPECT_EQ(progress.failed(), 1);
  EXPECT_EQ(progress.probes(), 3);
  EXPECT_EQ(progress.could_still_win(), 0);
  v1::Search whole = row;
  for (const v1::Candidate& candidate : candidates) *whole.add_candidates() = candidate;
  absl::StatusOr<v1::Search> read = store->GetSearch(1);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->progress().SerializeAsString(), ProgressOf(whole).SerializeAsString());
  EXPECT_EQ(read->candidates_size(), 3);
}

// Events logged before they had kinds keep their text; one whose stored event does not parse
// is an error naming its row, not an event that is silently empty.
TEST(SqliteSearchStoreTest, EventsOfSchemaFiveKeepTheirText) {
  DatabaseFile file("schema5.db");
  {
    absl::StatusOr<std::unique_ptr<SqliteDatabase>> db = SqliteDatabase::Open(file.path());
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(MigrateStoreSchema(**db, /*target_version=*/5).ok());
    ASSERT_TRUE((*db)
                    ->Execute("INSERT INTO events (search_id, time_unix_nanos, text) VALUES "
                              "(1, 1000, 'candidates/0 probed on workers/1: 402.1 TFLOP/s')")
                    .ok());
  }
  std::unique_ptr<SqliteSearchStore> store = OpenOrDie(file.path());
  StoreBatch batch;
  batch.events.push_back(Waiting(1, 2, "new"));
  ASSERT_TRUE(store->Apply(batch).ok());
  absl::StatusOr<std::vector<StoredEvent>> events = store->ListEvents(1, 0, 10);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[0].event.kind(), v1::SEARCH_EVENT_KIND_UNSPECIFIED);
  EXPECT_EQ((*events)[0].event.text(), "candidates/0 probed on workers/1: 402.1 TFLOP/s");
  EXPECT_EQ((*events)[0].time, absl::FromUnixNanos(1000));
  EXPECT_EQ((*events)[1].event.kind(), v1::EVENT_WAITING);
  EXPECT_EQ((*events)[1].event.text(), "");
  store.reset();

  absl::StatusOr<std::unique_ptr<SqliteDatabase>> db = SqliteDatabase::Open(file.path());
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE((*db)->Execute("UPDATE events SET event = x'ffff' WHERE text = ''").ok());
  db->reset();
  store = OpenOrDie(file.path());
  const absl::Status corrupt = store->ListEvents(1, 0, 10).status();
  EXPECT_EQ(corrupt.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(corrupt.message(), HasSubstr("of table events does not parse"));
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
