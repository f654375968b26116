#include "worker/worker_metrics.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics/registry.h"
#include "metrics/text_format.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

v1::ProbeAssignment Assignment(v1::ProbeScope scope) {
  v1::ProbeAssignment assignment;
  assignment.set_backend("sim");
  assignment.set_scope(scope);
  v1::ParallelConfig& config = *assignment.mutable_config();
  config.set_data_parallel(4);
  config.set_tensor_parallel(2);
  config.set_pipeline_parallel(2);
  config.set_context_parallel(1);
  return assignment;
}

TEST(ProbeGpusTest, CountsAReplicaOrTheWholeConfiguration) {
  EXPECT_EQ(ProbeGpus(Assignment(v1::PROBE_SCOPE_REPLICA)), 4);
  EXPECT_EQ(ProbeGpus(Assignment(v1::PROBE_SCOPE_FULL)), 16);
}

TEST(WorkerMetricsTest, CountsProbesDurationsAndGpuSeconds) {
  metrics::Registry registry;
  absl::StatusOr<std::unique_ptr<WorkerMetrics>> worker_metrics =
      WorkerMetrics::Create(registry, {"sim"}, 8);
  ASSERT_TRUE(worker_metrics.ok()) << worker_metrics.status();
  v1::ProbeResult result;
  result.set_outcome(v1::PROBE_OK);
  result.set_wall_seconds(2.5);
  (*worker_metrics)->RecordProbe(Assignment(v1::PROBE_SCOPE_REPLICA), result);
  result.set_outcome(v1::PROBE_TIMEOUT);
  result.set_wall_seconds(1);
  (*worker_metrics)->RecordProbe(Assignment(v1::PROBE_SCOPE_FULL), result);

  const std::string text = metrics::FormatText(registry.Collect());
  EXPECT_THAT(text, HasSubstr("paratune_worker_probes_total{backend=\"sim\",outcome=\"ok\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("paratune_worker_probes_total{backend=\"sim\",outcome=\"timeout\"} 1\n"));
  // Every outcome is exported from the start.
  EXPECT_THAT(text,
              HasSubstr("paratune_worker_probes_total{backend=\"sim\",outcome=\"crash\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("paratune_worker_probe_duration_seconds_sum{backend=\"sim\","
                              "outcome=\"ok\"} 2.5\n"));
  // 2.5 s x 4 GPUs + 1 s x 16 GPUs.
  EXPECT_THAT(text, HasSubstr("paratune_worker_probe_gpu_seconds_total{backend=\"sim\"} 26\n"));
  EXPECT_THAT(text, HasSubstr("paratune_worker_gpus 8\n"));
}

}  // namespace
}  // namespace paratune
