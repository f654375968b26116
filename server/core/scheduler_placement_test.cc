// Where the scheduler places probes: backends, templates, GPU types, one node per worker,
// gangs, reserved workers, the pending probes and the launches a LaunchTarget reports.
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/scheduler.h"
#include "server/core/scheduler_test_fixture.h"
#include "server/core/test_requests.h"

namespace paratune {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST_F(SchedulerTest, OneWorkerStandsForOneNodeHoweverManyGpusItHas) {
  Create(SmallSimSearch(1, /*nodes=*/2));
  const std::string big = Register(16);
  std::optional<v1::ProbeAssignment> replica = Acquire(big);
  ASSERT_TRUE(replica.has_value());
  // 16 GPUs of one worker are not 2 nodes of 8: the probe runs one replica.
  EXPECT_EQ(replica->scope(), v1::PROBE_SCOPE_REPLICA);
  ASSERT_TRUE(Report(big, replica->name(), OkResult(1)).ok());

  const std::string node = Register(8);
  Create(SmallSimSearch(1, /*nodes=*/2));
  std::optional<v1::ProbeAssignment> full = Acquire(node);
  ASSERT_TRUE(full.has_value());
  EXPECT_EQ(full->scope(), v1::PROBE_SCOPE_FULL);
  ASSERT_EQ(full->gang_size(), 2);
  EXPECT_EQ(full->gang(0).worker(), node);
  EXPECT_EQ(full->gang(1).worker(), big);
  EXPECT_EQ(full->gang(1).num_ranks(), 8);
}

TEST_F(SchedulerTest, ProbesGoOnlyToWorkersWithTheBackendAndEnoughGpus) {
  v1::CreateSearchRequest request = SmallSimSearch(0);
  request.mutable_spec()->set_policy(v1::EXHAUSTIVE);
  const v1::Search search = Create(request);
  EXPECT_FALSE(Acquire(Register(8, "cuda")).has_value());

  const std::string one_gpu = Register(1);
  while (std::optional<v1::ProbeAssignment> assignment = Acquire(one_gpu)) {
    const v1::ParallelConfig& config = assignment->config();
    EXPECT_EQ(config.tensor_parallel() * config.pipeline_parallel() * config.context_parallel(), 1);
    EXPECT_EQ(assignment->scope(), v1::PROBE_SCOPE_REPLICA);
    ASSERT_TRUE(Report(one_gpu, assignment->name(), OkResult(1)).ok());
  }
  // The rest waits for a bigger worker.
  EXPECT_EQ(Get(search.name()).state(), v1::PROBING);
}

TEST_F(SchedulerTest, GangOfTwoWorkersRunsAProbeTooBigForEither) {
  const std::string a = Register(4);
  const std::string b = Register(4);
  const v1::Search search = Create(FullScopeSearch());

  std::optional<v1::ProbeAssignment> first = Acquire(a);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->scope(), v1::PROBE_SCOPE_FULL);
  EXPECT_EQ(first->num_ranks(), 8);
  EXPECT_EQ(first->gang_index(), 0);
  ASSERT_EQ(first->gang_size(), 2);
  EXPECT_EQ(first->gang(0).worker(), a);
  EXPECT_EQ(first->gang(0).first_rank(), 0);
  EXPECT_EQ(first->gang(1).worker(), b);
  EXPECT_EQ(first->gang(1).first_rank(), 4);
  EXPECT_EQ(first->gang(1).num_ranks(), 4);
  EXPECT_THAT(first->gpu_indices(), ElementsAre(0, 1, 2, 3));
  // b's share waits for its next poll, which the wait list is told to make.
  EXPECT_TRUE(others_may_have_work_);
  std::optional<v1::ProbeAssignment> second = Acquire(b);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->name(), first->name());
  EXPECT_EQ(second->gang_index(), 1);

  // Rank 0's host relays its token to the other member.
  v1::RendezvousRequest ask;
  ask.set_worker(b);
  ask.set_probe(first->name());
  ASSERT_TRUE(scheduler_->fleet().Rendezvous(ask).ok());
  EXPECT_THAT(scheduler_->fleet().Rendezvous(ask)->token(), IsEmpty());
  v1::RendezvousRequest send = ask;
  send.set_worker(a);
  send.set_token("nccl-unique-id");
  EXPECT_EQ(scheduler_->fleet().Rendezvous(send)->token(), "nccl-unique-id");
  EXPECT_EQ(scheduler_->fleet().Rendezvous(ask)->token(), "nccl-unique-id");
  v1::RendezvousRequest impostor = ask;
  impostor.set_token("other");
  EXPECT_EQ(scheduler_->fleet().Rendezvous(impostor).status().code(),
            absl::StatusCode::kInvalidArgument);

  v1::ProbeResult rank0 = OkResult(300);
  rank0.set_peak_memory_bytes(10);
  rank0.set_wall_seconds(30);
  ASSERT_TRUE(Report(a, first->name(), rank0).ok());
  EXPECT_EQ(Get(search.name()).state(), v1::PROBING);
  EXPECT_TRUE(Report(a, first->name(), rank0).ok());
  EXPECT_EQ(Report(a, first->name(), OkResult(1)).code(), absl::StatusCode::kFailedPrecondition);
  v1::ProbeResult rank4 = OkResult(250);
  rank4.set_peak_memory_bytes(20);
  rank4.set_wall_seconds(31);
  ASSERT_TRUE(Report(b, first->name(), rank4).ok());

  const v1::Search done = Get(search.name());
  EXPECT_EQ(done.state(), v1::SUCCEEDED);
  ASSERT_EQ(done.candidates_size(), 1);
  EXPECT_EQ(done.candidates(0).worker(), a);
  EXPECT_DOUBLE_EQ(done.candidates(0).probe_result().model_tflops_per_gpu(), 300);
  EXPECT_EQ(done.candidates(0).probe_result().peak_memory_bytes(), 20);
  // Each member's GPU time, stored with its share's report.
  EXPECT_DOUBLE_EQ(done.counts().gpu_seconds(), 4 * 30 + 4 * 31);
}

