#include "server/core/probe_timing.h"

#include <algorithm>

#include "convert/search_request.h"
#include "convert/spec_convert.h"
#include "estimator/performance_model.h"
#include "estimator/short_probe.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/test_requests.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

v1::SearchSpec Spec(int64_t global_batch) {
  v1::CreateSearchRequest request = SmallSimSearch(1);
  request.mutable_spec()->mutable_training()->set_global_batch_size(global_batch);
  absl::StatusOr<ValidatedSearchRequest> validated = ValidateCreateSearchRequest(request);
  EXPECT_TRUE(validated.ok()) << validated.status();
  return validated->spec;
}

// dp x tp x pp (cp 1) with micro-batch size mbs of the spec's model and cluster, predicted.
struct Candidate {
  PlannedConfig planned;
  TrainingSpec training;
};
Candidate Planned(const v1::SearchSpec& spec, int64_t dp, int64_t tp, int64_t pp, int64_t mbs) {
  const ResolvedSpec resolved = *ResolveSearchSpec(spec);
  const ParallelConfig config =
      *ParallelConfig::Create(resolved.model, resolved.training, resolved.cluster,
                              resolved.plan_options.rules, MakeParallelDims(dp, tp, pp, 1, mbs));
  const PerformanceEstimate predicted =
      PredictPerformance(resolved.model, resolved.training, resolved.cluster, config,
                         DefaultPerformanceParameters(resolved.cluster.gpu()));
  return {PlannedConfig{config, MemoryEstimate(), predicted}, resolved.training};
}

TEST(ProbeTimingTest, ShortStepsAndADeadlineFromThePrediction) {
  // 1024 / (dp 2 x mbs 1) = 512 micro-batches: short steps of 2 pp and 4 pp.
  const v1::SearchSpec spec = Spec(1024);
  const Candidate c = Planned(spec, 2, 2, 2, 1);
  const ProbeTiming timing = TimeProbe(c.planned, c.training, spec.probe(), 5);
  EXPECT_THAT(timing.micro_batch_counts, ElementsAre(4, 8));
  EXPECT_GT(timing.predicted_seconds, kProbeStartupSeconds);
  EXPECT_EQ(timing.deadline_seconds,
            std::max(kMinDeadlineSeconds, kDeadlineFactor * timing.predicted_seconds));
}

TEST(ProbeTimingTest, FullStepsWhenTheGlobalBatchIsSmallAndTheSearchsDeadlineWins) {
  v1::SearchSpec spec = Spec(64);
  spec.mutable_probe()->set_deadline_seconds(45);
  const Candidate c = Planned(spec, 8, 1, 1, 8);
  const ProbeTiming timing = TimeProbe(c.planned, c.training, spec.probe(), 5);
  EXPECT_THAT(timing.micro_batch_counts, IsEmpty());
  EXPECT_EQ(timing.deadline_seconds, 45);
}

TEST(ProbeTimingTest, EachBackendIsTimedForTheStepsAndLaunchesItRuns) {
  const v1::SearchSpec spec = Spec(1024);
  const Candidate c = Planned(spec, 2, 2, 2, 1);
  const ProbeTiming short_steps = TimeProbe(c.planned, c.training, spec.probe(), 5);

  v1::ProbeSettings replay = spec.probe();
  replay.set_backend("replay");
  const ProbeTiming full_steps = TimeProbe(c.planned, c.training, replay, 5);
  EXPECT_THAT(full_steps.micro_batch_counts, IsEmpty());
  // Beyond the start-up, full steps take many times the short ones.
  EXPECT_GT(full_steps.predicted_seconds - kProbeStartupSeconds,
            4 * (short_steps.predicted_seconds - kProbeStartupSeconds));
  EXPECT_GT(full_steps.deadline_seconds, short_steps.deadline_seconds);

  // A command template runs the same short steps, a launch per count, each with its own
  // start-up and warm-up...
  v1::ProbeSettings command = spec.probe();
  command.set_backend("command");
  command.set_command_template("megatron");
  command.set_startup_seconds(kProbeStartupSeconds);
  const ProbeTiming launches = TimeProbe(c.planned, c.training, command, 5);
  EXPECT_EQ(launches.micro_batch_counts, short_steps.micro_batch_counts);
  EXPECT_GT(launches.predicted_seconds, short_steps.predicted_seconds + kProbeStartupSeconds);
  // ...unless a second start-up costs more than the short steps save.
  command.set_startup_seconds(full_steps.predicted_seconds);
  const ProbeTiming slow_start = TimeProbe(c.planned, c.training, command, 5);
  EXPECT_THAT(slow_start.micro_batch_counts, IsEmpty());
  EXPECT_DOUBLE_EQ(slow_start.predicted_seconds,
                   full_steps.predicted_seconds - kProbeStartupSeconds + command.startup_seconds());

  // A confirmation's longer probe is timed for its steps.
  EXPECT_GT(TimeProbe(c.planned, c.training, spec.probe(), 20).predicted_seconds,
            short_steps.predicted_seconds);
}

}  // namespace
}  // namespace paratune
