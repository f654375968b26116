// The scheduler's per-principal limits and its cap on enumerated configurations
// (server/core/limits.h): each refusal's code, and a message naming the flag.
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/limits.h"
#include "server/core/scheduler.h"
#include "server/core/scheduler_test_fixture.h"
#include "server/core/test_requests.h"
#include "server/store/fake_search_store.h"
#include "server/store/sqlite_search_store.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

const Caller kAlice = Principal{"alice", Role::kClient};
const Caller kBob = Principal{"bob", Role::kClient};
const Caller kRoot = Principal{"root", Role::kAdmin};

class SchedulerLimitsTest : public SchedulerTest {
 protected:
  // Replaces scheduler_ with one over a new store with `limits`.
  void UseLimits(const Limits& limits) {
    auto store = std::make_unique<FakeSearchStore>();
    FakeSearchStore* fake = store.get();
    UseLimitsOver(limits, std::move(store), nullptr);
    store_ = fake;
  }

  // Replaces scheduler_ with one over `store`, resuming what it holds, as a restarted server.
  void UseLimitsOver(const Limits& limits, std::unique_ptr<SearchStore> store,
                     std::function<bool(absl::string_view)> is_admin) {
    if (scheduler_ != nullptr) scheduler_->fleet().RemoveListener(&listener_);
    scheduler_.reset();
    store_ = nullptr;
    Scheduler::Options options;
    options.clock = &clock_;
    options.heartbeat_interval = absl::Seconds(2);
    options.limits = limits;
    options.is_admin = std::move(is_admin);
    absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
        Scheduler::Create(std::move(options), std::move(store));
    ASSERT_TRUE(scheduler.ok()) << scheduler.status();
    scheduler_.reset(*std::move(scheduler));
    scheduler_->fleet().AddListener(&listener_);
  }

  std::string CreateAs(const Caller& caller, int64_t top_k = 2) {
    absl::StatusOr<v1::Search> search = scheduler_->CreateSearch(SmallSimSearch(top_k), caller);
    EXPECT_TRUE(search.ok()) << search.status();
    return search.ok() ? search->name() : "";
  }
};

TEST_F(SchedulerLimitsTest, UnfinishedSearchesPerPrincipal) {
  Limits limits;
  limits.max_searches_per_principal = 2;
  UseLimits(limits);
  const std::string first = CreateAs(kAlice);
  CreateAs(kAlice);
  absl::StatusOr<v1::Search> refused = scheduler_->CreateSearch(SmallSimSearch(2), kAlice);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("alice has 2 unfinished searches"));
  EXPECT_THAT(refused.status().message(), HasSubstr("--max_searches_per_principal=2"));

  // Others are counted apart; admins are exempt.
  CreateAs(kBob);
  for (int i = 0; i < 3; ++i) CreateAs(kRoot);

  // An ended search no longer counts.
  ASSERT_TRUE(scheduler_->CancelSearch(first, kAlice).ok());
  CreateAs(kAlice);
}

TEST_F(SchedulerLimitsTest, WithoutTokensAllCallersAreOneAnonymousPrincipal) {
  Limits limits;
  limits.max_searches_per_principal = 1;
  UseLimits(limits);
  CreateAs(std::nullopt);
  absl::StatusOr<v1::Search> refused = scheduler_->CreateSearch(SmallSimSearch(2));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("the anonymous principal has 1 unfinished searches"));
  EXPECT_THAT(refused.status().message(), HasSubstr("--max_searches_per_principal=1"));
}

