#include "worker/command_backend.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/backend_conformance.h"
#include "worker/probe/probe_spec.h"
#include "worker/probe/test_assignments.h"
#include "worker/probe_pipeline.h"

namespace paratune {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kFakeTraining[] = "worker/testdata/fake_training.sh";

// A Megatron-like launch of the fake training script; `extra` elements follow the common
// ones.
v1::CommandTemplate FakeTemplate(const std::string& name, std::vector<std::string> extra = {}) {
  v1::CommandTemplate launch;
  launch.set_name(name);
  for (const char* element :
       {kFakeTraining, "--train-iters={train_iters}", "--global-batch-size={gbs}", "--dp={dp}",
        "--tp={tp}", "--pp={pp}", "--cp={cp}", "--mbs={mbs}", "--num-layers={num_layers}",
        "--hidden-size={hidden_size}"}) {
    launch.add_argv(element);
  }
  for (std::string& element : extra) launch.add_argv(std::move(element));
  (*launch.mutable_env())["CUDA_VISIBLE_DEVICES"] = "{gpu_ids}";
  (*launch.mutable_env())["FAKE_MASTER"] = "{master_addr}:{master_port}";
  launch.set_kill_grace_seconds(0.5);
  return launch;
}

// FakeTemplate run by a shell that first appends the launch's {gbs} to the file `record`, so
// that a test sees which launches ran.
v1::CommandTemplate RecordingTemplate(const std::string& record,
                                      std::vector<std::string> extra = {}) {
  const v1::CommandTemplate fake = FakeTemplate("fake", std::move(extra));
  v1::CommandTemplate launch = fake;
  launch.clear_argv();
  for (const char* element : {"/bin/sh", "-c", "echo {gbs} >> \"$LAUNCHES\"; exec \"$0\" \"$@\""}) {
    launch.add_argv(element);
  }
  for (const std::string& element : fake.argv()) launch.add_argv(element);
  (*launch.mutable_env())["LAUNCHES"] = record;
  return launch;
}

// The lines of `file`, the {gbs} of each launch that RecordingTemplate ran.
std::vector<std::string> Lines(const std::string& file) {
  std::vector<std::string> lines;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string TempFile(const std::string& name) {
  return absl::StrCat(getenv("TEST_TMPDIR"), "/", name);
}

// `launch` without its argv element `element`.
v1::CommandTemplate Without(v1::CommandTemplate launch, const std::string& element) {
  auto& argv = *launch.mutable_argv();
  argv.erase(std::remove(argv.begin(), argv.end(), element), argv.end());
  return launch;
}

v1::WorkerConfig Config(std::vector<v1::CommandTemplate> launches) {
  v1::WorkerConfig config;
  for (v1::CommandTemplate& launch : launches) *config.add_command_templates() = launch;
  return config;
}

std::unique_ptr<CommandBackend> MakeBackend(const v1::WorkerConfig& config) {
  absl::StatusOr<std::unique_ptr<CommandBackend>> backend = CommandBackend::Create(config);
  EXPECT_TRUE(backend.ok()) << backend.status();
  return backend.ok() ? *std::move(backend) : nullptr;
}

// The conformance suite's probe, as the scheduler hands it to one worker holding all 8 ranks.
v1::ProbeAssignment Assignment(const std::string& launch = "fake") {
  v1::ProbeAssignment assignment = SmallConformanceAssignment();
  assignment.set_backend("command");
  assignment.set_command_template(launch);
  return assignment;
}

// Assignment() with short steps of 2 and 4 micro-batches: its full step has 64 / (8 x 1) = 8.
v1::ProbeAssignment ShortStepAssignment() {
  v1::ProbeAssignment assignment = Assignment();
  assignment.add_micro_batch_counts(2);
  assignment.add_micro_batch_counts(4);
  return assignment;
}

// Assignment() as gang[gang_index] of two 8-GPU workers holding dp16, global batch 128 (8
// micro-batches per step), with short steps of 2 and 4 micro-batches.
v1::ProbeAssignment GangAssignment(int gang_index) {
  v1::ProbeAssignment assignment = ShortStepAssignment();
  assignment.set_num_ranks(16);
  assignment.mutable_config()->set_data_parallel(16);
  assignment.mutable_training()->set_global_batch_size(128);
  assignment.mutable_cluster()->set_num_nodes(2);
  v1::GangMember& second = *assignment.add_gang();
  second.set_worker("workers/2");
  second.set_hostname("gpu-node-1");
  second.set_first_rank(8);
  second.set_num_ranks(8);
  assignment.set_gang_index(gang_index);
  return assignment;
}

// Iterations of the conformance runnable take 50 ms of wall time, so that it can be
// cancelled while it runs; Llama-3.1-70B unsharded is too large for the script's memory.
INSTANTIATE_TEST_SUITE_P(Command, BackendConformanceTest,
                         ::testing::Values(BackendConformanceParam{
                             "command",
                             [] {
                               return MakeBackend(Config(
                                   {FakeTemplate("fake", {"--seconds-per-iteration=0.05"})}));
                             },
                             Assignment()}),
                         BackendConformanceParamName);

// The backend's own run of `assignment` with the template `launch`.
absl::StatusOr<ProbeRun> RunBackend(const v1::CommandTemplate& launch,
                                    const v1::ProbeAssignment& assignment) {
  std::unique_ptr<CommandBackend> backend = MakeBackend(Config({launch}));
  if (backend == nullptr) return absl::InternalError("no backend");
  SoloProbeContext context;
  return backend->Run(SpecOf(assignment), context);
}

// The result the worker makes of it, under the probe's deadline.
v1::ProbeResult Result(ProbeBackend& backend, const v1::ProbeAssignment& assignment,
                       ProbeContext& context) {
  return RunProbe(backend, assignment, context, *RealClock());
}

v1::ProbeResult Result(const v1::CommandTemplate& launch,
                       const v1::ProbeAssignment& assignment = Assignment()) {
  std::unique_ptr<CommandBackend> backend = MakeBackend(Config({launch}));
  if (backend == nullptr) return v1::ProbeResult();
  SoloProbeContext context;
  return Result(*backend, assignment, context);
}

TEST(CommandBackendTest, AnOkRunReportsItsTimedStepsAndPeakMemory) {
  const v1::ProbeResult result = Result(FakeTemplate("fake"));
  ASSERT_EQ(result.outcome(), v1::PROBE_OK) << result.message();
  // tp pp cp mbs 1, 8 micro-batches per step: iteration i logs 165 + 2 x 8 + i ms; iteration 1
  // is the warm-up.
  EXPECT_THAT(result.step_times_seconds(),
              ElementsAre(DoubleNear(0.183, 1e-12), DoubleNear(0.184, 1e-12),
                          DoubleNear(0.185, 1e-12), DoubleNear(0.186, 1e-12)));
  EXPECT_NEAR(result.mean_step_time_seconds(), 0.1845, 1e-12);
  EXPECT_NEAR(result.tokens_per_second(), 64 * 2048 / 0.1845, 1e-6);
  EXPECT_TRUE(result.short_steps().empty());
  EXPECT_TRUE(result.extrapolated().empty());
  // 18 bytes x 12 x 16 layers x 2048^2 = 13,824 MiB of states; the log's max reserved adds 1,024.
  EXPECT_EQ(result.peak_memory_bytes(), (13824LL + 1024) * 1024 * 1024);
  EXPECT_FALSE(result.simulated());
  EXPECT_EQ(result.backend(), "command");
  EXPECT_THAT(result.measured(), ElementsAre("gemm", "attention", "elementwise", "dp_collectives",
                                             "optimizer", "peak_memory"));
  EXPECT_TRUE(result.modelled().empty());
  EXPECT_THAT(result.message(),
              AllOf(HasSubstr("measured: template \"fake\", ranks 0-7 of 8 on node 0 of 1: mean "
                              "step time 0.1845 s over 4 timed steps (CV 0.70%), "),
                    HasSubstr("; 1 warm-up iterations dropped from the launch; start-up "),
                    HasSubstr("; peak memory 14.50 GiB measured on this node")));
}

// A stand-in for TorchTitan's trainer: a shell run as "torchtitan.train" (its $0, the
// template's framework entry, which makes the backend read TorchTitan's metrics line) that
// logs `line` for each of its --training.steps, with the step's number in place of "STEP".
v1::CommandTemplate TorchTitanTemplate(const std::string& line) {
  v1::CommandTemplate launch;
  launch.set_name("fake");  // the name Assignment() asks for
  for (const std::string& element :
       {std::string("/bin/sh"), std::string("-c"),
        absl::StrCat("n=$(echo \"$2\" | cut -d= -f2); i=1; while [ $i -le $n ]; do echo \"", line,
                     "\" | sed \"s/STEP/$i/\"; i=$((i+1)); done"),
        std::string("torchtitan.train"), std::string("--training.global_batch_size={gbs}"),
        std::string("--training.steps={train_iters}")}) {
    launch.add_argv(element);
  }
  launch.set_framework_entry("torchtitan.train");
  return launch;
}

TEST(CommandBackendTest, TorchTitanStepsAreItsTokensPerGpuOverTps) {
  const v1::ProbeResult result = Result(TorchTitanTemplate(
      "[rank0]:[titan] 2026-11-29 08:00:00,000 - root - INFO - step: STEP  loss:  7.00000  "
      "grad_norm:  1.0000  memory: 12.50GiB(15.00%)  tps: 8,192  tflops: 1.00  mfu: 0.10%"));
  ASSERT_EQ(result.outcome(), v1::PROBE_OK) << result.message();
  // 8 micro-batches of 1 x 2048 tokens per GPU (tp pp cp 1) at 8,192 tokens/s per GPU.
  EXPECT_THAT(result.step_times_seconds(), ElementsAre(2.0, 2.0, 2.0, 2.0));
  EXPECT_EQ(result.peak_memory_bytes(), 12.5 * 1024 * 1024 * 1024);
}

TEST(CommandBackendTest, ACutTorchTitanMetricsLineIsACrashSayingWhatIsMissing) {
  const v1::ProbeResult result = Result(TorchTitanTemplate(
      "[titan] 2026-11-29 08:00:00,000 - root - INFO - step: STEP  loss:  7.00000  "
      "grad_norm:  1.0000  memory: 12.50GiB(15.00%)"));
  EXPECT_EQ(result.outcome(), v1::PROBE_CRASH);
  EXPECT_THAT(result.message(),
              HasSubstr("exited with code 0 but a step line could not be read: TorchTitan "
                        "metrics line of step 1 has no tps (cut short?)"));
}

TEST(CommandBackendTest, ExtraWarmupIterationsAreRunAndDropped) {
  v1::CommandTemplate launch = FakeTemplate("fake");
  launch.set_extra_warmup_iterations(2);
  const v1::ProbeResult result = Result(launch);
  ASSERT_EQ(result.outcome(), v1::PROBE_OK) << result.message();
  EXPECT_THAT(result.step_times_seconds(),
              ElementsAre(DoubleNear(0.185, 1e-12), DoubleNear(0.186, 1e-12),
                          DoubleNear(0.187, 1e-12), DoubleNear(0.188, 1e-12)));
}

TEST(CommandBackendTest, ShortStepsRunOneLaunchPerCountAndAreExtrapolated) {
  const std::string record = TempFile("short_steps_launches");
  const v1::ProbeResult result = Result(RecordingTemplate(record), ShortStepAssignment());
  ASSERT_EQ(result.outcome(), v1::PROBE_OK) << result.message();
  // 2 and 4 micro-batches of 1 on each of 8 replicas.
  EXPECT_THAT(Lines(record), ElementsAre("16", "32"));
  // Each launch has its own warm-up: iterations 2 to 5 of 165 + 2 m + i ms are timed.
  ASSERT_EQ(result.short_steps_size(), 2);
  EXPECT_EQ(result.short_steps(0).micro_batches(), 2);
  EXPECT_THAT(result.short_steps(0).step_times_seconds(),
              ElementsAre(DoubleNear(0.171, 1e-12), DoubleNear(0.172, 1e-12),
                          DoubleNear(0.173, 1e-12), DoubleNear(0.174, 1e-12)));
  EXPECT_EQ(result.short_steps(1).micro_batches(), 4);
  EXPECT_THAT(result.short_steps(1).step_times_seconds(),
              ElementsAre(DoubleNear(0.175, 1e-12), DoubleNear(0.176, 1e-12),
                          DoubleNear(0.177, 1e-12), DoubleNear(0.178, 1e-12)));
  // The line through them is the script's: 2 ms per micro-batch, so the full step of 8 takes
  // 165 + 16 + i ms, as a launch of full steps logs it.
  EXPECT_EQ(result.extrapolation().full_micro_batches(), 8);
  EXPECT_NEAR(result.extrapolation().slot_seconds(), 0.002, 1e-9);
  EXPECT_THAT(result.extrapolated(), ElementsAre("full_step"));
  EXPECT_THAT(result.step_times_seconds(),
              ElementsAre(DoubleNear(0.183, 1e-9), DoubleNear(0.184, 1e-9), DoubleNear(0.185, 1e-9),
                          DoubleNear(0.186, 1e-9)));
  EXPECT_NEAR(result.mean_step_time_seconds(), 0.1845, 1e-9);
  EXPECT_THAT(result.message(),
              AllOf(HasSubstr("measured: template \"fake\", ranks 0-7 of 8 on node 0 of 1: mean "
                              "step time 0.1845 s, the full step of 8 micro-batches extrapolated "
                              "from 4 timed steps at each of 2 and 4 micro-batches per step"),
                    HasSubstr("1 warm-up iterations dropped from each launch"),
                    HasSubstr("over 2 launches (wall time less logged steps)")));
}

TEST(CommandBackendTest, StartUpIsEachLaunchsWallTimeLessItsLoggedSteps) {
  const v1::ProbeResult result =
      Result(FakeTemplate("fake", {"--startup-seconds=1"}), ShortStepAssignment());
  ASSERT_EQ(result.outcome(), v1::PROBE_OK) << result.message();
  // Each launch sleeps 1 s before its steps and takes at least that; it logs 5 steps of
  // 169 + i ms (2 micro-batches), then of 173 + i ms (4).
  const double logged = 0.845 + 0.015 + 0.865 + 0.015;
  EXPECT_GE(result.startup_seconds(), 2 - logged - 1e-9);
  EXPECT_LE(result.startup_seconds(), result.wall_seconds());
  EXPECT_THAT(result.message(), HasSubstr(" over 2 launches (wall time less logged steps)"));
}

TEST(CommandBackendTest, AFailedLaunchEndsTheProbeNamingIt) {
  const std::string record = TempFile("failed_launches");
  v1::ProbeAssignment assignment = ShortStepAssignment();
  assignment.add_micro_batch_counts(6);
  // Only the launch of 4 micro-batches per step (global batch 32) fails.
  const v1::ProbeResult result =
      Result(RecordingTemplate(record, {"{?gbs=32}--fail=exit-code"}), assignment);
  EXPECT_EQ(result.outcome(), v1::PROBE_CRASH) << result.message();
  EXPECT_THAT(result.message(),
              AllOf(HasSubstr("template \"fake\", ranks 0-7 of 8 on node 0 of 1: launch 2 of 3 "
                              "(4 micro-batches per step): the run exited with code 3 after "
                              "logging 1 of 5 step times"),
                    HasSubstr("global batch size: 32")));
  EXPECT_THAT(Lines(record), ElementsAre("16", "32"));  // the third launch never ran
  EXPECT_TRUE(result.step_times_seconds().empty());
  EXPECT_TRUE(result.short_steps().empty());
  EXPECT_EQ(result.startup_seconds(), 0);
}

TEST(CommandBackendTest, TheDeadlineBoundsAllLaunchesTogether) {
  // Each launch takes 5 x 0.3 s and would fit in the 2.25 s the deadline leaves before the
  // kill grace; the second gets only what the first left.
  v1::ProbeAssignment assignment = ShortStepAssignment();
  assignment.set_deadline_seconds(2.75);
  const v1::ProbeResult result =
      Result(FakeTemplate("fake", {"--seconds-per-iteration=0.3"}), assignment);
  EXPECT_EQ(result.outcome(), v1::PROBE_TIMEOUT) << result.message();
  EXPECT_THAT(result.message(),
              AllOf(HasSubstr("the probe did not finish within its deadline of 2.75 s and was "
                              "stopped 500ms before it: template \"fake\""),
                    HasSubstr("launch 2 of 2 (4 micro-batches per step): the run was stopped, "
                              "after logging")));
}

TEST(CommandBackendTest, EachFailureIsClassified) {
  const struct {
    const char* fail;
    v1::ProbeOutcome outcome;
    const char* message;
  } cases[] = {
      {"oom", v1::PROBE_OUT_OF_MEMORY, "out of memory: \"[rank0]: torch.OutOfMemoryError: CUDA"},
      {"nccl", v1::PROBE_CRASH, "NCCL error: \"torch.distributed.DistBackendError: NCCL error"},
      {"segfault", v1::PROBE_CRASH, "killed by signal 11 (Segmentation fault) after logging 1"},
      {"exit-code", v1::PROBE_CRASH, "exited with code 3 after logging 1 of 5 step times"},
      {"exit-early", v1::PROBE_CRASH, "exited with code 0 but logged only 1 of the 5"},
  };
  for (const auto& c : cases) {
    const v1::ProbeResult result = Result(FakeTemplate("fake", {absl::StrCat("--fail=", c.fail)}));
    EXPECT_EQ(result.outcome(), c.outcome) << c.fail << ": " << result.message();
    EXPECT_THAT(result.message(), HasSubstr(c.message)) << c.fail;
    EXPECT_TRUE(result.step_times_seconds().empty()) << c.fail;
  }
}

TEST(CommandBackendTest, TheOutputsLastLinesShowTheRenderedEnvironment) {
  const v1::ProbeResult result = Result(FakeTemplate("fake", {"--fail=exit-code"}));
  EXPECT_THAT(result.message(),
              AllOf(HasSubstr("last lines of stderr:\nTraceback (most recent call last): "
                              "RuntimeError: something else broke"),
                    HasSubstr("CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 MASTER=localhost:")));
}

TEST(CommandBackendTest, AHangIsStoppedTheKillGraceBeforeTheDeadline) {
  v1::ProbeAssignment assignment = Assignment();
  assignment.set_deadline_seconds(1.5);
  const v1::ProbeResult result = Result(FakeTemplate("fake", {"--fail=hang"}), assignment);
  EXPECT_EQ(result.outcome(), v1::PROBE_TIMEOUT) << result.message();
  EXPECT_THAT(result.message(),
              AllOf(HasSubstr("deadline of 1.5 s and was stopped 500ms before it"),
                    HasSubstr("the run was stopped, after logging 2 of 5 step times")));
}

TEST(CommandBackendTest, TheTemplatesTimeoutCapsTheDeadline) {
  v1::CommandTemplate launch = FakeTemplate("fake", {"--fail=hang"});
  launch.set_timeout_seconds(0.5);
  const v1::ProbeResult result = Result(launch);
  EXPECT_EQ(result.outcome(), v1::PROBE_TIMEOUT) << result.message();
  EXPECT_THAT(result.message(), HasSubstr("timed out after 500ms"));
}

TEST(CommandBackendTest, AReplicaProbeDoesNotClaimDataParallelTraffic) {
  // Unsharded: the framework would shard a sharded configuration over the one replica's ranks
  // alone, and launch/launch_values.h refuses such a probe.
  v1::ProbeAssignment assignment = Assignment();
  assignment.mutable_config()->set_dp_sharding(v1::DP_SHARDING_NONE);
  const v1::ProbeResult result = Result(FakeTemplate("fake"), AsReplicaProbe(assignment));
  ASSERT_EQ(result.outcome(), v1::PROBE_OK) << result.message();
  EXPECT_THAT(result.measured(), Not(Contains("dp_collectives")));
  EXPECT_THAT(result.message(),
              HasSubstr("replica scope: 1 of the configuration's 8 data-parallel replicas"));
}

TEST(CommandBackendTest, ACancelledRunIsStoppedAndReportsCancelled) {
  // The run tells the test it has started through a named pipe, then waits to be stopped.
  const std::string fifo = absl::StrCat(getenv("TEST_TMPDIR"), "/started");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  v1::CommandTemplate launch;
  launch.set_name("waits");
  for (const char* element : {"/bin/sh", "-c", "echo started > \"$STARTED\"; exec sleep 600"}) {
    launch.add_argv(element);
  }
  (*launch.mutable_env())["STARTED"] = fifo;
  (*launch.mutable_env())["GLOBAL_BATCH"] = "{gbs}";
  (*launch.mutable_env())["TRAIN_ITERS"] = "{train_iters}";
  std::unique_ptr<CommandBackend> backend = MakeBackend(Config({launch}));
  ASSERT_NE(backend, nullptr);
  SoloProbeContext context;
  absl::StatusOr<ProbeRun> result;
  std::thread runner([&] { result = backend->Run(SpecOf(Assignment("waits")), context); });
  std::ifstream started(fifo);
  std::string line;
  std::getline(started, line);
  EXPECT_EQ(line, "started");
  context.Stop();
  runner.join();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled) << result.status();
}

// Rendezvous answers with a fixed token, as the scheduler would relay gang[0]'s, after
// `delay` (a slow gang).
class RelayedPortContext : public SoloProbeContext {
 public:
  explicit RelayedPortContext(std::string relayed, absl::Duration delay = absl::ZeroDuration())
      : relayed_(std::move(relayed)), delay_(delay) {}
  absl::StatusOr<std::string> Rendezvous(const std::string& token) override {
    sent_ = token;
    absl::SleepFor(delay_);
    return relayed_;
  }
  const std::string& sent() const { return sent_; }

