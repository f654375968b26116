#include "worker/command_backend.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/backend_conformance.h"

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
       {kFakeTraining, "--train-iters={train_iters}", "--tp={tp}", "--pp={pp}", "--cp={cp}",
        "--mbs={mbs}", "--num-layers={num_layers}", "--hidden-size={hidden_size}"}) {
    launch.add_argv(element);
  }
  for (std::string& element : extra) launch.add_argv(std::move(element));
  (*launch.mutable_env())["CUDA_VISIBLE_DEVICES"] = "{gpu_ids}";
  (*launch.mutable_env())["FAKE_MASTER"] = "{master_addr}:{master_port}";
  launch.set_kill_grace_seconds(0.5);
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
  assignment.set_num_ranks(8);
  v1::GangMember& member = *assignment.add_gang();
  member.set_worker("workers/1");
  member.set_hostname("localhost");
  member.set_num_ranks(8);
  for (int g = 0; g < 8; ++g) assignment.add_gpu_indices(g);
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

absl::StatusOr<v1::ProbeResult> RunProbe(const v1::CommandTemplate& launch,
                                         const v1::ProbeAssignment& assignment) {
  std::unique_ptr<CommandBackend> backend = MakeBackend(Config({launch}));
  if (backend == nullptr) return absl::InternalError("no backend");
  SoloProbeContext context;
  return backend->Run(assignment, context);
}

v1::ProbeResult RunOk(const v1::CommandTemplate& launch,
                      const v1::ProbeAssignment& assignment = Assignment()) {
  absl::StatusOr<v1::ProbeResult> result = RunProbe(launch, assignment);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : v1::ProbeResult();
}

TEST(CommandBackendTest, AnOkRunReportsItsTimedStepsAndPeakMemory) {
  const v1::ProbeResult result = RunOk(FakeTemplate("fake"));
  ASSERT_EQ(result.outcome(), v1::PROBE_OK) << result.message();
  // tp pp cp mbs 1: iteration i logs 165 + i ms; iteration 1 is the warm-up.
  EXPECT_THAT(result.step_times_seconds(),
              ElementsAre(DoubleNear(0.167, 1e-12), DoubleNear(0.168, 1e-12),
                          DoubleNear(0.169, 1e-12), DoubleNear(0.170, 1e-12)));
  EXPECT_NEAR(result.mean_step_time_seconds(), 0.1685, 1e-12);
  EXPECT_NEAR(result.tokens_per_second(), 64 * 2048 / 0.1685, 1e-6);
  // 18 bytes x 12 x 16 layers x 2048^2 = 13,824 MiB of states; the log's max reserved adds 1,024.
  EXPECT_EQ(result.peak_memory_bytes(), (13824LL + 1024) * 1024 * 1024);
  EXPECT_FALSE(result.simulated());
  EXPECT_EQ(result.backend(), "command");
  EXPECT_THAT(result.measured(),
              AllOf(Contains("compute"), Contains("dp_collectives"), Contains("peak_memory")));
  EXPECT_THAT(result.message(),
              AllOf(HasSubstr("template \"fake\", ranks 0-7 of 8 on node 0 of 1: measured: mean "
                              "step time 0.1685 s over 4 timed steps after 1 warm-up"),
                    HasSubstr("peak memory 14.50 GiB on this node")));
}

TEST(CommandBackendTest, ExtraWarmupIterationsAreRunAndDropped) {
  v1::CommandTemplate launch = FakeTemplate("fake");
  launch.set_extra_warmup_iterations(2);
  const v1::ProbeResult result = RunOk(launch);
  ASSERT_EQ(result.outcome(), v1::PROBE_OK) << result.message();
  EXPECT_THAT(result.step_times_seconds(),
              ElementsAre(DoubleNear(0.169, 1e-12), DoubleNear(0.170, 1e-12),
                          DoubleNear(0.171, 1e-12), DoubleNear(0.172, 1e-12)));
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
    const v1::ProbeResult result = RunOk(FakeTemplate("fake", {absl::StrCat("--fail=", c.fail)}));
    EXPECT_EQ(result.outcome(), c.outcome) << c.fail << ": " << result.message();
    EXPECT_THAT(result.message(), HasSubstr(c.message)) << c.fail;
    EXPECT_TRUE(result.step_times_seconds().empty()) << c.fail;
  }
}

TEST(CommandBackendTest, TheOutputsLastLinesShowTheRenderedEnvironment) {
  const v1::ProbeResult result = RunOk(FakeTemplate("fake", {"--fail=exit-code"}));
  EXPECT_THAT(result.message(),
              AllOf(HasSubstr("last lines of stderr:\nTraceback (most recent call last): "
                              "RuntimeError: something else broke"),
                    HasSubstr("CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 MASTER=localhost:")));
}

