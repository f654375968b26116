#include "worker/probe/pipeline_schedule.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

bool IsSend(TransferKind kind) {
  return kind == TransferKind::kSendActivation || kind == TransferKind::kSendGradient;
}

// Executes every stage's schedule the way NCCL runs grouped point-to-point operations: a
// step's transfers are posted together once the step before it finished; the n-th send from
// a to b completes with the n-th receive b posted from a, once both are posted; a step is
// done when all its transfers are. Fails the test on a deadlock, or when a send is matched
// with a receive meant for another tensor.
class PipelineSimulation {
 public:
  PipelineSimulation(int64_t p, int64_t v, int64_t m) : p_(p), v_(v) {
    for (int64_t stage = 0; stage < p; ++stage) {
      schedules_.push_back(PipelineScheduleOf(p, v, m, stage));
    }
  }

  void Run() {
    std::vector<size_t> next_step(p_, 0);
    std::vector<std::vector<bool>> done(p_);
    for (int64_t stage = 0; stage < p_; ++stage) Post(stage, 0, done);
    bool progress = true;
    while (progress) {
      progress = false;
      for (const auto& [channel, sends] : posted_sends_) {
        std::deque<Posted>& receives = posted_receives_[channel];
        auto& send_queue = posted_sends_[channel];
        while (!send_queue.empty() && !receives.empty()) {
          CheckMatch(send_queue.front(), receives.front(), channel);
          done[send_queue.front().stage][send_queue.front().index] = true;
          done[receives.front().stage][receives.front().index] = true;
          send_queue.pop_front();
          receives.pop_front();
          progress = true;
        }
      }
      for (int64_t stage = 0; stage < p_; ++stage) {
        while (next_step[stage] < schedules_[stage].size() &&
               std::all_of(done[stage].begin(), done[stage].end(), [](bool d) { return d; })) {
          const ScheduleStep& step = schedules_[stage][next_step[stage]];
          if (step.pass.has_value()) passes_[stage].push_back(*step.pass);
          ++next_step[stage];
          Post(stage, next_step[stage], done);
          progress = true;
        }
      }
    }
    for (int64_t stage = 0; stage < p_; ++stage) {
      ASSERT_EQ(next_step[stage], schedules_[stage].size())
          << "deadlock: stage " << stage << " stuck at step " << next_step[stage] << " of "
          << schedules_[stage].size();
    }
  }

  const std::vector<PipelinePass>& passes(int64_t stage) { return passes_[stage]; }

 private:
  struct Posted {
    int64_t stage;
    size_t index;
    Transfer transfer;
  };
  using Channel = std::pair<int64_t, int64_t>;  // (sender, receiver)

  void Post(int64_t stage, size_t step, std::vector<std::vector<bool>>& done) {
    done[stage].clear();
    if (step >= schedules_[stage].size()) return;
    const std::vector<Transfer>& transfers = schedules_[stage][step].transfers;
    done[stage].assign(transfers.size(), false);
    for (size_t i = 0; i < transfers.size(); ++i) {
      const Transfer& t = transfers[i];
      if (IsSend(t.kind)) {
        posted_sends_[{stage, t.peer_stage}].push_back({stage, i, t});
      } else {
        posted_receives_[{t.peer_stage, stage}].push_back({stage, i, t});
      }
    }
  }

  // The receiver's chunk of a tensor the sender's chunk produced: the next stage's same
  // chunk, or stage 0's next chunk after the last stage; gradients flow the other way.
  void CheckMatch(const Posted& send, const Posted& receive, const Channel& channel) {
    const Transfer& s = send.transfer;
    const Transfer& r = receive.transfer;
    const std::string where = absl::StrCat("channel ", channel.first, "->", channel.second);
    EXPECT_EQ(s.micro_batch, r.micro_batch) << where;
    if (s.kind == TransferKind::kSendActivation) {
      ASSERT_EQ(r.kind, TransferKind::kReceiveActivation) << where;
      EXPECT_EQ(r.chunk, channel.first == p_ - 1 ? s.chunk + 1 : s.chunk) << where;
    } else {
      ASSERT_EQ(r.kind, TransferKind::kReceiveGradient) << where;
      EXPECT_EQ(r.chunk, channel.first == 0 ? s.chunk - 1 : s.chunk) << where;
    }
  }

  const int64_t p_, v_;
  std::vector<std::vector<ScheduleStep>> schedules_;
  std::map<Channel, std::deque<Posted>> posted_sends_;
  std::map<Channel, std::deque<Posted>> posted_receives_;
  std::map<int64_t, std::vector<PipelinePass>> passes_;
};

