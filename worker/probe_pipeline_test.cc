#include "worker/probe_pipeline.h"

#include <thread>

#include "absl/synchronization/notification.h"
#include "common/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/fake_backend.h"

namespace paratune {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

v1::ProbeAssignment Assignment(const std::string& name, double deadline_seconds = 60) {
  return FakeAssignment(name, deadline_seconds);
}

// The fake backend, told to take `stop_grace` to stop.
class SlowToStopBackend : public FakeBackend {
 public:
  SlowToStopBackend(Options options, absl::Duration stop_grace)
      : FakeBackend(std::move(options)), stop_grace_(stop_grace) {}
  absl::Duration StopGrace(const ProbeSpec&) const override { return stop_grace_; }

 private:
  const absl::Duration stop_grace_;
};

// Runs `assignment` with `backend` on a thread, on `clock`.
class Running {
 public:
  Running(ProbeBackend& backend, v1::ProbeAssignment assignment, Clock& clock)
      : thread_([&backend, assignment = std::move(assignment), &clock, this] {
          result_ = RunProbe(backend, assignment, context_, clock);
        }) {}
  SoloProbeContext& context() { return context_; }
  v1::ProbeResult Join() {
    thread_.join();
    return result_;
  }

 private:
  SoloProbeContext context_;
  v1::ProbeResult result_;
  std::thread thread_;
};

TEST(ProbePipelineTest, AnOkRunBecomesItsResultTimedOnTheClock) {
  FakeClock clock;
  FakeBackend::Options options;
  options.clock = &clock;
  FakeBackend backend(options);
  SoloProbeContext context;
  const v1::ProbeResult result = RunProbe(backend, Assignment("ok"), context, clock);
  EXPECT_EQ(result.outcome(), v1::PROBE_OK) << result.message();
  EXPECT_EQ(result.backend(), "fake");
  EXPECT_EQ(result.step_times_seconds_size(), 3);
  EXPECT_DOUBLE_EQ(result.mean_step_time_seconds(), 1.0);
  // The fake's run took its one step time on the clock.
  EXPECT_EQ(result.wall_seconds(), 1.0);
}

TEST(ProbePipelineTest, AnAssignmentTheSpecRefusesNeverReachesTheBackend) {
  FakeBackend backend({});
  // The fake throws for this name; the spec refuses the configuration first.
  v1::ProbeAssignment assignment = Assignment("throw");
  assignment.mutable_config()->set_tensor_parallel(3);
  SoloProbeContext context;
  const v1::ProbeResult result = RunProbe(backend, assignment, context, *RealClock());
  EXPECT_EQ(result.outcome(), v1::PROBE_CRASH);
  EXPECT_THAT(result.message(), AllOf(HasSubstr("backend fake failed: INVALID_ARGUMENT: "),
                                      HasSubstr("config.tensor_parallel (3)")));
}

TEST(ProbePipelineTest, BackendErrorsAndExceptionsBecomeResults) {
  FakeBackend backend({});
  SoloProbeContext context;
  const v1::ProbeResult thrown = RunProbe(backend, Assignment("throw"), context, *RealClock());
  EXPECT_EQ(thrown.outcome(), v1::PROBE_CRASH);
  EXPECT_THAT(thrown.message(), HasSubstr("backend threw: boom"));
  const v1::ProbeResult error = RunProbe(backend, Assignment("error"), context, *RealClock());
  EXPECT_EQ(error.outcome(), v1::PROBE_INFRA_ERROR);
  EXPECT_THAT(error.message(), HasSubstr("driver went away"));
}

// The result of a probe of `backend` that hangs, when the worker tells it to stop `stop_at`
// after it started on a fake clock, which it must not do a second earlier.
v1::ProbeResult HangStoppedAt(ProbeBackend& backend, absl::Duration stop_at) {
  FakeClock clock;
  Running running(backend, Assignment("hang"), clock);
  // Waiting: the probe's stop.
  clock.BlockUntilWaiters(1);
  clock.Advance(stop_at - absl::Seconds(1));
  // A second short of it the stop still waits.
  clock.BlockUntilWaiters(1);
  clock.Advance(absl::Seconds(1));
  const v1::ProbeResult result = running.Join();
  EXPECT_TRUE(running.context().stop().HasBeenNotified());
  EXPECT_EQ(result.wall_seconds(), absl::ToDoubleSeconds(stop_at));
  return result;
}

TEST(ProbePipelineTest, TheDeadlineStopsAProbeStillRunning) {
  FakeBackend backend({});
  const v1::ProbeResult result = HangStoppedAt(backend, absl::Seconds(60));
  EXPECT_EQ(result.outcome(), v1::PROBE_TIMEOUT);
  EXPECT_EQ(result.message(),
            "the probe did not finish within its deadline of 60 s and was stopped: the fake probe "
            "hung until it was stopped");
}

TEST(ProbePipelineTest, ABackendIsToldToStopItsStopGraceBeforeTheDeadline) {
  SlowToStopBackend backend({}, absl::Seconds(5));
  const v1::ProbeResult result = HangStoppedAt(backend, absl::Seconds(55));
  EXPECT_EQ(result.outcome(), v1::PROBE_TIMEOUT);
  EXPECT_THAT(result.message(), HasSubstr("deadline of 60 s and was stopped 5s before it"));
}

TEST(ProbePipelineTest, ADeadlineWithinTheStopGraceLeavesNoTime) {
  SlowToStopBackend backend({}, absl::Seconds(5));
  SoloProbeContext context;
  const v1::ProbeResult result = RunProbe(backend, Assignment("ok", 5), context, *RealClock());
  EXPECT_EQ(result.outcome(), v1::PROBE_CRASH);
  EXPECT_THAT(result.message(),
              HasSubstr("INVALID_ARGUMENT: assignment.deadline_seconds (5) leaves no time to run: "
                        "the fake backend is told to stop a probe 5s before its deadline"));
}

TEST(ProbePipelineTest, WithoutADeadlineTheDefaultHolds) {
  FakeClock clock;
  FakeBackend backend({});
  Running running(backend, Assignment("hang", 0), clock);
  clock.BlockUntilWaiters(1);
  clock.Advance(kDefaultProbeDeadline);
  const v1::ProbeResult result = running.Join();
  EXPECT_EQ(result.outcome(), v1::PROBE_TIMEOUT);
  EXPECT_THAT(result.message(), HasSubstr("deadline of 600 s"));
}

TEST(ProbePipelineTest, AProbeTheCallerStopsIsAnInfrastructureError) {
  absl::Notification hang_started;
  FakeBackend::Options options;
  options.hang_started = &hang_started;
  FakeBackend backend(options);
  Running running(backend, Assignment("hang"), *RealClock());
  hang_started.WaitForNotification();
  running.context().Stop();
  const v1::ProbeResult result = running.Join();
  EXPECT_EQ(result.outcome(), v1::PROBE_INFRA_ERROR);
  EXPECT_THAT(result.message(), HasSubstr("CANCELLED: the fake probe hung until it was stopped"));
}

// A backend whose runs stand for `modelled_seconds` on real GPUs, as the sim's and the replay's.
class ModelledTimeBackend : public ProbeBackend {
 public:
  explicit ModelledTimeBackend(double modelled_seconds) : modelled_seconds_(modelled_seconds) {}
  std::string Name() const override { return "modelled"; }
  bool Deterministic() const override { return true; }
  absl::StatusOr<ProbeRun> Run(const ProbeSpec& spec, ProbeContext&) override {
    ProbeRun run;
    run.outcome = v1::PROBE_OK;
    run.source = FigureSource::kSimulated;
    run.detail = "a model";
    run.timed_steps.push_back({spec.micro_batches(), std::vector<double>(spec.timed_steps(), 1)});
    run.phases = StepPhases(spec, Provenance::kModelled);
    run.wall_time = Provenance::kModelled;
    run.wall_seconds = modelled_seconds_;
    run.wall_time_note = "30 s start-up and its steps";
    return run;
  }

 private:
  const double modelled_seconds_;
};

TEST(ProbePipelineTest, ARunModelledLongerThanItsDeadlineTimesOutAtIt) {
  ModelledTimeBackend backend(100);
  SoloProbeContext context;
  const v1::ProbeResult result = RunProbe(backend, Assignment("long", 60), context, *RealClock());
  EXPECT_EQ(result.outcome(), v1::PROBE_TIMEOUT);
  EXPECT_EQ(result.message(),
            "simulated: a model: it would take 100 s (30 s start-up and its steps), over its "
            "deadline of 60 s, so it was stopped there; wall_seconds (60 s) is modelled, not "
            "measured: its deadline");
  EXPECT_EQ(result.wall_seconds(), 60);
  EXPECT_TRUE(result.step_times_seconds().empty());
  EXPECT_THAT(result.modelled(), ::testing::ElementsAre("wall_time"));

  ModelledTimeBackend in_time(59);
  EXPECT_EQ(RunProbe(in_time, Assignment("short", 60), context, *RealClock()).outcome(),
            v1::PROBE_OK);
}

}  // namespace
}  // namespace paratune