TEST(CommandBackendTest, AHangIsStoppedTheKillGraceBeforeTheDeadline) {
  v1::ProbeAssignment assignment = Assignment();
  assignment.set_deadline_seconds(1.5);
  const v1::ProbeResult result = RunOk(FakeTemplate("fake", {"--fail=hang"}), assignment);
  EXPECT_EQ(result.outcome(), v1::PROBE_TIMEOUT) << result.message();
  EXPECT_THAT(result.message(),
              HasSubstr("the run timed out after 1s and was stopped, after logging 2 of 5"));
  EXPECT_LT(result.wall_seconds(), 1.5);
}

TEST(CommandBackendTest, TheTemplatesTimeoutCapsTheDeadline) {
  v1::CommandTemplate launch = FakeTemplate("fake", {"--fail=hang"});
  launch.set_timeout_seconds(0.5);
  const v1::ProbeResult result = RunOk(launch);
  EXPECT_EQ(result.outcome(), v1::PROBE_TIMEOUT) << result.message();
  EXPECT_THAT(result.message(), HasSubstr("timed out after 500ms"));
}

TEST(CommandBackendTest, AReplicaProbeDoesNotClaimDataParallelTraffic) {
  v1::ProbeAssignment assignment = Assignment();
  assignment.set_scope(v1::PROBE_SCOPE_REPLICA);
  assignment.set_num_ranks(1);
  assignment.mutable_gang(0)->set_num_ranks(1);
  assignment.mutable_gpu_indices()->Truncate(1);
  const v1::ProbeResult result = RunOk(FakeTemplate("fake"), assignment);
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
  std::unique_ptr<CommandBackend> backend = MakeBackend(Config({launch}));
  ASSERT_NE(backend, nullptr);
  SoloProbeContext context;
  absl::StatusOr<v1::ProbeResult> result;
  std::thread runner([&] { result = backend->Run(Assignment("waits"), context); });
  std::ifstream started(fifo);
  std::string line;
  std::getline(started, line);
  EXPECT_EQ(line, "started");
  context.Cancel();
  runner.join();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled) << result.status();
}

// Rendezvous answers with a fixed token, as the scheduler would relay gang[0]'s.
class RelayedPortContext : public SoloProbeContext {
 public:
  absl::StatusOr<std::string> Rendezvous(const std::string& token) override {
    sent_ = token;
    return std::string("29555");
  }
  const std::string& sent() const { return sent_; }

 private:
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
  RelayedPortContext context;
  absl::StatusOr<v1::ProbeResult> result = backend->Run(assignment, context);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(context.sent(), "");  // only gang[0] sends
  EXPECT_THAT(result->message(), AllOf(HasSubstr("ranks 8-15 of 16 on node 1 of 2"),
                                       HasSubstr("MASTER=localhost:29555")));

  assignment.set_gang_index(0);
  result = backend->Run(assignment, context);
  ASSERT_TRUE(result.ok()) << result.status();
  int sent_port = 0;
  EXPECT_TRUE(absl::SimpleAtoi(context.sent(), &sent_port)) << context.sent();
  EXPECT_GT(sent_port, 0);
}

TEST(CommandBackendTest, ProbesItCannotRunAreErrorsNamingWhy) {
  EXPECT_EQ(RunProbe(FakeTemplate("fake"), Assignment("other")).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_THAT(RunProbe(FakeTemplate("fake"), Assignment("other")).status().message(),
              HasSubstr("this worker's config defines no template \"other\""));
  EXPECT_THAT(RunProbe(FakeTemplate("fake"), Assignment("")).status().message(),
              HasSubstr("assignment.command_template (\"\")"));

  v1::ProbeAssignment short_deadline = Assignment();
  short_deadline.set_deadline_seconds(0.5);
  EXPECT_EQ(RunProbe(FakeTemplate("fake"), short_deadline).status(),
            absl::InvalidArgumentError(
                "assignment.deadline_seconds (0.5) leaves no time to run: template \"fake\" "
                "stops a run 500ms before it"));

  v1::CommandTemplate missing = FakeTemplate("fake");
  missing.set_argv(0, "worker/testdata/no_such_program");
  const absl::Status not_started = RunProbe(missing, Assignment()).status();
  EXPECT_EQ(not_started.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(not_started.message(),
              HasSubstr("template \"fake\": cannot start \"worker/testdata/no_such_program\""));
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
       "command_templates[0].argv[8] (\"--x={tpp}\"): unknown placeholder {tpp}"},
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
