// The Slurm launcher's metrics (DESIGN.md §9, §10): a Collector that reads
// SlurmLauncher::Stats at every scrape and exports the probe jobs submitted, in Slurm now and
// ended, and the Slurm commands that failed. docs/operations.md says what each one means.
#ifndef PARATUNE_SERVER_SLURM_SLURM_LAUNCHER_METRICS_H_
#define PARATUNE_SERVER_SLURM_SLURM_LAUNCHER_METRICS_H_

#include <functional>
#include <utility>
#include <vector>

#include "metrics/collector.h"
#include "metrics/metric_family.h"
#include "server/slurm/slurm_launcher.h"

namespace paratune {

// Thread-safe when `stats` is.
class SlurmLauncherMetrics final : public metrics::Collector {
 public:
  // `stats` is called once per scrape, e.g. [&launcher] { return launcher.stats(); }.
  explicit SlurmLauncherMetrics(std::function<SlurmLauncher::Stats()> stats)
      : stats_(std::move(stats)) {}

  std::vector<metrics::MetricDescriptor> Describe() const override;
  std::vector<metrics::MetricFamily> Collect() const override;

 private:
  const std::function<SlurmLauncher::Stats()> stats_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_SLURM_SLURM_LAUNCHER_METRICS_H_
