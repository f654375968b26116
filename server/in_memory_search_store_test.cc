#include "server/in_memory_search_store.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

v1::Search SearchWithCandidate(int64_t id) {
  v1::Search search;
  search.set_name("searches/" + std::to_string(id));
  search.add_candidates()->set_name(search.name() + "/candidates/0");
  return search;
}

TEST(InMemorySearchStoreTest, AllocatesIncreasingIds) {
  InMemorySearchStore store;
  EXPECT_EQ(store.AllocateSearchId().value(), 1);
  EXPECT_EQ(store.AllocateSearchId().value(), 2);
}

TEST(InMemorySearchStoreTest, PutReplacesAndGetReturns) {
  InMemorySearchStore store;
  ASSERT_TRUE(store.PutSearch(1, SearchWithCandidate(1)).ok());
  v1::Search changed = SearchWithCandidate(1);
  changed.set_state(v1::SUCCEEDED);
  ASSERT_TRUE(store.PutSearch(1, changed).ok());
  absl::StatusOr<v1::Search> got = store.GetSearch(1);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->state(), v1::SUCCEEDED);
  EXPECT_EQ(got->candidates_size(), 1);
  EXPECT_EQ(store.GetSearch(2).status(), absl::NotFoundError("search searches/2 not found"));
}

TEST(InMemorySearchStoreTest, ListsNewestFirstInPagesWithoutCandidates) {
  InMemorySearchStore store;
  for (int64_t id = 1; id <= 5; ++id)
    ASSERT_TRUE(store.PutSearch(id, SearchWithCandidate(id)).ok());
  absl::StatusOr<SearchPage> first = store.ListSearches(2, 0);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->searches.size(), 2u);
  EXPECT_EQ(first->searches[0].name(), "searches/5");
  EXPECT_EQ(first->searches[1].name(), "searches/4");
  EXPECT_EQ(first->searches[0].candidates_size(), 0);
  EXPECT_TRUE(first->more);
  absl::StatusOr<SearchPage> last = store.ListSearches(3, 4);
  ASSERT_TRUE(last.ok());
  ASSERT_EQ(last->searches.size(), 3u);
  EXPECT_EQ(last->searches[2].name(), "searches/1");
  EXPECT_FALSE(last->more);
}

TEST(InMemorySearchStoreTest, KeepsWorkersById) {
  InMemorySearchStore store;
  v1::Worker worker;
  worker.set_name("workers/2");
  ASSERT_TRUE(store.PutWorker(2, worker).ok());
  worker.set_name("workers/1");
  ASSERT_TRUE(store.PutWorker(1, worker).ok());
  absl::StatusOr<std::vector<v1::Worker>> workers = store.ListWorkers();
  ASSERT_TRUE(workers.ok());
  ASSERT_EQ(workers->size(), 2u);
  EXPECT_EQ((*workers)[0].name(), "workers/1");
}

}  // namespace
}  // namespace paratune