// Every (chunk, micro-batch) runs forward once and then backward once on every stage.
void ExpectEveryPassOnce(const std::vector<PipelinePass>& passes, int64_t v, int64_t m) {
  std::set<std::pair<int64_t, int64_t>> forwarded, backwarded;
  for (const PipelinePass& pass : passes) {
    const std::pair<int64_t, int64_t> key{pass.chunk, pass.micro_batch};
    if (pass.direction == PassDirection::kForward) {
      EXPECT_TRUE(forwarded.insert(key).second);
    } else {
      EXPECT_TRUE(forwarded.count(key)) << "backward before forward";
      EXPECT_TRUE(backwarded.insert(key).second);
    }
  }
  EXPECT_EQ(static_cast<int64_t>(forwarded.size()), v * m);
  EXPECT_EQ(static_cast<int64_t>(backwarded.size()), v * m);
}

TEST(PipelineScheduleTest, SchedulesRunToCompletionWithoutDeadlock) {
  for (int64_t p = 1; p <= 8; ++p) {
    for (int64_t v = 1; v <= (p == 1 ? 1 : 4); ++v) {
      for (int64_t m = (v == 1 ? 1 : p); m <= 3 * p; m += (v == 1 ? 1 : p)) {
        SCOPED_TRACE(absl::StrCat("p ", p, " v ", v, " m ", m));
        PipelineSimulation simulation(p, v, m);
        simulation.Run();
        if (HasFatalFailure()) return;
        for (int64_t stage = 0; stage < p; ++stage) {
          ExpectEveryPassOnce(simulation.passes(stage), v, m);
        }
      }
    }
  }
}

// The activations held at once are what the memory model counts (estimator/memory_model.cc,
// ChunksInFlight): 1F1B holds min(m, p - s) micro-batches on stage s; the interleaved
// schedule min(m v, 2 (p - s - 1) + (v - 1) p + 1) chunks, except that with m = p Megatron
// runs every forward first and holds all m v.
TEST(PipelineScheduleTest, PassesInFlightFollowMegatronsWarmup) {
  for (int64_t p : {2, 4, 8}) {
    for (int64_t s = 0; s < p; ++s) {
      for (int64_t m : {1, 3, 16}) {
        EXPECT_EQ(MaxPassesInFlight(PipelineScheduleOf(p, 1, m, s), std::nullopt),
                  std::min(m, p - s));
      }
      for (int64_t v : {2, 4}) {
        EXPECT_EQ(MaxPassesInFlight(PipelineScheduleOf(p, v, 2 * p, s), std::nullopt),
                  std::min(2 * p * v, 2 * (p - s - 1) + (v - 1) * p + 1));
        EXPECT_EQ(MaxPassesInFlight(PipelineScheduleOf(p, v, p, s), std::nullopt), p * v);
      }
    }
  }
}

TEST(PipelineScheduleTest, LastStageHoldsOneLossChunkInSteadyState) {
  EXPECT_EQ(MaxPassesInFlight(PipelineScheduleOf(4, 1, 8, 3), 0), 1);
  EXPECT_EQ(MaxPassesInFlight(PipelineScheduleOf(4, 2, 8, 3), 1), 1);
  // All-warmup (m = p) holds every micro-batch's loss chunk.
  EXPECT_EQ(MaxPassesInFlight(PipelineScheduleOf(4, 2, 4, 3), 1), 4);
}

TEST(PipelineScheduleTest, OneFOneBOnTwoStagesGroupsEachSendWithTheNextReceive) {
  // Stage 0 of p 2, m 2: F0, F1, B0, B1.
  const std::vector<ScheduleStep> schedule = PipelineScheduleOf(2, 1, 2, 0);
  ASSERT_EQ(schedule.size(), 4u);
  EXPECT_TRUE(schedule[0].transfers.empty());
  ASSERT_EQ(schedule[1].transfers.size(), 1u);
  EXPECT_EQ(schedule[1].transfers[0].kind, TransferKind::kSendActivation);
  ASSERT_EQ(schedule[2].transfers.size(), 2u);
  EXPECT_EQ(schedule[2].transfers[0].kind, TransferKind::kSendActivation);
  EXPECT_EQ(schedule[2].transfers[0].micro_batch, 1);
  EXPECT_EQ(schedule[2].transfers[1].kind, TransferKind::kReceiveGradient);
  EXPECT_EQ(schedule[2].transfers[1].micro_batch, 0);
  EXPECT_EQ(schedule[2].pass->direction, PassDirection::kBackward);
  ASSERT_EQ(schedule[3].transfers.size(), 1u);
  EXPECT_EQ(schedule[3].transfers[0].kind, TransferKind::kReceiveGradient);
}

TEST(PipelineScheduleTest, SingleStageRunsForwardThenBackwardWithoutTransfers) {
  const std::vector<ScheduleStep> schedule = PipelineScheduleOf(1, 1, 3, 0);
  ASSERT_EQ(schedule.size(), 6u);
  for (size_t i = 0; i < schedule.size(); ++i) {
    EXPECT_TRUE(schedule[i].transfers.empty());
    EXPECT_EQ(schedule[i].pass->direction,
              i % 2 == 0 ? PassDirection::kForward : PassDirection::kBackward);
    EXPECT_EQ(schedule[i].pass->micro_batch, static_cast<int64_t>(i / 2));
  }
}

}  // namespace
}  // namespace paratune
