#include "server/slurm/slurm_launcher_metrics.h"

#include <map>
#include <string>

#include "metrics/enum_label.h"

namespace paratune {
namespace {

using metrics::EnumLabel;
using metrics::MetricDescriptor;
using metrics::MetricFamily;
using metrics::MetricType;
using metrics::Sample;

// Describe() and Collect() index the same list.
enum Family { kJobs, kJobsSubmitted, kSubmitFailures, kJobsEnded, kCommandErrors };

const std::vector<MetricDescriptor>& Descriptors() {
  static const auto* const descriptors = new std::vector<MetricDescriptor>{
      {"paratune_slurm_jobs",
       "Probe jobs of this server in Slurm now, by Slurm state (pending, running, completing, "
       "...).",
       MetricType::kGauge,
       {"state"}},
      {"paratune_slurm_jobs_submitted_total",
       "Probe jobs submitted with sbatch.",
       MetricType::kCounter,
       {}},
      {"paratune_slurm_submit_failures_total",
       "sbatch calls that failed; each counts as a failed attempt of its probe.",
       MetricType::kCounter,
       {}},
      {"paratune_slurm_jobs_ended_total",
       "Probe jobs that ended, by final Slurm state (completed, failed, cancelled, timeout, "
       "node_fail, ...; unknown when Slurm had forgotten the job).",
       MetricType::kCounter,
       {"state"}},
      {"paratune_slurm_command_errors_total",
       "Slurm commands that failed or could not run, by command (squeue, scancel, scontrol).",
       MetricType::kCounter,
       {"command"}},
  };
  return *descriptors;
}

// The series exported at zero too, so that rates and alerts have them from the start.
constexpr const char* kLiveStates[] = {"PENDING", "RUNNING"};
constexpr const char* kEndStates[] = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"};
constexpr const char* kCommands[] = {"squeue", "scancel", "scontrol"};

// `counts` with the `always` keys added at zero.
template <size_t N>
std::map<std::string, int64_t> WithZeros(std::map<std::string, int64_t> counts,
                                         const char* const (&always)[N]) {
  for (const char* key : always) counts.try_emplace(key, 0);
  return counts;
}

}  // namespace

std::vector<MetricDescriptor> SlurmLauncherMetrics::Describe() const { return Descriptors(); }

std::vector<MetricFamily> SlurmLauncherMetrics::Collect() const {
  const SlurmLauncher::Stats stats = stats_();
  std::vector<MetricFamily> families;
  for (const MetricDescriptor& descriptor : Descriptors()) families.push_back({descriptor, {}});
  auto add = [&](Family family, std::vector<std::string> labels, double value) {
    families[family].samples.push_back(Sample{std::move(labels), value});
  };
  for (const auto& [state, jobs] : WithZeros(stats.jobs, kLiveStates)) {
    add(kJobs, {EnumLabel(state)}, jobs);
  }
  add(kJobsSubmitted, {}, stats.jobs_submitted);
  add(kSubmitFailures, {}, stats.submit_failures);
  for (const auto& [state, jobs] : WithZeros(stats.jobs_ended, kEndStates)) {
    add(kJobsEnded, {EnumLabel(state)}, jobs);
  }
  for (const auto& [command, errors] : WithZeros(stats.command_errors, kCommands)) {
    add(kCommandErrors, {command}, errors);
  }
  return families;
}

}  // namespace paratune
