#include "server/core/change_set.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/store/fake_search_store.h"

namespace paratune {
namespace {

class Recorder : public SearchObserver {
 public:
  void OnSearchChanged(const v1::Search& /*search*/, const std::string& event) override {
    events.push_back(event);
  }
  void OnSchedulerShutdown() override {}
  std::vector<std::string> events;
};

v1::Search SearchNamed(const std::string& name) {
  v1::Search search;
  search.set_name(name);
  search.set_state(v1::PROBING);
  return search;
}

TEST(ChangeSetTest, ObserversHearOnlyOfStoredChanges) {
  FakeSearchStore store;
  ChangeSet changes;
  Recorder observer;
  changes.PutSearch(1, SearchNamed("searches/1"), "created", absl::UnixEpoch(), {&observer},
                    SearchNamed("searches/1"));
  store.FailNextWrites(1, absl::UnavailableError("database is locked"));
  EXPECT_EQ(changes.Commit(store).code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(observer.events.empty());
  EXPECT_EQ(store.GetSearch(1).status().code(), absl::StatusCode::kNotFound);

  // The next commit stores what the failed one could not, then tells.
  changes.PutSearch(1, SearchNamed("searches/1"), "probed", absl::UnixEpoch(), {&observer},
                    SearchNamed("searches/1"));
  ASSERT_TRUE(changes.Commit(store).ok());
  EXPECT_EQ(observer.events, (std::vector<std::string>{"created", "probed"}));
  EXPECT_TRUE(store.GetSearch(1).ok());
  absl::StatusOr<std::vector<SearchEvent>> events = store.ListEvents(1, 0, 10);
  ASSERT_TRUE(events.ok());
  EXPECT_EQ(events->size(), 2u);
}

TEST(ChangeSetTest, ForgottenObserversAreNotToldLater) {
  FakeSearchStore store;
  ChangeSet changes;
  Recorder observer;
  changes.PutSearch(1, SearchNamed("searches/1"), "created", absl::UnixEpoch(), {&observer},
                    SearchNamed("searches/1"));
  store.FailNextWrites(1, absl::UnavailableError("database is locked"));
  EXPECT_FALSE(changes.Commit(store).ok());
  changes.ForgetObserver(&observer);
  ASSERT_TRUE(changes.Commit(store).ok());
  EXPECT_TRUE(observer.events.empty());
}

TEST(ChangeSetTest, DiscardDropsEverythingPending) {
  FakeSearchStore store;
  ChangeSet changes;
  changes.PutSearch(1, SearchNamed("searches/1"), "created", absl::UnixEpoch(), {},
                    SearchNamed("searches/1"));
  changes.Discard();
  ASSERT_TRUE(changes.Commit(store).ok());
  EXPECT_EQ(store.writes(), 0);
}

TEST(ChangeSetTest, RemovedWorkerRowsGoAndAPutAfterARemoveWins) {
  FakeSearchStore store;
  ChangeSet changes;
  v1::Worker worker;
  worker.set_name("workers/1");
  changes.PutWorker(1, worker);
  changes.PutWorker(2, worker);
  ASSERT_TRUE(changes.Commit(store).ok());
  changes.RemoveWorker(1);
  changes.RemoveWorker(2);
  changes.PutWorker(2, worker);
  ASSERT_TRUE(changes.Commit(store).ok());
  absl::StatusOr<std::vector<v1::Worker>> workers = store.ListWorkers();
  ASSERT_TRUE(workers.ok());
  EXPECT_EQ(workers->size(), 1u);
}

TEST(ChangeSetTest, ProbesQueuedIsTakenOnce) {
  ChangeSet changes;
  EXPECT_FALSE(changes.TakeProbesQueued());
  changes.NoteProbesQueued();
  EXPECT_TRUE(changes.TakeProbesQueued());
  EXPECT_FALSE(changes.TakeProbesQueued());
}

}  // namespace
}  // namespace paratune