 private:
  const std::string relayed_;
  const absl::Duration delay_;
  std::string sent_;
};

TEST(CommandBackendTest, GangMembersTakeTheMasterPortGangZeroSends) {
  v1::ProbeAssignment assignment = Assignment();
  assignment.set_num_ranks(16);
  assignment.mutable_config()->set_data_parallel(16);
  assignment.mutable_cluster()->set_num_nodes(2);
  v1::GangMember& second = *assignment.add_gang();
  second.set_worker("workers/2");
  second.set_hostname("gpu-node-1");
  second.set_first_rank(8);
  second.set_num_ranks(8);
  assignment.set_gang_index(1);
  std::unique_ptr<CommandBackend> backend =
      MakeBackend(Config({FakeTemplate("fake", {"--fail=exit-code"})}));
  ASSERT_NE(backend, nullptr);
  RelayedPortContext context("29555");
  v1::ProbeResult result = Result(*backend, assignment, context);
  EXPECT_EQ(context.sent(), "");  // only gang[0] sends
  EXPECT_THAT(result.message(), AllOf(HasSubstr("ranks 8-15 of 16 on node 1 of 2"),
                                      HasSubstr("MASTER=localhost:29555")));

  assignment.set_gang_index(0);
  result = Result(*backend, assignment, context);
  int sent_port = 0;
  EXPECT_TRUE(absl::SimpleAtoi(context.sent(), &sent_port)) << context.sent();
  EXPECT_GT(sent_port, 0);
}

TEST(CommandBackendTest, TheRendezvousTokenCarriesOnePortPerLaunch) {
  // Only the second launch (4 micro-batches of 1 on 16 replicas) fails, showing its port.
  std::unique_ptr<CommandBackend> backend =
      MakeBackend(Config({FakeTemplate("fake", {"{?gbs=64}--fail=exit-code"})}));
  ASSERT_NE(backend, nullptr);
  RelayedPortContext context("29555,29556");
  v1::ProbeResult result = Result(*backend, GangAssignment(0), context);
  const std::vector<std::string> sent = absl::StrSplit(context.sent(), ',');
  ASSERT_EQ(sent.size(), 2u) << context.sent();
  for (const std::string& port : sent) {
    int number = 0;
    EXPECT_TRUE(absl::SimpleAtoi(port, &number) && number > 0) << context.sent();
  }
  EXPECT_THAT(result.message(), AllOf(HasSubstr("launch 2 of 2 (4 micro-batches per step)"),
                                      HasSubstr("MASTER=localhost:29556")));

  result = Result(*backend, GangAssignment(1), context);
  EXPECT_EQ(context.sent(), "");
  EXPECT_THAT(result.message(), HasSubstr("MASTER=localhost:29556"));

  RelayedPortContext one_port("29555");
  EXPECT_EQ(backend->Run(SpecOf(GangAssignment(1)), one_port).status(),
            absl::InternalError("the rendezvous token (\"29555\") is not 2 comma-separated "
                                "ports, one per launch"));
}

TEST(CommandBackendTest, ASlowRendezvousCanLeaveNoTimeToLaunch) {
  v1::ProbeAssignment assignment = GangAssignment(1);
  assignment.set_deadline_seconds(1);
  RelayedPortContext slow("29555,29556", absl::Milliseconds(600));
  std::unique_ptr<CommandBackend> backend = MakeBackend(Config({FakeTemplate("fake")}));
  ASSERT_NE(backend, nullptr);
  const v1::ProbeResult result = Result(*backend, assignment, slow);
  EXPECT_EQ(result.outcome(), v1::PROBE_TIMEOUT);
  EXPECT_THAT(result.message(),
              HasSubstr("deadline of 1 s and was stopped 500ms before it: template \"fake\", "
                        "ranks 8-15 of 16 on node 1 of 2: launch 1 of 2 (2 micro-batches per "
                        "step): not started, the probe was stopped"));
}

TEST(CommandBackendTest, AGangMemberLogsStepTimesInEveryLaunchOrInNone) {
  RelayedPortContext context("29555,29556");
  // Like Megatron-LM, the script logs step times on the last node only.
  std::unique_ptr<CommandBackend> untimed =
      MakeBackend(Config({FakeTemplate("fake", {"--nnodes={nnodes}"})}));
  ASSERT_NE(untimed, nullptr);
  v1::ProbeResult result = Result(*untimed, GangAssignment(0), context);
  EXPECT_EQ(result.outcome(), v1::PROBE_OK) << result.message();
  EXPECT_TRUE(result.step_times_seconds().empty());
  // It timed no step: it labels no phase, only the peak memory its node logged.
  EXPECT_THAT(result.measured(), ElementsAre("peak_memory"));
  EXPECT_EQ(result.startup_seconds(), 0);
  EXPECT_THAT(result.message(),
              HasSubstr("without logging step times (another node of the gang times the "
                        "steps), in each of its 2 launches"));

  // The first launch (global batch 32) logs as the last node would, the second does not.
  std::unique_ptr<CommandBackend> mixed =
      MakeBackend(Config({FakeTemplate("fake", {"--nnodes={nnodes}", "{?gbs=32}--node-rank=1"})}));
  ASSERT_NE(mixed, nullptr);
  result = Result(*mixed, GangAssignment(0), context);
  EXPECT_EQ(result.outcome(), v1::PROBE_CRASH);
  EXPECT_THAT(result.message(),
              HasSubstr("launch 2 of 2 (4 micro-batches per step): logged no step times, but "
                        "launch 1 did"));
}

TEST(CommandBackendTest, ProbesItCannotRunAreErrorsNamingWhy) {
  EXPECT_EQ(RunBackend(FakeTemplate("fake"), Assignment("other")).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_THAT(RunBackend(FakeTemplate("fake"), Assignment("other")).status().message(),
              HasSubstr("this worker's config defines no template \"other\""));
  EXPECT_THAT(RunBackend(FakeTemplate("fake"), Assignment("")).status().message(),
              HasSubstr("assignment.command_template (\"\")"));

  v1::ProbeAssignment short_deadline = Assignment();
  short_deadline.set_deadline_seconds(0.5);
  const v1::ProbeResult refused = Result(FakeTemplate("fake"), short_deadline);
  EXPECT_EQ(refused.outcome(), v1::PROBE_CRASH);
  EXPECT_THAT(refused.message(),
              HasSubstr("INVALID_ARGUMENT: assignment.deadline_seconds (0.5) leaves no time to "
                        "run: the command backend is told to stop a probe 500ms before its "
                        "deadline, to be gone by it"));

  v1::CommandTemplate missing = FakeTemplate("fake");
  missing.set_argv(0, "worker/testdata/no_such_program");
  const absl::Status not_started = RunBackend(missing, Assignment()).status();
  EXPECT_EQ(not_started.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(not_started.message(),
              HasSubstr("template \"fake\": cannot start \"worker/testdata/no_such_program\""));
}

TEST(CommandBackendTest, ASwitchTheTemplateNeverMentionsIsRefused) {
  v1::ProbeAssignment fp8 = Assignment();
  fp8.mutable_training()->set_precision(v1::FP8);
  EXPECT_EQ(RunBackend(FakeTemplate("fake"), fp8).status(),
            absl::InvalidArgumentError(
                "template \"fake\" never mentions {fp8}, so it cannot run this probe's fp8 "
                "(true): the framework would run its default (false) instead; add an element "
                "for it to the template (docs/backends.md)"));
  // A condition on the switch is enough: the template decides what the framework is told.
  EXPECT_EQ(Result(FakeTemplate("fake", {"{?fp8=true}--fp8-format=hybrid"}), fp8).outcome(),
            v1::PROBE_OK);

  // cp_comm_type matters only with context parallelism.
  v1::ProbeAssignment all_gather = Assignment();
  all_gather.mutable_training()->set_cp_comm_type(v1::CP_COMM_TYPE_ALL_GATHER);
  EXPECT_EQ(Result(FakeTemplate("fake"), all_gather).outcome(), v1::PROBE_OK);
  all_gather.mutable_config()->set_data_parallel(4);
  all_gather.mutable_config()->set_context_parallel(2);
  EXPECT_THAT(RunBackend(FakeTemplate("fake"), all_gather).status().message(),
              HasSubstr("never mentions {cp_comm_type}, so it cannot run this probe's "
                        "cp_comm_type (all_gather)"));
  EXPECT_EQ(
      Result(FakeTemplate("fake", {"{?cp!=1}--cp-comm-type={cp_comm_type}"}), all_gather).outcome(),
      v1::PROBE_OK);
}

TEST(CommandBackendTest, AShardingTheTemplateCannotStateIsRefused) {
  v1::ProbeAssignment full = Assignment();  // dp8
  full.mutable_config()->set_dp_sharding(v1::DP_SHARDING_FULL);
  // Only {dp_sharding} tells sharded weights from the distributed optimizer.
  const std::vector<std::string> optimizer_only = {
      "{?distributed_optimizer=true}--use-distributed-optimizer"};
  EXPECT_EQ(RunBackend(FakeTemplate("fake", optimizer_only), full).status(),
            absl::InvalidArgumentError(
                "template \"fake\" never mentions {dp_sharding}, so it cannot run this probe's "
                "dp_sharding (full): the framework would shard the optimizer states alone, or "
                "nothing; add elements for it to the template (docs/backends.md)"));
  std::vector<std::string> fsdp = optimizer_only;
  fsdp.push_back("{?dp_sharding=full}--use-megatron-fsdp");
  EXPECT_EQ(Result(FakeTemplate("fake", fsdp), full).outcome(), v1::PROBE_OK);

  // Hybrid sharding in groups of 4 of the 8 ranks: two replicas of each shard.
  full.mutable_config()->set_dp_shard_group(4);
  EXPECT_THAT(RunBackend(FakeTemplate("fake", fsdp), full).status().message(),
              HasSubstr("never mentions {distributed_optimizer_instances} or {dp_replicate}, "
                        "so it cannot run this probe's 2 replicas of sharded groups"));
  fsdp.push_back(
      "{?distributed_optimizer_instances!=1}--num-distributed-optimizer-instances="
      "{distributed_optimizer_instances}");
  EXPECT_EQ(Result(FakeTemplate("fake", fsdp), full).outcome(), v1::PROBE_OK);
  // The distributed optimizer and plain data parallelism need neither.
  EXPECT_EQ(Result(FakeTemplate("fake", optimizer_only), Assignment()).outcome(), v1::PROBE_OK);
  v1::ProbeAssignment replicated = Assignment();
  replicated.mutable_config()->set_dp_sharding(v1::DP_SHARDING_NONE);
  EXPECT_EQ(Result(FakeTemplate("fake", optimizer_only), replicated).outcome(), v1::PROBE_OK);
}

TEST(CommandBackendTest, AMixtureOfExpertsProbeNeedsATemplateThatStatesItsExperts) {
  // Qwen3-30B-A3B: small enough for the fake's memory model on dp8.
  v1::ProbeAssignment qwen = Assignment();
  qwen.mutable_model()->set_preset("qwen3-30b-a3b");
  // Without {moe} the framework would run a dense model.
  EXPECT_THAT(RunBackend(FakeTemplate("fake"), qwen).status().message(),
              HasSubstr("never mentions {moe}, so it cannot run this probe's moe (true)"));
  // Then the routing the search asked for, where it is not the framework's default.
  const std::vector<std::string> experts = {"{?moe=true}--num-experts={num_experts}"};
  EXPECT_THAT(RunBackend(FakeTemplate("fake", experts), qwen).status().message(),
              HasSubstr("never mentions {moe_grouped_gemm}"));
  std::vector<std::string> routed = experts;
  routed.push_back("{?moe_grouped_gemm=true}--moe-grouped-gemm");
  EXPECT_THAT(RunBackend(FakeTemplate("fake", routed), qwen).status().message(),
              HasSubstr("never mentions {moe_token_dispatcher}, so it cannot run this probe's "
                        "moe_token_dispatcher (alltoall)"));
  routed.push_back("{?moe=true}--moe-token-dispatcher-type={moe_token_dispatcher}");
  EXPECT_EQ(Result(FakeTemplate("fake", routed), qwen).outcome(), v1::PROBE_OK);
  // Llama 4 Maverick keeps every other layer dense: only the layer pattern can say so.
  v1::ProbeAssignment maverick = qwen;
  maverick.mutable_model()->set_preset("llama4-maverick");
  maverick.mutable_config()->set_data_parallel(2);
  maverick.mutable_config()->set_tensor_parallel(4);
  EXPECT_THAT(RunBackend(FakeTemplate("fake", routed), maverick).status().message(),
              HasSubstr("never mentions {moe_layer_pattern}, so it cannot run this probe's "
                        "moe_dense_layers (true)"));
  routed.push_back("{?moe=true}--moe-layer-freq=[{moe_layer_pattern}]");
  EXPECT_EQ(Result(FakeTemplate("fake", routed), maverick).outcome(), v1::PROBE_OK);
  // A dense probe needs none of them.
  EXPECT_EQ(Result(FakeTemplate("fake"), Assignment()).outcome(), v1::PROBE_OK);
}

TEST(CommandBackendTest, BadConfigsAreRejectedNamingTheField) {
  const struct {
    v1::WorkerConfig config;
    const char* error;
  } cases[] = {
      {v1::WorkerConfig(), "command_templates (0 templates) must define 1 to 64"},
      {Config({FakeTemplate("a"), FakeTemplate("a")}),
       "command_templates[1].name (\"a\") is defined twice"},
      {Config({FakeTemplate("bash -c x")}), "command_templates[0].name (\"bash -c x\") must be"},
      {Config({FakeTemplate("a", {"--x={tpp}"})}),
       "command_templates[0].argv[10] (\"--x={tpp}\"): unknown placeholder {tpp}"},
      {Config({FakeTemplate("a"), Without(FakeTemplate("b"), "--global-batch-size={gbs}")}),
       "command_templates[1].argv (nor .env) never uses {gbs}: a probe sets the global batch of "
       "each launch (docs/backends.md)"},
      {Config({Without(FakeTemplate("a"), "--train-iters={train_iters}")}),
       "command_templates[0].argv (nor .env) never uses {train_iters}: a probe sets the "
       "iterations of each launch"},
  };
  for (const auto& c : cases) {
    const absl::Status status = CommandBackend::Create(c.config).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.error;
    EXPECT_THAT(status.message(), HasSubstr(c.error));
  }
  v1::CommandTemplate launch = FakeTemplate("a");
  launch.set_timeout_seconds(-1);
  EXPECT_THAT(CommandBackend::Create(Config({launch})).status().message(),
              HasSubstr("command_templates[0].timeout_seconds (-1) must be in [0, 604800]"));
  launch = FakeTemplate("a");
  launch.set_extra_warmup_iterations(1001);
  EXPECT_THAT(CommandBackend::Create(Config({launch})).status().message(),
              HasSubstr("command_templates[0].extra_warmup_iterations (1001)"));
  launch = FakeTemplate("a");
  launch.mutable_log()->mutable_peak_memory()->set_pattern("max reserved: {value}");
  EXPECT_THAT(CommandBackend::Create(Config({launch})).status().message(),
              HasSubstr("command_templates[0].log.peak_memory.unit (0) must be > 0"));
}

TEST(CommandBackendTest, TemplateNamesFollowTheConfig) {
  std::unique_ptr<CommandBackend> backend =
      MakeBackend(Config({FakeTemplate("megatron-llama"), FakeTemplate("nemo-llama")}));
  ASSERT_NE(backend, nullptr);
  EXPECT_THAT(backend->TemplateNames(), ElementsAre("megatron-llama", "nemo-llama"));
}

}  // namespace
}  // namespace paratune