TEST_F(SchedulerTest, GangMemberFailureEndsTheProbeAndStopsTheOthers) {
  const std::string a = Register(4);
  const std::string b = Register(4);
  const v1::Search search = Create(FullScopeSearch());
  std::optional<v1::ProbeAssignment> first = Acquire(a);
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(Acquire(b).has_value());

  ASSERT_TRUE(Report(b, first->name(), FailedResult(v1::PROBE_OUT_OF_MEMORY)).ok());
  const v1::Search done = Get(search.name());
  EXPECT_EQ(done.state(), v1::FAILED);
  EXPECT_EQ(done.candidates(0).probe_result().outcome(), v1::PROBE_OUT_OF_MEMORY);
  EXPECT_THAT(done.candidates(0).probe_result().message(),
              HasSubstr(b + " (member 2 of 2): it broke"));
  absl::StatusOr<v1::HeartbeatResponse> heartbeat = Heartbeat(a, {first->name()});
  ASSERT_TRUE(heartbeat.ok());
  EXPECT_THAT(heartbeat->cancel_probes(), ElementsAre(first->name()));
  EXPECT_EQ(Report(a, first->name(), OkResult(1)).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(SchedulerTest, LostGangMemberRequeuesTheProbeUntilTheFleetCanHostItAgain) {
  const std::string a = Register(4);
  const std::string b = Register(4);
  const v1::Search search = Create(FullScopeSearch());
  std::optional<v1::ProbeAssignment> first = Acquire(a);
  ASSERT_TRUE(first.has_value());

  // b never heartbeats: after three intervals it is lost and the gang's probe is re-queued.
  clock_.Advance(absl::Seconds(4));
  ASSERT_TRUE(Heartbeat(a, {first->name()}).ok());
  clock_.Advance(absl::Seconds(3));
  ASSERT_TRUE(Heartbeat(a, {first->name()}).ok());
  scheduler_->CheckLeases();
  absl::StatusOr<v1::HeartbeatResponse> heartbeat = Heartbeat(a, {first->name()});
  ASSERT_TRUE(heartbeat.ok());
  EXPECT_THAT(heartbeat->cancel_probes(), ElementsAre(first->name()));
  v1::Candidate candidate = Get(search.name()).candidates(0);
  EXPECT_EQ(candidate.state(), v1::CANDIDATE_QUEUED);
  EXPECT_EQ(candidate.waiting_reason(),
            "needs 2 nodes of 4 x h100-80gb (8 GPUs) with backend sim; live workers: 1 x 4 "
            "h100-80gb (sim); they can host 1 of its 2 node shares");
  EXPECT_FALSE(Acquire(a).has_value());

  const std::string c = Register(4);
  EXPECT_THAT(Get(search.name()).candidates(0).waiting_reason(), IsEmpty());
  std::optional<v1::ProbeAssignment> retry = Acquire(a);
  ASSERT_TRUE(retry.has_value());
  EXPECT_EQ(retry->gang(1).worker(), c);
  EXPECT_THAT(retry->name(), HasSubstr("/probes/2"));
}

TEST_F(SchedulerTest, CommandProbesGoOnlyToWorkersWithTheTemplate) {
  v1::CreateSearchRequest request = SmallSimSearch(1);
  request.mutable_spec()->mutable_probe()->set_backend("command");
  request.mutable_spec()->mutable_probe()->set_command_template("megatron-gpt");
  const v1::Search search = Create(request);

  v1::RegisterWorkerRequest nemo = Worker(8, "command");
  nemo.add_command_templates("nemo-llama");
  const std::string nemo_worker = *scheduler_->fleet().RegisterWorker(nemo)->mutable_name();
  EXPECT_FALSE(Acquire(nemo_worker).has_value());
  EXPECT_THAT(Get(search.name()).candidates(0).waiting_reason(),
              HasSubstr("with backend command and template megatron-gpt"));

  v1::RegisterWorkerRequest megatron = Worker(8, "command");
  megatron.add_command_templates("megatron-gpt");
  const std::string megatron_worker = *scheduler_->fleet().RegisterWorker(megatron)->mutable_name();
  std::optional<v1::ProbeAssignment> assignment = Acquire(megatron_worker);
  ASSERT_TRUE(assignment.has_value());
  EXPECT_EQ(assignment->command_template(), "megatron-gpt");
}

TEST_F(SchedulerTest, ShardedCommandProbesWaitForEveryRankRatherThanRunAReplica) {
  v1::CreateSearchRequest request = SmallSimSearch(0, /*nodes=*/2);
  v1::SearchSpec& spec = *request.mutable_spec();
  spec.set_policy(v1::EXHAUSTIVE);
  spec.mutable_space()->add_micro_batch_sizes(1);
  spec.mutable_space()->add_dp_sharding_modes(v1::DP_SHARDING_NONE);
  spec.mutable_space()->add_dp_sharding_modes(v1::DP_SHARDING_FULL);
  spec.mutable_probe()->set_backend("command");
  spec.mutable_probe()->set_command_template("megatron-gpt");
  const v1::Search search = Create(request);

  // One node of the two: every probe it runs is one replica of an unsharded configuration.
  v1::RegisterWorkerRequest node = Worker(8, "command");
  node.add_command_templates("megatron-gpt");
  const std::string worker = *scheduler_->fleet().RegisterWorker(node)->mutable_name();
  int replicas = 0;
  while (std::optional<v1::ProbeAssignment> assignment = Acquire(worker)) {
    EXPECT_EQ(assignment->scope(), v1::PROBE_SCOPE_REPLICA);
    EXPECT_TRUE(assignment->config().dp_sharding() == v1::DP_SHARDING_NONE ||
                assignment->config().data_parallel() == 1)
        << assignment->config().ShortDebugString();
    v1::ProbeResult result = OkResult(100);
    result.set_backend("command");
    result.set_simulated(false);
    ASSERT_TRUE(Report(worker, assignment->name(), result).ok());
    ++replicas;
  }
  EXPECT_GT(replicas, 0);
  // What waits needs both nodes: a sharded configuration, or a replica of 16 ranks.
  int sharded_waiting = 0;
  const v1::Search after = Get(search.name());
  for (const v1::Candidate& candidate : after.candidates()) {
    if (candidate.state() != v1::CANDIDATE_QUEUED) continue;
    EXPECT_THAT(candidate.waiting_reason(),
                AllOf(HasSubstr("needs 2 nodes of 8 x h100-80gb (16 GPUs) with backend command"),
                      HasSubstr("they can host 1 of its 2 node shares")));
    const bool sharded = candidate.config().dp_sharding() == v1::DP_SHARDING_FULL &&
                         candidate.config().data_parallel() > 1;
    EXPECT_EQ(
        absl::StrContains(candidate.waiting_reason(),
                          absl::StrCat("; every rank: its dp_sharding=full shards over all ",
                                       candidate.config().data_parallel(), " data-parallel ranks")),
        sharded)
        << candidate.waiting_reason();
    sharded_waiting += sharded;
  }
  EXPECT_GT(sharded_waiting, 0);
}

TEST_F(SchedulerTest, ReservedWorkersRunTheirProbeOnly) {
  const v1::Search search = Create(SmallSimSearch(3));
  const std::string for_second =
      scheduler_->fleet()
          .RegisterWorker(ReservedWorker(8, "searches/1/candidates/1/probes/1"))
          ->name();
  const std::string for_other =
      scheduler_->fleet()
          .RegisterWorker(ReservedWorker(8, "searches/1/candidates/2/probes/2"))
          ->name();
  std::optional<v1::ProbeAssignment> assignment = Acquire(for_second);
  ASSERT_TRUE(assignment.has_value());
  EXPECT_EQ(assignment->name(), "searches/1/candidates/1/probes/1");
  ASSERT_TRUE(Report(for_second, assignment->name(), OkResult(100)).ok());
  // Nothing else for it, and nothing for a worker reserved for an attempt not due yet.
  EXPECT_FALSE(Acquire(for_second).has_value());
  EXPECT_FALSE(Acquire(for_other).has_value());
  // Reserved workers count for no other probe's placement.
  const v1::Search waiting = Get(search.name());
  for (const v1::Candidate& candidate : waiting.candidates()) {
    if (candidate.state() != v1::CANDIDATE_QUEUED) continue;
    EXPECT_THAT(candidate.waiting_reason(), HasSubstr("they can host 0 of its 1 node shares"))
        << candidate.name();
  }
  // An unreserved worker takes any of them.
  EXPECT_TRUE(Acquire(Register(8)).has_value());
}

TEST_F(SchedulerTest, ProbeWithReservedWorkersRunsOnThemOnly) {
  const v1::Search search = Create(SmallSimSearch(1));
  const std::string probe = "searches/1/candidates/0/probes/1";
  const std::string unreserved = Register(8);
  const std::string reserved = scheduler_->fleet().RegisterWorker(ReservedWorker(8, probe))->name();
  EXPECT_FALSE(Acquire(unreserved).has_value());
  std::optional<v1::ProbeAssignment> assignment = Acquire(reserved);
  ASSERT_TRUE(assignment.has_value());
  EXPECT_EQ(assignment->gang_size(), 1);
}

TEST_F(SchedulerTest, PendingProbesListQueuedAndRunningProbesWithTheirShape) {
  v1::CreateSearchRequest one_node = SmallSimSearch(1);
  one_node.mutable_spec()->mutable_probe()->set_scope(v1::PROBE_SCOPE_FULL);
  Create(one_node);
  v1::CreateSearchRequest replicas = SmallSimSearch(2, /*nodes=*/2);
  replicas.mutable_spec()->mutable_probe()->set_deadline_seconds(120);
  Create(replicas);
  std::vector<PendingProbe> pending = scheduler_->fleet().PendingProbes();
  ASSERT_EQ(pending.size(), 3u);
  EXPECT_EQ(pending[0].probe, "searches/1/candidates/0/probes/1");
  EXPECT_FALSE(pending[0].running);
  EXPECT_TRUE(pending[0].unplaceable);
  EXPECT_EQ(pending[0].ranks, 8);
  EXPECT_EQ(pending[0].gpus_per_node, 8);
  EXPECT_EQ(pending[0].backend, "sim");
  // Derived from the probe's predicted duration: at least the minimum.
  EXPECT_GE(pending[0].deadline, absl::Seconds(kMinDeadlineSeconds));
  EXPECT_EQ(pending[1].probe, "searches/2/candidates/0/probes/1");
  EXPECT_EQ(pending[2].probe, "searches/2/candidates/1/probes/1");
  EXPECT_EQ(pending[2].deadline, absl::Seconds(120));
  for (const PendingProbe& probe : pending) {
    EXPECT_EQ(probe.ranks % probe.group_size, 0) << probe.probe;
  }
  // Without workers the 16-GPU search's probes run at replica scope.
  const PendingProbe replica = pending[1];
  EXPECT_LT(replica.ranks, 16);

  const std::string reserved =
      scheduler_->fleet().RegisterWorker(ReservedWorker(8, replica.probe))->name();
  const std::string unreserved = Register(8);
  ASSERT_TRUE(Acquire(reserved).has_value());
  ASSERT_TRUE(Acquire(unreserved).has_value());
  pending = scheduler_->fleet().PendingProbes();
  ASSERT_EQ(pending.size(), 3u);
  // The unreserved worker took the first search's probe; it can host it, so it is placeable.
  EXPECT_TRUE(pending[0].running);
  EXPECT_FALSE(pending[0].on_reserved_workers);
  EXPECT_TRUE(pending[1].running);
  EXPECT_TRUE(pending[1].on_reserved_workers);
  EXPECT_EQ(pending[1].ranks, replica.ranks);
  EXPECT_FALSE(pending[2].running);
  EXPECT_FALSE(pending[2].unplaceable);
}

TEST_F(SchedulerTest, LaunchEndingBeforeItsProbeStartedCountsTheAttempt) {
  const v1::Search search = Create(SmallSimSearch(2));
  const std::string probe = "searches/1/candidates/0/probes/1";
  // The launch's worker registered, then went away with it without taking the probe.
  const std::string worker = scheduler_->fleet().RegisterWorker(ReservedWorker(8, probe))->name();
  ASSERT_TRUE(scheduler_->fleet().LaunchEnded(probe, "slurm job 7 ended FAILED").ok());
  EXPECT_EQ(Heartbeat(worker).status().code(), absl::StatusCode::kNotFound);
  v1::Candidate candidate = Get(search.name()).candidates(0);
  EXPECT_EQ(candidate.state(), v1::CANDIDATE_QUEUED);
  EXPECT_EQ(candidate.attempts(), 1);
  // A repeated report of the same launch changes nothing.
  ASSERT_TRUE(scheduler_->fleet().LaunchEnded(probe, "slurm job 7 ended FAILED").ok());
  EXPECT_EQ(Get(search.name()).candidates(0).attempts(), 1);
  // The failed attempt went behind the search's other candidate.
  std::vector<PendingProbe> pending = scheduler_->fleet().PendingProbes();
  ASSERT_EQ(pending.size(), 2u);
  EXPECT_EQ(pending[0].probe, "searches/1/candidates/0/probes/2");
  const std::string unreserved = Register(8);
  std::optional<v1::ProbeAssignment> next = Acquire(unreserved);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->name(), "searches/1/candidates/1/probes/1");
  ASSERT_TRUE(Report(unreserved, next->name(), OkResult(100)).ok());

  // The second and last attempt fails the same way: the probe is given up with the reason.
  ASSERT_TRUE(scheduler_->fleet()
                  .LaunchEnded("searches/1/candidates/0/probes/2", "slurm job 8 ended NODE_FAIL")
                  .ok());
  const v1::Search ended = Get(search.name());
  EXPECT_EQ(ended.state(), v1::SUCCEEDED);
  const v1::Candidate& failed = ended.candidates(1);
  EXPECT_EQ(failed.name(), "searches/1/candidates/0");
  EXPECT_EQ(failed.probe_result().outcome(), v1::PROBE_INFRA_ERROR);
  EXPECT_THAT(failed.probe_result().message(), HasSubstr("slurm job 8 ended NODE_FAIL"));
  EXPECT_EQ(scheduler_->fleet().LaunchEnded("searches/1/candidates/0", "x").code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(SchedulerTest, LaunchEndingUnderItsRunningProbeRequeuesIt) {
  const v1::Search search = Create(SmallSimSearch(1));
  const std::string probe = "searches/1/candidates/0/probes/1";
  const std::string worker = scheduler_->fleet().RegisterWorker(ReservedWorker(8, probe))->name();
  ASSERT_TRUE(Acquire(worker).has_value());
  const int notifications = listener_.calls;
  ASSERT_TRUE(scheduler_->fleet().LaunchEnded(probe, "slurm job 7 ended CANCELLED").ok());
  EXPECT_EQ(listener_.calls, notifications + 1);
  const v1::Candidate candidate = Get(search.name()).candidates(0);
  EXPECT_EQ(candidate.state(), v1::CANDIDATE_QUEUED);
  EXPECT_EQ(candidate.attempts(), 1);
  absl::StatusOr<v1::ListSearchEventsResponse> events = [&] {
    v1::ListSearchEventsRequest request;
    request.set_name(search.name());
    return scheduler_->reader().ListSearchEvents(request);
  }();
  ASSERT_TRUE(events.ok());
  std::vector<std::string> requeues;
  std::vector<std::string> losses;
  for (const v1::SearchEvent& event : events->events()) {
    if (event.kind() == v1::EVENT_REQUEUED) requeues.push_back(event.reason());
    if (event.kind() == v1::EVENT_WORKER_LOST) losses.push_back(event.reason());
  }
  EXPECT_THAT(requeues, ElementsAre(worker + " lost: slurm job 7 ended CANCELLED"));
  EXPECT_THAT(losses, ElementsAre("slurm job 7 ended CANCELLED"));
  EXPECT_EQ(Report(worker, probe, OkResult(1)).code(), absl::StatusCode::kNotFound);
}

TEST_F(SchedulerTest, AWorkerIsOnlyHandedProbesItCanHost) {
  // The small worker asks first; it cannot hold the 8 ranks of the node the probe stands
  // for, so it gets nothing (it used to be handed rank 0 of a gang it was not part of).
  const std::string small = Register(4);
  const std::string big = Register(64);
  const v1::Search search = Create(OneNodeFullSearch());
  EXPECT_FALSE(Acquire(small).has_value());
  std::optional<v1::ProbeAssignment> probe = Acquire(big);
  ASSERT_TRUE(probe.has_value());
  ASSERT_EQ(probe->gang_size(), 1);
  EXPECT_EQ(probe->gang(0).worker(), big);
  EXPECT_EQ(probe->num_ranks(), 8);
  EXPECT_EQ(probe->gpu_indices_size(), 8);
  ASSERT_TRUE(Report(big, probe->name(), OkResult(300)).ok());

  // The result says where it ran.
  const v1::ProbeResult result = Get(search.name()).candidates(0).probe_result();
  ASSERT_EQ(result.ran_on_size(), 1);
  EXPECT_EQ(result.ran_on(0).worker(), big);
  EXPECT_EQ(result.ran_on(0).hostname(), "node");
  EXPECT_EQ(result.ran_on(0).num_ranks(), 8);
  EXPECT_EQ(result.ran_on(0).gpu_name(), "simulated H100-80GB");
  EXPECT_EQ(result.ran_on(0).gpu_type(), "h100-80gb");
}

TEST_F(SchedulerTest, ProbesRunOnlyOnTheSearchsGpuType) {
  const std::string a100 = *scheduler_->fleet().RegisterWorker(A100Worker(8))->mutable_name();
  const v1::Search search = Create(OneNodeFullSearch());
  EXPECT_FALSE(Acquire(a100).has_value());
  EXPECT_EQ(Get(search.name()).candidates(0).waiting_reason(),
            "needs 1 node of 8 x h100-80gb with backend sim; live workers: 1 x 8 a100-40gb "
            "(sim); they can host 0 of its 1 node shares");
  absl::StatusOr<v1::ListWorkersResponse> workers = scheduler_->reader().ListWorkers();
  ASSERT_TRUE(workers.ok());
  EXPECT_EQ(workers->workers(0).gpu_type(), "a100-40gb");

  const std::string h100 = Register(8);
  EXPECT_THAT(Get(search.name()).candidates(0).waiting_reason(), IsEmpty());
  std::optional<v1::ProbeAssignment> probe = Acquire(h100);
  ASSERT_TRUE(probe.has_value());
  EXPECT_EQ(probe->gang(0).worker(), h100);
}

TEST_F(SchedulerTest, IdenticalLaunchRefusalsInARowFailTheSearch) {
  const v1::Search search = Create(SmallSimSearch(3));
  const std::string refusal = "its Slurm job could not be submitted: sbatch: error: Invalid gres";
  ASSERT_TRUE(scheduler_->fleet().LaunchRefused("searches/1/candidates/0/probes/1", refusal).ok());
  // A different refusal breaks the run.
  ASSERT_TRUE(scheduler_->fleet().LaunchRefused("searches/1/candidates/1/probes/1", "other").ok());
  ASSERT_TRUE(scheduler_->fleet().LaunchRefused("searches/1/candidates/2/probes/1", refusal).ok());
  ASSERT_TRUE(scheduler_->fleet().LaunchRefused("searches/1/candidates/0/probes/2", refusal).ok());
  EXPECT_EQ(Get(search.name()).state(), v1::PROBING);
  // A refusal of a probe that moved on counts for nothing.
  ASSERT_TRUE(scheduler_->fleet().LaunchRefused("searches/1/candidates/2/probes/1", refusal).ok());
  EXPECT_EQ(Get(search.name()).state(), v1::PROBING);
  ASSERT_TRUE(scheduler_->fleet().LaunchRefused("searches/1/candidates/2/probes/2", refusal).ok());
  const v1::Search failed = Get(search.name());
  EXPECT_EQ(failed.state(), v1::FAILED);
  EXPECT_EQ(failed.stop_reason(),
            "stopped after 3 launches in a row were refused the same way "
            "(probe.max_launch_failures 3): " +
                refusal);
  EXPECT_EQ(scheduler_->Stats().queued_probes, 0);
}

TEST_F(SchedulerTest, SearchesShareWorkersRoundRobin) {
  Create(SmallSimSearch(3));
  Create(SmallSimSearch(3));
  const std::string worker = Register(8);
  std::vector<std::string> order;
  for (int i = 0; i < 4; ++i) {
    std::optional<v1::ProbeAssignment> assignment = Acquire(worker);
    ASSERT_TRUE(assignment.has_value());
    order.push_back(assignment->name());
    ASSERT_TRUE(Report(worker, assignment->name(), OkResult(1)).ok());
  }
  EXPECT_THAT(order,
              ElementsAre("searches/1/candidates/0/probes/1", "searches/2/candidates/0/probes/1",
                          "searches/1/candidates/1/probes/1", "searches/2/candidates/1/probes/1"));
}

}  // namespace
}  // namespace paratune