TEST_F(SchedulerLimitsTest, ProbesOverThePrincipalsLimitWaitAndSaySo) {
  Limits limits;
  limits.max_probes_in_flight_per_principal = 1;
  UseLimits(limits);
  const std::string alices = CreateAs(kAlice, /*top_k=*/3);
  const std::string bobs = CreateAs(kBob, /*top_k=*/1);
  const std::string one = Register(8);
  const std::string two = Register(8);

  std::optional<v1::ProbeAssignment> first = Acquire(one);
  ASSERT_TRUE(first.has_value());
  EXPECT_THAT(first->name(), HasSubstr(alices));
  // Alice's next probes wait; Bob's is not held up by hers.
  std::optional<v1::ProbeAssignment> second = Acquire(two);
  ASSERT_TRUE(second.has_value());
  EXPECT_THAT(second->name(), HasSubstr(bobs));
  ASSERT_TRUE(Report(two, second->name(), OkResult(1)).ok());
  EXPECT_FALSE(Acquire(two).has_value());

  scheduler_->CheckLeases();
  v1::Search waiting = Get(alices);
  EXPECT_EQ(waiting.state(), v1::PROBING);
  ASSERT_EQ(waiting.candidates_size(), 3);
  EXPECT_THAT(waiting.candidates(1).waiting_reason(),
              HasSubstr("alice has 1 probes in flight, the limit per principal "
                        "(--max_probes_in_flight_per_principal=1)"));
  // Held-back probes are not the Slurm launcher's to start.
  for (const PendingProbe& pending : scheduler_->fleet().PendingProbes())
    EXPECT_TRUE(pending.running);

  // Her probe ends: the workers are told to look again, and the next one is leased.
  const int calls = listener_.calls;
  ASSERT_TRUE(Report(one, first->name(), OkResult(1)).ok());
  EXPECT_GT(listener_.calls, calls);
  std::optional<v1::ProbeAssignment> next = Acquire(two);
  ASSERT_TRUE(next.has_value());
  EXPECT_THAT(next->name(), HasSubstr(alices));
  EXPECT_FALSE(Acquire(one).has_value());
}

TEST_F(SchedulerLimitsTest, AdminsProbesAreExempt) {
  Limits limits;
  limits.max_probes_in_flight_per_principal = 1;
  UseLimits(limits);
  CreateAs(kRoot, /*top_k=*/2);
  const std::string one = Register(8);
  const std::string two = Register(8);
  EXPECT_TRUE(Acquire(one).has_value());
  EXPECT_TRUE(Acquire(two).has_value());
}

// Roles are not stored: a resumed search's creator is an admin if the token file says so now.
TEST_F(SchedulerLimitsTest, AResumedAdminsSearchStaysExemptWhileItsCreatorIsAnAdmin) {
  const std::string path = ::testing::TempDir() + "/resumed_admin.db";
  std::remove(path.c_str());
  const auto open = [&path] {
    absl::StatusOr<std::unique_ptr<SqliteSearchStore>> store = SqliteSearchStore::Open(path);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  };
  Limits limits;
  limits.max_probes_in_flight_per_principal = 1;
  // The server before stops (its store closes) before the next one opens the file.
  const auto restart = [&](std::function<bool(absl::string_view)> is_admin) {
    if (scheduler_ != nullptr) scheduler_->fleet().RemoveListener(&listener_);
    scheduler_.reset();
    UseLimitsOver(limits, open(), std::move(is_admin));
  };
  const auto root_is_admin = [](absl::string_view name) { return name == "root"; };
  restart(root_is_admin);
  CreateAs(kRoot, /*top_k=*/3);

  // Two probes in flight, over the limit of 1: exempt.
  restart(root_is_admin);
  EXPECT_TRUE(Acquire(Register(8)).has_value());
  EXPECT_TRUE(Acquire(Register(8)).has_value());

  // The token file no longer makes root an admin: its third candidate waits for the limit.
  restart([](absl::string_view) { return false; });
  EXPECT_FALSE(Acquire(Register(8)).has_value());
  scheduler_.reset();
  std::remove(path.c_str());
}

TEST_F(SchedulerLimitsTest, EnumeratedConfigurationsAreCappedBeforePlanning) {
  Limits limits;
  limits.max_enumerated_candidates = 10;
  UseLimits(limits);
  absl::StatusOr<v1::Search> refused = scheduler_->CreateSearch(SmallSimSearch(2), kAlice);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("--max_enumerated_candidates=10"));
  // Refused before a search id was allocated or anything stored.
  EXPECT_EQ(scheduler_->Stats().totals.searches_created, 0);
}

}  // namespace
}  // namespace paratune
