#include "server/scheduler.h"

#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/fake_clock.h"
#include "server/fake_search_store.h"
#include "server/sqlite_search_store.h"
#include "server/test_requests.h"

namespace paratune {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

v1::RegisterWorkerRequest Worker(int gpus, const std::string& backend = "sim") {
  v1::RegisterWorkerRequest request;
  request.set_hostname("node");
  for (int i = 0; i < gpus; ++i) {
    v1::Gpu& gpu = *request.add_gpus();
    gpu.set_index(i);
    gpu.set_name("simulated H100-80GB");
    gpu.set_memory_bytes(85'520'809'984);
  }
  request.add_backends(backend);
  return request;
}

v1::ProbeResult OkResult(double tflops) {
  v1::ProbeResult result;
  result.set_outcome(v1::PROBE_OK);
  result.set_backend("sim");
  result.set_simulated(true);
  result.add_step_times_seconds(1.0);
  result.set_mean_step_time_seconds(1.0);
  result.set_tokens_per_second(1000);
  result.set_model_tflops_per_gpu(tflops);
  return result;
}

v1::ProbeResult FailedResult(v1::ProbeOutcome outcome) {
  v1::ProbeResult result;
  result.set_outcome(outcome);
  result.set_backend("sim");
  result.set_message("it broke");
  return result;
}

// Counts OnProbesQueued calls.
class CountingListener : public ProbesQueuedListener {
 public:
  void OnProbesQueued() override { ++calls; }
  int calls = 0;
};

// Records every call, for Watch tests.
class RecordingObserver : public SearchObserver {
 public:
  void OnSearchChanged(const v1::Search& search, const std::string& event) override {
    states.push_back(search.state());
    events.push_back(event);
  }
  void OnSchedulerShutdown() override { shut_down = true; }

  std::vector<v1::SearchState> states;
  std::vector<std::string> events;
  bool shut_down = false;
};

class SchedulerTest : public ::testing::Test {
 protected:
  SchedulerTest() {
    Scheduler::Options options;
    options.clock = &clock_;
    options.heartbeat_interval = absl::Seconds(2);
    auto store = std::make_unique<FakeSearchStore>();
    store_ = store.get();
    absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
        Scheduler::Create(std::move(options), std::move(store));
    EXPECT_TRUE(scheduler.ok()) << scheduler.status();
    scheduler_ = *std::move(scheduler);
    scheduler_->AddListener(&listener_);
  }

  v1::Search Create(const v1::CreateSearchRequest& request) {
    absl::StatusOr<v1::Search> search = scheduler_->CreateSearch(request);
    EXPECT_TRUE(search.ok()) << search.status();
    return search.ok() ? *search : v1::Search();
  }

  std::string Register(int gpus, const std::string& backend = "sim") {
    absl::StatusOr<v1::RegisterWorkerResponse> response =
        scheduler_->RegisterWorker(Worker(gpus, backend));
    EXPECT_TRUE(response.ok()) << response.status();
    return response.ok() ? response->name() : "";
  }

  std::optional<v1::ProbeAssignment> Acquire(const std::string& worker) {
    const int notified = listener_.calls;
    absl::StatusOr<std::optional<v1::ProbeAssignment>> acquired =
        scheduler_->TryAcquireProbe(worker);
    EXPECT_TRUE(acquired.ok()) << acquired.status();
    others_may_have_work_ = listener_.calls > notified;
    return acquired.ok() ? *acquired : std::nullopt;
  }

  absl::Status Report(const std::string& worker, const std::string& probe,
                      const v1::ProbeResult& result) {
    v1::ReportProbeRequest request;
    request.set_worker(worker);
    request.set_probe(probe);
    *request.mutable_result() = result;
    return scheduler_->ReportProbe(request);
  }

  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(const std::string& worker,
                                                  std::vector<std::string> running = {}) {
    v1::HeartbeatRequest request;
    request.set_worker(worker);
    for (std::string& probe : running) request.add_running_probes(std::move(probe));
    return scheduler_->Heartbeat(request);
  }

  v1::Search Get(const std::string& name) {
    absl::StatusOr<v1::Search> search = scheduler_->reader().GetSearch(name);
    EXPECT_TRUE(search.ok()) << search.status();
    return search.ok() ? *search : v1::Search();
  }

  FakeClock clock_;
  CountingListener listener_;
  // Whether the last Acquire told listeners to look again (work left for other workers).
  bool others_may_have_work_ = false;
  FakeSearchStore* store_ = nullptr;
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(SchedulerTest, CreateSearchQueuesTheTopKAndFillsDefaults) {
  const v1::Search search = Create(SmallSimSearch(3));
  EXPECT_EQ(search.name(), "searches/1");
  EXPECT_EQ(search.display_name(), "small sim search");
  EXPECT_EQ(search.state(), v1::PROBING);
  EXPECT_EQ(search.counts().selected(), 3);
  EXPECT_GE(search.counts().enumerated(), search.counts().valid());
  EXPECT_GE(search.counts().valid(), search.counts().memory_safe());
  EXPECT_GE(search.counts().memory_safe(), 3);
  ASSERT_EQ(search.candidates_size(), 3);
  double previous = 1e300;
  for (int n = 0; n < 3; ++n) {
    const v1::Candidate& candidate = search.candidates(n);
    EXPECT_EQ(candidate.name(), "searches/1/candidates/" + std::to_string(n));
    EXPECT_EQ(candidate.state(), v1::CANDIDATE_QUEUED);
    EXPECT_EQ(candidate.memory().verdict(), v1::SAFE);
    EXPECT_LE(candidate.predicted().model_tflops_per_gpu(), previous);
    previous = candidate.predicted().model_tflops_per_gpu();
  }
  const v1::ProbeSettings& probe = search.spec().probe();
  EXPECT_EQ(probe.backend(), "sim");
  EXPECT_EQ(probe.warmup_steps(), 2);
  EXPECT_EQ(probe.timed_steps(), 5);
  EXPECT_EQ(probe.deadline_seconds(), 600);
  EXPECT_EQ(probe.max_attempts(), 2);
  EXPECT_EQ(search.spec().seed(), 1u);
  EXPECT_EQ(listener_.calls, 1);
}

TEST_F(SchedulerTest, UnspecifiedPolicyIsAdaptiveStartingWithMaxInFlightCandidates) {
  v1::CreateSearchRequest request = SmallSimSearch(0);
  request.mutable_spec()->set_policy(v1::SEARCH_POLICY_UNSPECIFIED);
  const v1::Search search = Create(request);
  EXPECT_EQ(search.spec().policy(), v1::ADAPTIVE);
  EXPECT_EQ(search.spec().adaptive().max_in_flight(), 2);
  EXPECT_EQ(search.counts().selected(), 2);
  EXPECT_GT(search.counts().memory_safe(), 2);
  ASSERT_EQ(search.candidates_size(), 2);
  EXPECT_EQ(search.candidates(0).state(), v1::CANDIDATE_QUEUED);
  EXPECT_THAT(search.candidates(0).selection_note(), HasSubstr("predicted"));
}

TEST_F(SchedulerTest, ExhaustiveSelectsEveryMemorySafeCandidate) {
  v1::CreateSearchRequest request = SmallSimSearch(0);
  request.mutable_spec()->set_policy(v1::EXHAUSTIVE);
  const v1::Search search = Create(request);
  EXPECT_EQ(search.counts().selected(), search.counts().memory_safe());
  EXPECT_EQ(search.candidates_size(), search.counts().selected());
}

TEST_F(SchedulerTest, BadRequestsNameTheField) {
  v1::CreateSearchRequest adaptive = SmallSimSearch(3);
  adaptive.mutable_spec()->set_policy(v1::ADAPTIVE);
  adaptive.mutable_spec()->mutable_adaptive()->set_max_in_flight(5000);
  EXPECT_EQ(scheduler_->CreateSearch(adaptive).status(),
            absl::InvalidArgumentError("spec.adaptive.max_in_flight (5000) must be in [0, 1024]"));

  v1::CreateSearchRequest steps = SmallSimSearch(3);
  steps.mutable_spec()->mutable_probe()->set_timed_steps(20000);
  EXPECT_EQ(scheduler_->CreateSearch(steps).status(),
            absl::InvalidArgumentError("spec.probe.timed_steps (20000) must be in [0, 10000]"));

  v1::CreateSearchRequest preset = SmallSimSearch(3);
  preset.mutable_spec()->mutable_model()->set_preset("gpt-5");
  const absl::Status status = scheduler_->CreateSearch(preset).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("model.preset"));

  // Nothing was created.
  absl::StatusOr<v1::ListSearchesResponse> list = scheduler_->reader().ListSearches({});
  ASSERT_TRUE(list.ok());
  EXPECT_THAT(list->searches(), IsEmpty());
}

TEST_F(SchedulerTest, NoMemorySafeCandidateFailsWithTheCounts) {
  v1::CreateSearchRequest request = SmallSimSearch(3);
  request.mutable_spec()->mutable_model()->set_preset("llama3.1-405b");
  const v1::Search search = Create(request);
  EXPECT_EQ(search.state(), v1::FAILED);
  EXPECT_THAT(search.stop_reason(), HasSubstr("no memory-safe configuration to probe"));
  EXPECT_THAT(search.stop_reason(), HasSubstr("out of memory"));
  EXPECT_EQ(search.counts().selected(), 0);
  EXPECT_EQ(Get("searches/1").state(), v1::FAILED);
  EXPECT_EQ(listener_.calls, 0);
}

TEST_F(SchedulerTest, ProbesRunToSuccessAndAreRankedByMeasurement) {
  const v1::Search created = Create(SmallSimSearch(3));
  const std::string worker = Register(8);

  std::vector<v1::ProbeAssignment> assignments;
  for (int i = 0; i < 3; ++i) {
    std::optional<v1::ProbeAssignment> assignment = Acquire(worker);
    ASSERT_TRUE(assignment.has_value());
    assignments.push_back(*assignment);
    // Predicted order is probed first; measurements reverse it.
    ASSERT_TRUE(Report(worker, assignment->name(), OkResult(100.0 + 10 * i)).ok());
  }
  EXPECT_EQ(assignments[0].name(), "searches/1/candidates/0/probes/1");
  EXPECT_EQ(assignments[0].backend(), "sim");
  EXPECT_EQ(assignments[0].scope(), v1::PROBE_SCOPE_FULL);
  EXPECT_EQ(assignments[0].timed_steps(), 5);
  EXPECT_EQ(assignments[0].warmup_steps(), 2);
  EXPECT_EQ(assignments[0].seed(), 1u);
  EXPECT_EQ(assignments[0].model().preset(), "llama3.2-1b");
  EXPECT_EQ(assignments[0].config().data_parallel(),
            created.candidates(0).config().data_parallel());
  EXPECT_FALSE(Acquire(worker).has_value());

  const v1::Search search = Get(created.name());
  EXPECT_EQ(search.state(), v1::SUCCEEDED);
  EXPECT_EQ(search.counts().probed(), 3);
  EXPECT_EQ(search.counts().succeeded(), 3);
  ASSERT_EQ(search.candidates_size(), 3);
  EXPECT_EQ(search.candidates(0).name(), "searches/1/candidates/2");
  EXPECT_EQ(search.candidates(1).name(), "searches/1/candidates/1");
  EXPECT_EQ(search.candidates(2).name(), "searches/1/candidates/0");
  EXPECT_EQ(search.candidates(0).worker(), worker);
  EXPECT_THAT(search.stop_reason(), HasSubstr("probed all 3 selected candidates; best dp"));
  EXPECT_THAT(search.stop_reason(), HasSubstr("120.0 TFLOP/s per GPU (simulated)"));

  absl::StatusOr<v1::ListWorkersResponse> workers = scheduler_->reader().ListWorkers();
  ASSERT_TRUE(workers.ok());
  ASSERT_EQ(workers->workers_size(), 1);
  EXPECT_EQ(workers->workers(0).probes_completed(), 3);
  EXPECT_EQ(workers->workers(0).state(), v1::WORKER_IDLE);
}

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

// Llama-3.2-1B on 2 x 4 H100-80GB probed FULL: 8 ranks, two nodes of 4.
v1::CreateSearchRequest FullScopeSearch() {
  v1::CreateSearchRequest request = SmallSimSearch(1, /*nodes=*/2, /*gpus_per_node=*/4);
  request.mutable_spec()->mutable_probe()->set_scope(v1::PROBE_SCOPE_FULL);
  return request;
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
  ASSERT_TRUE(scheduler_->Rendezvous(ask).ok());
  EXPECT_THAT(scheduler_->Rendezvous(ask)->token(), IsEmpty());
  v1::RendezvousRequest send = ask;
  send.set_worker(a);
  send.set_token("nccl-unique-id");
  EXPECT_EQ(scheduler_->Rendezvous(send)->token(), "nccl-unique-id");
  EXPECT_EQ(scheduler_->Rendezvous(ask)->token(), "nccl-unique-id");
  v1::RendezvousRequest impostor = ask;
  impostor.set_token("other");
  EXPECT_EQ(scheduler_->Rendezvous(impostor).status().code(), absl::StatusCode::kInvalidArgument);

  v1::ProbeResult rank0 = OkResult(300);
  rank0.set_peak_memory_bytes(10);
  ASSERT_TRUE(Report(a, first->name(), rank0).ok());
  EXPECT_EQ(Get(search.name()).state(), v1::PROBING);
  EXPECT_TRUE(Report(a, first->name(), rank0).ok());
  EXPECT_EQ(Report(a, first->name(), OkResult(1)).code(), absl::StatusCode::kFailedPrecondition);
  v1::ProbeResult rank4 = OkResult(250);
  rank4.set_peak_memory_bytes(20);
  ASSERT_TRUE(Report(b, first->name(), rank4).ok());

  const v1::Search done = Get(search.name());
  EXPECT_EQ(done.state(), v1::SUCCEEDED);
  ASSERT_EQ(done.candidates_size(), 1);
  EXPECT_EQ(done.candidates(0).worker(), a);
  EXPECT_DOUBLE_EQ(done.candidates(0).probe_result().model_tflops_per_gpu(), 300);
  EXPECT_EQ(done.candidates(0).probe_result().peak_memory_bytes(), 20);
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
  const std::string nemo_worker = *scheduler_->RegisterWorker(nemo)->mutable_name();
  EXPECT_FALSE(Acquire(nemo_worker).has_value());
  EXPECT_THAT(Get(search.name()).candidates(0).waiting_reason(),
              HasSubstr("with backend command and template megatron-gpt"));

  v1::RegisterWorkerRequest megatron = Worker(8, "command");
  megatron.add_command_templates("megatron-gpt");
  const std::string megatron_worker = *scheduler_->RegisterWorker(megatron)->mutable_name();
  std::optional<v1::ProbeAssignment> assignment = Acquire(megatron_worker);
  ASSERT_TRUE(assignment.has_value());
  EXPECT_EQ(assignment->command_template(), "megatron-gpt");
}

TEST_F(SchedulerTest, LostWorkersProbeIsRequeuedThenGivenUp) {
  const v1::Search search = Create(SmallSimSearch(1));
  const std::string first = Register(8);
  std::optional<v1::ProbeAssignment> assignment = Acquire(first);
  ASSERT_TRUE(assignment.has_value());

  // Three missed intervals of 2 s: lost.
  clock_.Advance(absl::Seconds(6));
  scheduler_->CheckLeases();
  EXPECT_EQ(Get(search.name()).candidates(0).state(), v1::CANDIDATE_RUNNING);
  clock_.Advance(absl::Seconds(1));
  const std::string second = Register(8);
  scheduler_->CheckLeases();
  EXPECT_EQ(Heartbeat(first).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Report(first, assignment->name(), OkResult(1)).code(), absl::StatusCode::kNotFound);
  v1::Search requeued = Get(search.name());
  EXPECT_EQ(requeued.candidates(0).state(), v1::CANDIDATE_QUEUED);
  EXPECT_EQ(requeued.candidates(0).attempts(), 1);

  assignment = Acquire(second);
  ASSERT_TRUE(assignment.has_value());
  EXPECT_EQ(assignment->name(), "searches/1/candidates/0/probes/2");
  clock_.Advance(absl::Seconds(7));
  scheduler_->CheckLeases();

  // max_attempts (2) spent: the candidate is probed with an infrastructure error and the
  // search fails, since nothing succeeded.
  const v1::Search failed = Get(search.name());
  EXPECT_EQ(failed.state(), v1::FAILED);
  EXPECT_EQ(failed.candidates(0).state(), v1::CANDIDATE_PROBED);
  EXPECT_EQ(failed.candidates(0).probe_result().outcome(), v1::PROBE_INFRA_ERROR);
  EXPECT_THAT(failed.candidates(0).probe_result().message(), HasSubstr("gave up after 2"));
  EXPECT_THAT(failed.stop_reason(), HasSubstr("all 1 selected candidates failed"));

  absl::StatusOr<v1::ListWorkersResponse> workers = scheduler_->reader().ListWorkers();
  ASSERT_TRUE(workers.ok());
  EXPECT_EQ(workers->workers(0).state(), v1::WORKER_LOST);
}

// A worker reserved for one probe, as a Slurm job started for it registers.
v1::RegisterWorkerRequest ReservedWorker(int gpus, const std::string& probe) {
  v1::RegisterWorkerRequest request = Worker(gpus);
  (*request.mutable_labels())[kProbeReservationLabel] = probe;
  return request;
}

TEST_F(SchedulerTest, ReservedWorkersRunTheirProbeOnly) {
  const v1::Search search = Create(SmallSimSearch(3));
  const std::string for_second =
      scheduler_->RegisterWorker(ReservedWorker(8, "searches/1/candidates/1/probes/1"))->name();
  const std::string for_other =
      scheduler_->RegisterWorker(ReservedWorker(8, "searches/1/candidates/2/probes/2"))->name();
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
  const std::string reserved = scheduler_->RegisterWorker(ReservedWorker(8, probe))->name();
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
  std::vector<PendingProbe> pending = scheduler_->PendingProbes();
  ASSERT_EQ(pending.size(), 3u);
  EXPECT_EQ(pending[0].probe, "searches/1/candidates/0/probes/1");
  EXPECT_FALSE(pending[0].running);
  EXPECT_TRUE(pending[0].unplaceable);
  EXPECT_EQ(pending[0].ranks, 8);
  EXPECT_EQ(pending[0].gpus_per_node, 8);
  EXPECT_EQ(pending[0].backend, "sim");
  EXPECT_EQ(pending[0].deadline, absl::Seconds(600));
  EXPECT_EQ(pending[1].probe, "searches/2/candidates/0/probes/1");
  EXPECT_EQ(pending[2].probe, "searches/2/candidates/1/probes/1");
  EXPECT_EQ(pending[2].deadline, absl::Seconds(120));
  for (const PendingProbe& probe : pending) {
    EXPECT_EQ(probe.ranks % probe.group_size, 0) << probe.probe;
  }
  // Without workers the 16-GPU search's probes run at replica scope.
  const PendingProbe replica = pending[1];
  EXPECT_LT(replica.ranks, 16);

  const std::string reserved = scheduler_->RegisterWorker(ReservedWorker(8, replica.probe))->name();
  const std::string unreserved = Register(8);
  ASSERT_TRUE(Acquire(reserved).has_value());
  ASSERT_TRUE(Acquire(unreserved).has_value());
  pending = scheduler_->PendingProbes();
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
  const std::string worker = scheduler_->RegisterWorker(ReservedWorker(8, probe))->name();
  ASSERT_TRUE(scheduler_->LaunchEnded(probe, "slurm job 7 ended FAILED").ok());
  EXPECT_EQ(Heartbeat(worker).status().code(), absl::StatusCode::kNotFound);
  v1::Candidate candidate = Get(search.name()).candidates(0);
  EXPECT_EQ(candidate.state(), v1::CANDIDATE_QUEUED);
  EXPECT_EQ(candidate.attempts(), 1);
  // A repeated report of the same launch changes nothing.
  ASSERT_TRUE(scheduler_->LaunchEnded(probe, "slurm job 7 ended FAILED").ok());
  EXPECT_EQ(Get(search.name()).candidates(0).attempts(), 1);
  // The failed attempt went behind the search's other candidate.
  std::vector<PendingProbe> pending = scheduler_->PendingProbes();
  ASSERT_EQ(pending.size(), 2u);
  EXPECT_EQ(pending[0].probe, "searches/1/candidates/0/probes/2");
  const std::string unreserved = Register(8);
  std::optional<v1::ProbeAssignment> next = Acquire(unreserved);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->name(), "searches/1/candidates/1/probes/1");
  ASSERT_TRUE(Report(unreserved, next->name(), OkResult(100)).ok());

  // The second and last attempt fails the same way: the probe is given up with the reason.
  ASSERT_TRUE(
      scheduler_->LaunchEnded("searches/1/candidates/0/probes/2", "slurm job 8 ended NODE_FAIL")
          .ok());
  const v1::Search ended = Get(search.name());
  EXPECT_EQ(ended.state(), v1::SUCCEEDED);
  const v1::Candidate& failed = ended.candidates(1);
  EXPECT_EQ(failed.name(), "searches/1/candidates/0");
  EXPECT_EQ(failed.probe_result().outcome(), v1::PROBE_INFRA_ERROR);
  EXPECT_THAT(failed.probe_result().message(), HasSubstr("slurm job 8 ended NODE_FAIL"));
  EXPECT_EQ(scheduler_->LaunchEnded("searches/1/candidates/0", "x").code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(SchedulerTest, LaunchEndingUnderItsRunningProbeRequeuesIt) {
  const v1::Search search = Create(SmallSimSearch(1));
  const std::string probe = "searches/1/candidates/0/probes/1";
  const std::string worker = scheduler_->RegisterWorker(ReservedWorker(8, probe))->name();
  ASSERT_TRUE(Acquire(worker).has_value());
  const int notifications = listener_.calls;
  ASSERT_TRUE(scheduler_->LaunchEnded(probe, "slurm job 7 ended CANCELLED").ok());
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
  std::vector<std::string> texts;
  for (const v1::SearchEvent& event : events->events()) texts.push_back(event.text());
  EXPECT_THAT(texts,
              Contains(HasSubstr("re-queued after attempt 1 of 2: slurm job 7 ended CANCELLED")));
  EXPECT_EQ(Report(worker, probe, OkResult(1)).code(), absl::StatusCode::kNotFound);
}

TEST_F(SchedulerTest, HeartbeatsKeepAWorkerAlive) {
  Create(SmallSimSearch(1));
  const std::string worker = Register(8);
  std::optional<v1::ProbeAssignment> assignment = Acquire(worker);
  ASSERT_TRUE(assignment.has_value());
  for (int i = 0; i < 10; ++i) {
    clock_.Advance(absl::Seconds(2));
    ASSERT_TRUE(Heartbeat(worker, {assignment->name()}).ok());
    scheduler_->CheckLeases();
  }
  EXPECT_TRUE(Report(worker, assignment->name(), OkResult(5)).ok());
}

TEST_F(SchedulerTest, OverdueLeaseIsRequeuedAndTheWorkerToldToStop) {
  const v1::Search search = Create(SmallSimSearch(1));
  const std::string worker = Register(8);
  std::optional<v1::ProbeAssignment> assignment = Acquire(worker);
  ASSERT_TRUE(assignment.has_value());
  // Deadline 600 s plus 30 s grace, heartbeating all along.
  for (int i = 0; i < 316; ++i) {
    clock_.Advance(absl::Seconds(2));
    ASSERT_TRUE(Heartbeat(worker, {assignment->name()}).ok());
    scheduler_->CheckLeases();
  }
  EXPECT_EQ(Get(search.name()).candidates(0).state(), v1::CANDIDATE_QUEUED);
  absl::StatusOr<v1::HeartbeatResponse> heartbeat = Heartbeat(worker, {assignment->name()});
  ASSERT_TRUE(heartbeat.ok());
  EXPECT_THAT(heartbeat->cancel_probes(), ElementsAre(assignment->name()));
}

TEST_F(SchedulerTest, ReportsMustMatchALease) {
  const v1::Search search = Create(SmallSimSearch(2));
  const std::string worker = Register(8);
  const std::string other = Register(8);
  std::optional<v1::ProbeAssignment> assignment = Acquire(worker);
  ASSERT_TRUE(assignment.has_value());

  EXPECT_EQ(Report(other, assignment->name(), OkResult(1)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Report(worker, "searches/1/candidates/1/probes/1", OkResult(1)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Report("workers/99", assignment->name(), OkResult(1)).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(Report("nonsense", assignment->name(), OkResult(1)).code(),
            absl::StatusCode::kInvalidArgument);
  const absl::Status invalid =
      Report(worker, assignment->name(), FailedResult(v1::PROBE_OUTCOME_UNSPECIFIED));
  EXPECT_EQ(invalid.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(invalid.message(), HasSubstr("result.outcome"));

  ASSERT_TRUE(Report(worker, assignment->name(), OkResult(1)).ok());
  // The same report again (its reply was lost) is answered OK again; another is refused.
  EXPECT_TRUE(Report(worker, assignment->name(), OkResult(1)).ok());
  EXPECT_EQ(Report(worker, assignment->name(), OkResult(2)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Get(search.name()).counts().probed(), 1);
}

TEST_F(SchedulerTest, InfrastructureErrorsAreRetriedWithinMaxAttempts) {
  const v1::Search search = Create(SmallSimSearch(1));
  const std::string worker = Register(8);
  std::optional<v1::ProbeAssignment> first = Acquire(worker);
  ASSERT_TRUE(first.has_value());
  const int notified = listener_.calls;
  ASSERT_TRUE(Report(worker, first->name(), FailedResult(v1::PROBE_INFRA_ERROR)).ok());
  EXPECT_EQ(listener_.calls, notified + 1);
  std::optional<v1::ProbeAssignment> second = Acquire(worker);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->name(), "searches/1/candidates/0/probes/2");
  ASSERT_TRUE(Report(worker, second->name(), OkResult(50)).ok());
  const v1::Search done = Get(search.name());
  EXPECT_EQ(done.state(), v1::SUCCEEDED);
  EXPECT_EQ(done.candidates(0).attempts(), 2);
}

TEST_F(SchedulerTest, SearchWhoseProbesAllFailIsFailed) {
  const v1::Search search = Create(SmallSimSearch(2));
  const std::string worker = Register(8);
  for (v1::ProbeOutcome outcome : {v1::PROBE_OUT_OF_MEMORY, v1::PROBE_CRASH}) {
    std::optional<v1::ProbeAssignment> assignment = Acquire(worker);
    ASSERT_TRUE(assignment.has_value());
    ASSERT_TRUE(Report(worker, assignment->name(), FailedResult(outcome)).ok());
  }
  const v1::Search failed = Get(search.name());
  EXPECT_EQ(failed.state(), v1::FAILED);
  EXPECT_EQ(failed.counts().failed(), 2);
  EXPECT_EQ(failed.counts().succeeded(), 0);
  EXPECT_THAT(failed.stop_reason(), HasSubstr("all 2 selected candidates failed"));
  EXPECT_THAT(failed.stop_reason(), HasSubstr("out of memory: it broke"));
}

TEST_F(SchedulerTest, CancelDropsQueuedProbesAndStopsRunningOnes) {
  const v1::Search search = Create(SmallSimSearch(3));
  const std::string worker = Register(8);
  std::optional<v1::ProbeAssignment> running = Acquire(worker);
  ASSERT_TRUE(running.has_value());

  absl::StatusOr<v1::Search> cancelled = scheduler_->CancelSearch(search.name());
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->state(), v1::CANCELLED);
  for (const v1::Candidate& candidate : cancelled->candidates()) {
    EXPECT_EQ(candidate.state(), v1::CANDIDATE_SKIPPED);
  }
  absl::StatusOr<v1::HeartbeatResponse> heartbeat = Heartbeat(worker, {running->name()});
  ASSERT_TRUE(heartbeat.ok());
  EXPECT_THAT(heartbeat->cancel_probes(), ElementsAre(running->name()));
  EXPECT_FALSE(Acquire(worker).has_value());
  EXPECT_EQ(Report(worker, running->name(), OkResult(1)).code(),
            absl::StatusCode::kFailedPrecondition);

  EXPECT_EQ(scheduler_->CancelSearch(search.name()).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(scheduler_->CancelSearch("searches/42").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(SchedulerTest, GetNamesMissingAndMalformedSearches) {
  const absl::Status missing = scheduler_->reader().GetSearch("searches/42").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.message(), HasSubstr("searches/42"));
  EXPECT_EQ(scheduler_->reader().GetSearch("searches/x").status().code(),
            absl::StatusCode::kInvalidArgument);
}

// One node of 8 H100-80GB, probed FULL.
v1::CreateSearchRequest OneNodeFullSearch() {
  v1::CreateSearchRequest request = SmallSimSearch(1);
  request.mutable_spec()->mutable_probe()->set_scope(v1::PROBE_SCOPE_FULL);
  return request;
}

// A worker of `gpus` A100-40GB, as the sim declares them.
v1::RegisterWorkerRequest A100Worker(int gpus) {
  v1::RegisterWorkerRequest request = Worker(gpus);
  for (v1::Gpu& gpu : *request.mutable_gpus()) {
    gpu.set_name("simulated A100-40GB");
    gpu.set_memory_bytes(42'949'672'960);
  }
  return request;
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
  const std::string a100 = *scheduler_->RegisterWorker(A100Worker(8))->mutable_name();
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

TEST_F(SchedulerTest, AReportRetriedAfterAFailedCommitIsStoredOnce) {
  const std::string worker = Register(8);
  const v1::Search search = Create(SmallSimSearch(1));
  RecordingObserver observer;
  ASSERT_TRUE(scheduler_->Watch(search.name(), &observer).ok());
  std::optional<v1::ProbeAssignment> probe = Acquire(worker);
  ASSERT_TRUE(probe.has_value());
  const size_t told = observer.events.size();

  store_->FailNextWrites(1, absl::UnavailableError("database is locked"));
  EXPECT_EQ(Report(worker, probe->name(), OkResult(300)).code(), absl::StatusCode::kUnavailable);
  // Nothing was stored, so nothing was told.
  EXPECT_EQ(Get(search.name()).candidates(0).state(), v1::CANDIDATE_RUNNING);
  EXPECT_EQ(observer.events.size(), told);

  // The worker retries: OK, stored once, told once.
  ASSERT_TRUE(Report(worker, probe->name(), OkResult(300)).ok());
  const v1::Search done = Get(search.name());
  EXPECT_EQ(done.state(), v1::SUCCEEDED);
  EXPECT_EQ(done.counts().probed(), 1);
  EXPECT_EQ(done.candidates(0).probe_result().model_tflops_per_gpu(), 300);
  ASSERT_GT(observer.events.size(), told);
  EXPECT_THAT(observer.events[told], HasSubstr("candidates/0 probed on " + worker));
}

TEST_F(SchedulerTest, ALeaseThatCouldNotBeStoredIsHandedOverAgain) {
  const std::string worker = Register(8);
  const v1::Search search = Create(SmallSimSearch(1));
  store_->FailNextWrites(1, absl::UnavailableError("database is locked"));
  absl::StatusOr<std::optional<v1::ProbeAssignment>> failed = scheduler_->TryAcquireProbe(worker);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable);
  std::optional<v1::ProbeAssignment> probe = Acquire(worker);
  ASSERT_TRUE(probe.has_value());
  // The same attempt: none was burnt.
  EXPECT_EQ(probe->name(), "searches/1/candidates/0/probes/1");
  EXPECT_EQ(Get(search.name()).candidates(0).state(), v1::CANDIDATE_RUNNING);
}

TEST_F(SchedulerTest, ASearchTheStoreRefusesLeavesNoTrace) {
  store_->FailNextWrites(1, absl::UnavailableError("database is locked"));
  EXPECT_EQ(scheduler_->CreateSearch(SmallSimSearch(1)).status().code(),
            absl::StatusCode::kUnavailable);
  absl::StatusOr<v1::ListSearchesResponse> listed = scheduler_->reader().ListSearches({});
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->searches_size(), 0);
  EXPECT_EQ(scheduler_->Stats().queued_probes, 0);
  // The next one is created and runs.
  const v1::Search search = Create(SmallSimSearch(1));
  EXPECT_EQ(search.state(), v1::PROBING);
  EXPECT_TRUE(Acquire(Register(8)).has_value());
}

TEST_F(SchedulerTest, ACancellationTheStoreRefusedIsStoredWithTheNextChange) {
  const v1::Search search = Create(SmallSimSearch(2));
  store_->FailNextWrites(1, absl::UnavailableError("database is locked"));
  EXPECT_EQ(scheduler_->CancelSearch(search.name()).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(Get(search.name()).state(), v1::PROBING);
  scheduler_->CheckLeases();
  EXPECT_EQ(Get(search.name()).state(), v1::CANCELLED);
}

TEST_F(SchedulerTest, ADeregisteredWorkerIsGoneAndItsProbeRequeued) {
  const v1::Search search = Create(SmallSimSearch(1));
  const std::string worker = Register(8);
  std::optional<v1::ProbeAssignment> probe = Acquire(worker);
  ASSERT_TRUE(probe.has_value());

  v1::DeregisterWorkerRequest request;
  request.set_worker(worker);
  request.set_reason("SIGTERM");
  ASSERT_TRUE(scheduler_->DeregisterWorker(request).ok());
  absl::StatusOr<v1::ListWorkersResponse> workers = scheduler_->reader().ListWorkers();
  ASSERT_TRUE(workers.ok());
  EXPECT_EQ(workers->workers_size(), 0);
  const v1::Candidate candidate = Get(search.name()).candidates(0);
  EXPECT_EQ(candidate.state(), v1::CANDIDATE_QUEUED);
  EXPECT_THAT(candidate.waiting_reason(), HasSubstr("live workers: none"));
  EXPECT_EQ(Heartbeat(worker).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Report(worker, probe->name(), OkResult(1)).code(), absl::StatusCode::kNotFound);
  v1::ListSearchEventsRequest events;
  events.set_name(search.name());
  absl::StatusOr<v1::ListSearchEventsResponse> log = scheduler_->reader().ListSearchEvents(events);
  ASSERT_TRUE(log.ok());
  std::vector<std::string> texts;
  for (const v1::SearchEvent& event : log->events()) texts.push_back(event.text());
  EXPECT_THAT(texts, Contains(HasSubstr("candidates/0 re-queued after attempt 1 of 2: " + worker +
                                        " left: SIGTERM")));

  // A retry after a lost reply is OK; bad requests name the field.
  EXPECT_TRUE(scheduler_->DeregisterWorker(request).ok());
  request.set_worker("nonsense");
  EXPECT_EQ(scheduler_->DeregisterWorker(request).code(), absl::StatusCode::kInvalidArgument);
  request.set_worker(worker);
  request.set_reason(std::string(1025, 'x'));
  EXPECT_EQ(scheduler_->DeregisterWorker(request).message(),
            "reason (1025 bytes) must be at most 1024 bytes");

  // The next worker does not reuse its name.
  EXPECT_EQ(Register(8), "workers/2");
}

TEST_F(SchedulerTest, IdenticalLaunchRefusalsInARowFailTheSearch) {
  const v1::Search search = Create(SmallSimSearch(3));
  const std::string refusal = "its Slurm job could not be submitted: sbatch: error: Invalid gres";
  ASSERT_TRUE(scheduler_->LaunchRefused("searches/1/candidates/0/probes/1", refusal).ok());
  // A different refusal breaks the run.
  ASSERT_TRUE(scheduler_->LaunchRefused("searches/1/candidates/1/probes/1", "other").ok());
  ASSERT_TRUE(scheduler_->LaunchRefused("searches/1/candidates/2/probes/1", refusal).ok());
  ASSERT_TRUE(scheduler_->LaunchRefused("searches/1/candidates/0/probes/2", refusal).ok());
  EXPECT_EQ(Get(search.name()).state(), v1::PROBING);
  // A refusal of a probe that moved on counts for nothing.
  ASSERT_TRUE(scheduler_->LaunchRefused("searches/1/candidates/2/probes/1", refusal).ok());
  EXPECT_EQ(Get(search.name()).state(), v1::PROBING);
  ASSERT_TRUE(scheduler_->LaunchRefused("searches/1/candidates/2/probes/2", refusal).ok());
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

TEST_F(SchedulerTest, AskingForAnotherProbeGivesUpTheHeldOne) {
  Create(SmallSimSearch(1));
  const std::string worker = Register(8);
  std::optional<v1::ProbeAssignment> first = Acquire(worker);
  ASSERT_TRUE(first.has_value());
  std::optional<v1::ProbeAssignment> second = Acquire(worker);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->name(), "searches/1/candidates/0/probes/2");
  absl::StatusOr<v1::HeartbeatResponse> heartbeat = Heartbeat(worker, {second->name()});
  ASSERT_TRUE(heartbeat.ok());
  EXPECT_THAT(heartbeat->cancel_probes(), ElementsAre(first->name()));
}

TEST_F(SchedulerTest, HeartbeatCancelsProbesNotLeasedToTheWorker) {
  const std::string worker = Register(8);
  absl::StatusOr<v1::HeartbeatResponse> heartbeat =
      Heartbeat(worker, {"searches/9/candidates/0/probes/1"});
  ASSERT_TRUE(heartbeat.ok());
  EXPECT_THAT(heartbeat->cancel_probes(), ElementsAre("searches/9/candidates/0/probes/1"));
}

TEST_F(SchedulerTest, RegisterValidatesTheWorker) {
  v1::RegisterWorkerRequest request = Worker(0);
  const absl::Status status = scheduler_->RegisterWorker(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("gpus"));
}

TEST_F(SchedulerTest, ListSearchesPagesNewestFirstWithoutCandidates) {
  for (int i = 0; i < 3; ++i) Create(SmallSimSearch(1));
  v1::ListSearchesRequest request;
  request.set_page_size(2);
  absl::StatusOr<v1::ListSearchesResponse> first = scheduler_->reader().ListSearches(request);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->searches_size(), 2);
  EXPECT_EQ(first->searches(0).name(), "searches/3");
  EXPECT_EQ(first->searches(1).name(), "searches/2");
  EXPECT_THAT(first->searches(0).candidates(), IsEmpty());
  ASSERT_FALSE(first->next_page_token().empty());

  request.set_page_token(first->next_page_token());
  absl::StatusOr<v1::ListSearchesResponse> second = scheduler_->reader().ListSearches(request);
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->searches_size(), 1);
  EXPECT_EQ(second->searches(0).name(), "searches/1");
  EXPECT_TRUE(second->next_page_token().empty());

  request.set_page_token("garbage");
  EXPECT_EQ(scheduler_->reader().ListSearches(request).status().code(),
            absl::StatusCode::kInvalidArgument);
  request.clear_page_token();
  request.set_page_size(1001);
  EXPECT_EQ(scheduler_->reader().ListSearches(request).status(),
            absl::InvalidArgumentError("page_size (1001) must be in [0, 1000]"));
}

TEST_F(SchedulerTest, WatchersHearEveryChangeUntilTheSearchEnds) {
  const std::string worker = Register(8);
  const v1::Search search = Create(SmallSimSearch(1));
  RecordingObserver observer;
  absl::StatusOr<Scheduler::WatchStart> start = scheduler_->Watch(search.name(), &observer);
  ASSERT_TRUE(start.ok());
  EXPECT_FALSE(start->ended);
  EXPECT_EQ(start->search.state(), v1::PROBING);

  std::optional<v1::ProbeAssignment> assignment = Acquire(worker);
  ASSERT_TRUE(assignment.has_value());
  ASSERT_TRUE(Report(worker, assignment->name(), OkResult(402.1)).ok());
  EXPECT_THAT(observer.states, ElementsAre(v1::PROBING, v1::SUCCEEDED));
  ASSERT_EQ(observer.events.size(), 2u);
  EXPECT_THAT(observer.events[0], HasSubstr("candidates/0 leased to workers/1"));
  EXPECT_THAT(observer.events[1],
              HasSubstr("candidates/0 probed on workers/1: 402.1 TFLOP/s per GPU (simulated)"));

  // An ended search is returned as is, without registering.
  RecordingObserver late;
  absl::StatusOr<Scheduler::WatchStart> ended = scheduler_->Watch(search.name(), &late);
  ASSERT_TRUE(ended.ok());
  EXPECT_TRUE(ended->ended);
  EXPECT_EQ(ended->search.state(), v1::SUCCEEDED);
}

TEST_F(SchedulerTest, ShutdownReleasesWatchers) {
  const v1::Search search = Create(SmallSimSearch(1));
  RecordingObserver observer;
  ASSERT_TRUE(scheduler_->Watch(search.name(), &observer).ok());
  scheduler_->Shutdown();
  EXPECT_TRUE(observer.shut_down);
  EXPECT_EQ(scheduler_->CreateSearch(SmallSimSearch(1)).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(scheduler_->Watch(search.name(), &observer).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST_F(SchedulerTest, UnwatchStopsNotifications) {
  const v1::Search search = Create(SmallSimSearch(1));
  RecordingObserver observer;
  ASSERT_TRUE(scheduler_->Watch(search.name(), &observer).ok());
  scheduler_->Unwatch(search.name(), &observer);
  ASSERT_TRUE(Acquire(Register(8)).has_value());
  EXPECT_THAT(observer.events, IsEmpty());
}

// A result of `assignment` measuring `factor` x its candidate's predicted throughput, the step
// times spread by `spread` around their mean.
v1::ProbeResult MeasuredAsPredicted(const v1::Search& search, const v1::ProbeAssignment& assignment,
                                    double factor, double spread = 0) {
  const v1::Candidate* candidate = nullptr;
  for (const v1::Candidate& c : search.candidates()) {
    if (absl::StartsWith(assignment.name(), c.name() + "/")) candidate = &c;
  }
  EXPECT_NE(candidate, nullptr) << assignment.name();
  v1::ProbeResult result = OkResult(candidate->predicted().model_tflops_per_gpu() * factor);
  const double step = candidate->predicted().step_time_seconds() / factor;
  result.clear_step_times_seconds();
  for (int64_t i = 0; i < assignment.timed_steps(); ++i) {
    result.add_step_times_seconds(step * (1 + (i % 2 == 0 ? spread : -spread)));
  }
  result.set_mean_step_time_seconds(step);
  result.set_wall_seconds(2);
  return result;
}

// Runs the search to its end on `worker`, each probe measuring `factor` x its prediction;
// returns the timed steps of every probe.
std::vector<int64_t> RunToEnd(SchedulerTest& test, Scheduler& scheduler, const std::string& worker,
                              const std::string& search_name, double factor, double spread) {
  std::vector<int64_t> timed_steps;
  for (int probes = 0; probes < 500; ++probes) {
    absl::StatusOr<std::optional<v1::ProbeAssignment>> acquired = scheduler.TryAcquireProbe(worker);
    EXPECT_TRUE(acquired.ok()) << acquired.status();
    if (!acquired.ok() || !acquired->has_value()) break;
    const v1::ProbeAssignment& assignment = **acquired;
    timed_steps.push_back(assignment.timed_steps());
    v1::ReportProbeRequest report;
    report.set_worker(worker);
    report.set_probe(assignment.name());
    *report.mutable_result() =
        MeasuredAsPredicted(*scheduler.reader().GetSearch(search_name), assignment, factor, spread);
    EXPECT_TRUE(scheduler.ReportProbe(report).ok());
  }
  return timed_steps;
}

TEST_F(SchedulerTest, AdaptiveStopsBeforeProbingEverythingAndConfirmsCloseLeaders) {
  const std::string worker = Register(8);
  v1::CreateSearchRequest request = SmallSimSearch(0);
  request.mutable_spec()->set_policy(v1::ADAPTIVE);
  const v1::Search search = Create(request);

  // Every probe measures its prediction with 3% step-to-step noise: the leaders' short probes
  // cannot be told apart, so they are confirmed with 4 x 5 timed steps.
  const std::vector<int64_t> timed_steps =
      RunToEnd(*this, *scheduler_, worker, search.name(), 1.0, 0.03);
  const v1::Search done = Get(search.name());
  EXPECT_EQ(done.state(), v1::SUCCEEDED) << done.stop_reason();
  EXPECT_THAT(done.stop_reason(), HasSubstr("no unprobed candidate can beat the best measured"));
  EXPECT_LT(done.counts().selected(), done.counts().memory_safe());
  EXPECT_GE(done.counts().confirmations(), 1);
  EXPECT_EQ(std::count(timed_steps.begin(), timed_steps.end(), 20), done.counts().confirmations());
  EXPECT_EQ(done.counts().probed(), static_cast<int64_t>(timed_steps.size()));
  const v1::Candidate& best = done.candidates(0);
  EXPECT_TRUE(best.has_screening_result());
  EXPECT_EQ(best.probe_result().step_times_seconds_size(), 20);
  EXPECT_EQ(best.screening_result().step_times_seconds_size(), 5);
  EXPECT_GT(done.counts().gpu_seconds(), 0);
}

TEST_F(SchedulerTest, BudgetOfProbesEndsTheSearchAndSkipsTheRest) {
  const std::string worker = Register(8);
  v1::CreateSearchRequest request = SmallSimSearch(0);
  request.mutable_spec()->set_policy(v1::EXHAUSTIVE);
  request.mutable_spec()->mutable_budget()->set_max_probes(3);
  const v1::Search search = Create(request);
  RunToEnd(*this, *scheduler_, worker, search.name(), 1.0, 0);
  const v1::Search done = Get(search.name());
  EXPECT_EQ(done.state(), v1::SUCCEEDED);
  EXPECT_EQ(done.stop_reason(), "budget: max_probes (3) reached");
  EXPECT_EQ(done.counts().probed(), 3);
  int64_t skipped = 0;
  for (const v1::Candidate& candidate : done.candidates()) {
    skipped += candidate.state() == v1::CANDIDATE_SKIPPED;
  }
  EXPECT_EQ(skipped, done.counts().selected() - 3);
}

TEST_F(SchedulerTest, DeadlineStopsRunningProbesAndEndsTheSearch) {
  const std::string worker = Register(8);
  v1::CreateSearchRequest request = SmallSimSearch(3);
  request.mutable_spec()->mutable_budget()->set_deadline_seconds(10);
  const v1::Search search = Create(request);
  std::optional<v1::ProbeAssignment> running = Acquire(worker);
  ASSERT_TRUE(running.has_value());
  clock_.Advance(absl::Seconds(11));
  ASSERT_TRUE(Heartbeat(worker).ok());
  scheduler_->CheckLeases();
  const v1::Search done = Get(search.name());
  EXPECT_EQ(done.state(), v1::FAILED);
  EXPECT_EQ(done.stop_reason(), "budget: deadline (10s) passed");
  EXPECT_THAT(Heartbeat(worker, {running->name()})->cancel_probes(), ElementsAre(running->name()));
}

TEST_F(SchedulerTest, FailuresAreCountedByOutcome) {
  const std::string worker = Register(8);
  const v1::Search search = Create(SmallSimSearch(2));
  for (v1::ProbeOutcome outcome : {v1::PROBE_OUT_OF_MEMORY, v1::PROBE_TIMEOUT}) {
    std::optional<v1::ProbeAssignment> assignment = Acquire(worker);
    ASSERT_TRUE(assignment.has_value());
    ASSERT_TRUE(Report(worker, assignment->name(), FailedResult(outcome)).ok());
  }
  const v1::SearchCounts counts = Get(search.name()).counts();
  EXPECT_EQ(counts.failed(), 2);
  EXPECT_EQ(counts.failed_by_outcome().at("PROBE_OUT_OF_MEMORY"), 1);
  EXPECT_EQ(counts.failed_by_outcome().at("PROBE_TIMEOUT"), 1);
}

TEST_F(SchedulerTest, EventLogKeepsEveryChangeInPages) {
  const std::string worker = Register(8);
  const v1::Search search = Create(SmallSimSearch(2));
  for (int i = 0; i < 2; ++i) {
    std::optional<v1::ProbeAssignment> assignment = Acquire(worker);
    ASSERT_TRUE(assignment.has_value());
    ASSERT_TRUE(Report(worker, assignment->name(), OkResult(100 + i)).ok());
  }
  v1::ListSearchEventsRequest request;
  request.set_name(search.name());
  request.set_page_size(3);
  absl::StatusOr<v1::ListSearchEventsResponse> first =
      scheduler_->reader().ListSearchEvents(request);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->events_size(), 3);
  EXPECT_THAT(first->events(0).text(), HasSubstr("search created"));
  EXPECT_THAT(first->events(1).text(),
              HasSubstr("first candidates chosen; queued candidates/0 dp8 tp1 pp1 cp1 mbs8: "
                        "predicted rank 1, selected 1 of 2; queued candidates/1"));
  EXPECT_THAT(first->events(2).text(), HasSubstr("candidates/0 leased to workers/1"));
  ASSERT_FALSE(first->next_page_token().empty());
  request.set_page_token(first->next_page_token());
  absl::StatusOr<v1::ListSearchEventsResponse> rest =
      scheduler_->reader().ListSearchEvents(request);
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(rest->events_size(), 3);
  EXPECT_GT(rest->events(0).sequence(), first->events(2).sequence());
  EXPECT_THAT(rest->events(2).text(), HasSubstr("search succeeded"));
  EXPECT_TRUE(rest->next_page_token().empty());

  request.set_name("searches/99");
  request.clear_page_token();
  EXPECT_EQ(scheduler_->reader().ListSearchEvents(request).status().code(),
            absl::StatusCode::kNotFound);
}

// A scheduler over a database file, restarted as a killed server would be: everything it
// answered OK for is in the file.
class SchedulerRestartTest : public SchedulerTest {
 protected:
  SchedulerRestartTest() : path_(::testing::TempDir() + "/scheduler_restart.db") {
    RemoveFiles();
    Restart();
  }
  ~SchedulerRestartTest() override {
    scheduler_.reset();
    RemoveFiles();
  }

  void Restart() {
    scheduler_.reset();
    Scheduler::Options options;
    options.clock = &clock_;
    options.heartbeat_interval = absl::Seconds(2);
    absl::StatusOr<std::unique_ptr<SqliteSearchStore>> store = SqliteSearchStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
        Scheduler::Create(std::move(options), *std::move(store));
    ASSERT_TRUE(scheduler.ok()) << scheduler.status();
    scheduler_ = *std::move(scheduler);
  }

 private:
  void RemoveFiles() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path_ + suffix).c_str());
  }
  const std::string path_;
};

TEST_F(SchedulerRestartTest, ResumedSearchAcceptsReportsOfProbesLeasedBeforeAndFinishes) {
  const std::string worker = Register(8);
  const std::string other = Register(8);
  const v1::Search search = Create(SmallSimSearch(3));
  std::optional<v1::ProbeAssignment> before = Acquire(worker);
  ASSERT_TRUE(before.has_value());
  std::optional<v1::ProbeAssignment> reported = Acquire(other);
  ASSERT_TRUE(reported.has_value());
  ASSERT_TRUE(Report(other, reported->name(), OkResult(200)).ok());

  Restart();

  // The result reported before the restart is there; the probe leased before it is still
  // leased to its worker, whose report is accepted.
  v1::Search resumed = Get(search.name());
  EXPECT_EQ(resumed.state(), v1::PROBING);
  EXPECT_EQ(resumed.counts().succeeded(), 1);
  ASSERT_TRUE(Heartbeat(worker, {before->name()}).ok());
  EXPECT_THAT(Heartbeat(worker, {before->name()})->cancel_probes(), IsEmpty());
  ASSERT_TRUE(Report(worker, before->name(), OkResult(300)).ok());
  // The candidate still queued is handed out again.
  std::optional<v1::ProbeAssignment> after = Acquire(other);
  ASSERT_TRUE(after.has_value());
  ASSERT_TRUE(Report(other, after->name(), OkResult(100)).ok());

  const v1::Search done = Get(search.name());
  EXPECT_EQ(done.state(), v1::SUCCEEDED);
  EXPECT_EQ(done.counts().succeeded(), 3);
  EXPECT_DOUBLE_EQ(done.candidates(0).probe_result().model_tflops_per_gpu(), 300);
  v1::ListSearchEventsRequest events;
  events.set_name(search.name());
  events.set_page_size(1000);
  absl::StatusOr<v1::ListSearchEventsResponse> log = scheduler_->reader().ListSearchEvents(events);
  ASSERT_TRUE(log.ok()) << log.status();
  bool resumed_event = false;
  for (const v1::SearchEvent& event : log->events()) {
    resumed_event |= event.text() == "server restarted; search resumed";
  }
  EXPECT_TRUE(resumed_event);
}

TEST_F(SchedulerRestartTest, UndeliveredGangShareIsHandedOverAfterARestart) {
  const std::string a = Register(4);
  const std::string b = Register(4);
  Create(FullScopeSearch());
  std::optional<v1::ProbeAssignment> first = Acquire(a);
  ASSERT_TRUE(first.has_value());

  Restart();

  std::optional<v1::ProbeAssignment> second = Acquire(b);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->name(), first->name());
  EXPECT_EQ(second->gang_index(), 1);
}

TEST_F(SchedulerRestartTest, ProbeOfAWorkerThatNeverReturnsIsRequeued) {
  const std::string gone = Register(8);
  const v1::Search search = Create(SmallSimSearch(1));
  ASSERT_TRUE(Acquire(gone).has_value());

  Restart();
  const std::string fresh = Register(8);
  clock_.Advance(absl::Seconds(4));
  ASSERT_TRUE(Heartbeat(fresh).ok());
  clock_.Advance(absl::Seconds(3));
  scheduler_->CheckLeases();
  EXPECT_EQ(Get(search.name()).candidates(0).state(), v1::CANDIDATE_QUEUED);
  std::optional<v1::ProbeAssignment> retry = Acquire(fresh);
  ASSERT_TRUE(retry.has_value());
  EXPECT_THAT(retry->name(), HasSubstr("/probes/2"));
}

TEST_F(SchedulerRestartTest, AdaptiveSearchContinuesWhereItStopped) {
  const std::string worker = Register(8);
  v1::CreateSearchRequest request = SmallSimSearch(0);
  request.mutable_spec()->set_policy(v1::ADAPTIVE);
  const v1::Search search = Create(request);
  std::optional<v1::ProbeAssignment> first = Acquire(worker);
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(Report(worker, first->name(), MeasuredAsPredicted(search, *first, 1.0)).ok());
  const int64_t selected_before = Get(search.name()).counts().selected();

  Restart();

  // The policy was rebuilt from the stored results: it neither forgets the probed candidate
  // nor picks a queued one twice.
  EXPECT_EQ(Get(search.name()).counts().selected(), selected_before);
  RunToEnd(*this, *scheduler_, worker, search.name(), 1.0, 0);
  const v1::Search done = Get(search.name());
  EXPECT_EQ(done.state(), v1::SUCCEEDED) << done.stop_reason();
  std::set<std::string> configs;
  for (const v1::Candidate& candidate : done.candidates()) {
    EXPECT_TRUE(configs.insert(candidate.config().SerializeAsString()).second)
        << candidate.name() << " was selected twice";
  }
}

TEST_F(SchedulerRestartTest, WorkerIdsAreNotReusedAfterARestart) {
  EXPECT_EQ(Register(8), "workers/1");
  Restart();
  EXPECT_EQ(Register(8), "workers/2");
}

}  // namespace
}  // namespace paratune
