// Summary statistics of a probe's timed step times.
#ifndef PARATUNE_WORKER_PROBE_STEP_STATISTICS_H_
#define PARATUNE_WORKER_PROBE_STEP_STATISTICS_H_

#include <vector>

namespace paratune {

struct StepStatistics {
  double mean = 0;
  double median = 0;  // the mean of the middle two for an even count
  double min = 0;
  double max = 0;
  // Coefficient of variation: the sample standard deviation (n - 1 in the denominator) over
  // the mean; 0 for a single step.
  double cv = 0;
};

// `seconds` must not be empty.
StepStatistics ComputeStepStatistics(std::vector<double> seconds);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_STEP_STATISTICS_H_
