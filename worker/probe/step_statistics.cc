#include "worker/probe/step_statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace paratune {

StepStatistics ComputeStepStatistics(std::vector<double> seconds) {
  StepStatistics stats;
  const size_t n = seconds.size();
  std::sort(seconds.begin(), seconds.end());
  stats.min = seconds.front();
  stats.max = seconds.back();
  stats.median = n % 2 == 1 ? seconds[n / 2] : (seconds[n / 2 - 1] + seconds[n / 2]) / 2;
  stats.mean = std::accumulate(seconds.begin(), seconds.end(), 0.0) / static_cast<double>(n);
  if (n > 1) {
    double squares = 0;
    for (double s : seconds) squares += (s - stats.mean) * (s - stats.mean);
    stats.cv = std::sqrt(squares / static_cast<double>(n - 1)) / stats.mean;
  }
  return stats;
}

}  // namespace paratune
