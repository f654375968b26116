#include "server/slurm/slurm_launcher_metrics.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics/text_format.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

TEST(SlurmLauncherMetricsTest, ExportsTheStatsWithTheCommonStatesAtZeroToo) {
  SlurmLauncher::Stats stats;
  stats.jobs_submitted = 7;
  stats.submit_failures = 1;
  stats.jobs["PENDING"] = 2;
  stats.jobs["COMPLETING"] = 1;
  stats.jobs_ended["COMPLETED"] = 3;
  stats.jobs_ended["OUT_OF_MEMORY"] = 1;
  stats.command_errors["squeue"] = 4;
  const SlurmLauncherMetrics metrics([&] { return stats; });
  ASSERT_EQ(metrics.Describe().size(), metrics.Collect().size());

  const std::string text = metrics::FormatText(metrics.Collect());
  for (const char* line : {
           "paratune_slurm_jobs{state=\"pending\"} 2\n",
           "paratune_slurm_jobs{state=\"running\"} 0\n",
           "paratune_slurm_jobs{state=\"completing\"} 1\n",
           "paratune_slurm_jobs_submitted_total 7\n",
           "paratune_slurm_submit_failures_total 1\n",
           "paratune_slurm_jobs_ended_total{state=\"completed\"} 3\n",
           "paratune_slurm_jobs_ended_total{state=\"out_of_memory\"} 1\n",
           "paratune_slurm_jobs_ended_total{state=\"node_fail\"} 0\n",
           "paratune_slurm_command_errors_total{command=\"squeue\"} 4\n",
           "paratune_slurm_command_errors_total{command=\"scancel\"} 0\n",
       }) {
    EXPECT_THAT(text, HasSubstr(line));
  }
}

}  // namespace
}  // namespace paratune
