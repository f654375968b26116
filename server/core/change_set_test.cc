#include "server/core/change_set.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/store/fake_search_store.h"

namespace paratune {
namespace {

class Recorder : public SearchObserver {
 public:
  void OnSearchChanged(const v1::WatchSearchResponse& change) override {
    for (const v1::SearchEvent& event : change.events()) events.push_back(event.reason());
  }
  void OnSchedulerShutdown() override {}
  // The reasons of the events told, in order.
  std::vector<std::string> events;
};

// A change of searches/1 whose one event says `reason`.
v1::WatchSearchResponse ChangeSaying(const std::string& reason) {
  v1::WatchSearchResponse change;
  change.mutable_search()->set_name("searches/1");
  v1::SearchEvent& event = *change.add_events();
  event.set_kind(v1::EVENT_WAITING);
  event.set_reason(reason);
  return change;
}

// One event that says `reason`.
std::vector<v1::SearchEvent> Said(const std::string& reason) {
  v1::SearchEvent event;
  event.set_kind(v1::EVENT_WAITING);
  event.set_reason(reason);
  return {event};
}

v1::Search SearchNamed(const std::string& name) {
  v1::Search search;
  search.set_name(name);
  search.set_state(v1::PROBING);
  return search;
}

// The fields of a search called `name`, and no candidate.
SearchUpdate UpdateOf(const std::string& name) { return SearchUpdate{SearchNamed(name), {}}; }

v1::Candidate CandidateWithAttempts(int64_t attempts) {
  v1::Candidate candidate;
  candidate.set_attempts(attempts);
  return candidate;
}

TEST(ChangeSetTest, ObserversHearOnlyOfStoredChanges) {
  FakeSearchStore store;
  ChangeSet changes;
  Recorder observer;
  changes.PutSearch(1, UpdateOf("searches/1"), Said("created"), absl::UnixEpoch());
  changes.Tell({&observer}, ChangeSaying("created"));
  store.FailNextWrites(1, absl::UnavailableError("database is locked"));
  EXPECT_EQ(changes.Commit(store).code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(observer.events.empty());
  EXPECT_EQ(store.GetSearch(1).status().code(), absl::StatusCode::kNotFound);

  // The next commit stores what the failed one could not, then tells.
  changes.PutSearch(1, UpdateOf("searches/1"), Said("probed"), absl::UnixEpoch());
  changes.Tell({&observer}, ChangeSaying("probed"));
  ASSERT_TRUE(changes.Commit(store).ok());
  EXPECT_EQ(observer.events, (std::vector<std::string>{"created", "probed"}));
  EXPECT_TRUE(store.GetSearch(1).ok());
  absl::StatusOr<std::vector<StoredEvent>> events = store.ListEvents(1, 0, 10);
  ASSERT_TRUE(events.ok());
  EXPECT_EQ(events->size(), 2u);
}

TEST(ChangeSetTest, ForgottenObserversAreNotToldLater) {
  FakeSearchStore store;
  ChangeSet changes;
  Recorder observer;
  changes.PutSearch(1, UpdateOf("searches/1"), Said("created"), absl::UnixEpoch());
  changes.Tell({&observer}, ChangeSaying("created"));
  store.FailNextWrites(1, absl::UnavailableError("database is locked"));
  EXPECT_FALSE(changes.Commit(store).ok());
  changes.ForgetObserver(&observer);
  ASSERT_TRUE(changes.Commit(store).ok());
  EXPECT_TRUE(observer.events.empty());
}

TEST(ChangeSetTest, DiscardDropsEverythingPending) {
  FakeSearchStore store;
  ChangeSet changes;
  changes.PutSearch(1, UpdateOf("searches/1"), Said("created"), absl::UnixEpoch());
  changes.Discard();
  ASSERT_TRUE(changes.Commit(store).ok());
  EXPECT_EQ(store.writes(), 0);
}

TEST(ChangeSetTest, UpdatesOfASearchJoinUntilStoredEvenAcrossAFailedCommit) {
  FakeSearchStore store;
  ChangeSet changes;
  SearchUpdate created = UpdateOf("searches/1");
  for (int64_t n = 0; n < 3; ++n) created.candidates[n] = CandidateWithAttempts(0);
  changes.PutSearch(1, created, Said("created"), absl::UnixEpoch());
  store.FailNextWrites(1, absl::UnavailableError("database is locked"));
  EXPECT_FALSE(changes.Commit(store).ok());

  // Candidate 1 changes twice: the later wins; candidate 2 once; the fields are the latest.
  SearchUpdate leased = UpdateOf("searches/1");
  leased.candidates[1] = CandidateWithAttempts(1);
  changes.PutSearch(1, leased, Said("leased"), absl::UnixEpoch());
  SearchUpdate retried = UpdateOf("searches/1");
  retried.fields.set_display_name("retried");
  retried.candidates[1] = CandidateWithAttempts(2);
  retried.candidates[2] = CandidateWithAttempts(1);
  changes.PutSearch(1, retried, Said("retried"), absl::UnixEpoch());
  ASSERT_TRUE(changes.Commit(store).ok());

  absl::StatusOr<v1::Search> stored = store.GetSearch(1);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->display_name(), "retried");
  ASSERT_EQ(stored->candidates_size(), 3);
  EXPECT_EQ(stored->candidates(0).attempts(), 0);
  EXPECT_EQ(stored->candidates(1).attempts(), 2);
  EXPECT_EQ(stored->candidates(2).attempts(), 1);
  EXPECT_EQ(store.ListEvents(1, 0, 10)->size(), 3u);
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

TEST(ChangeSetTest, AProbeHeldBackByItsLimitIsQueuedAgainByTheNextLeaseToEnd) {
  ChangeSet changes;
  changes.EndLease("searches/1/candidates/0/probes/1");
  EXPECT_FALSE(changes.TakeProbesQueued());
  changes.NoteHeldBackByLimit();
  changes.EndLease("searches/1/candidates/1/probes/1");
  EXPECT_TRUE(changes.TakeProbesQueued());
  // Once: the lease after it finds nothing held back.
  changes.EndLease("searches/1/candidates/2/probes/1");
  EXPECT_FALSE(changes.TakeProbesQueued());
}

}  // namespace
}  // namespace paratune
