#include "tools/validation_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace paratune {

double MeanAbsolutePercentageError(const std::vector<double>& predicted,
                                   const std::vector<double>& measured) {
  if (measured.empty()) return 0;
  double total = 0;
  for (size_t i = 0; i < measured.size(); ++i) {
    total += std::fabs(predicted[i] - measured[i]) / measured[i];
  }
  return total / static_cast<double>(measured.size());
}

double MedianAbsolutePercentageError(const std::vector<double>& predicted,
                                     const std::vector<double>& measured) {
  if (measured.empty()) return 0;
  std::vector<double> errors(measured.size());
  for (size_t i = 0; i < measured.size(); ++i) {
    errors[i] = std::fabs(predicted[i] - measured[i]) / measured[i];
  }
  std::sort(errors.begin(), errors.end());
  const size_t middle = errors.size() / 2;
  return errors.size() % 2 == 1 ? errors[middle] : (errors[middle - 1] + errors[middle]) / 2;
}

std::vector<double> AverageRanks(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  size_t start = 0;
  while (start < order.size()) {
    size_t end = start + 1;
    while (end < order.size() && values[order[end]] == values[order[start]]) ++end;
    // Positions start .. end-1 share ranks start+1 .. end.
    const double rank = (static_cast<double>(start + 1) + static_cast<double>(end)) / 2;
    for (size_t i = start; i < end; ++i) ranks[order[i]] = rank;
    start = end;
  }
  return ranks;
}

double SpearmanCorrelation(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() < 2) return 0;
  const std::vector<double> rx = AverageRanks(x);
  const std::vector<double> ry = AverageRanks(y);
  const double n = static_cast<double>(x.size());
  const double mean = (n + 1) / 2;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (rx[i] - mean) * (ry[i] - mean);
    sxx += (rx[i] - mean) * (rx[i] - mean);
    syy += (ry[i] - mean) * (ry[i] - mean);
  }
  if (sxx == 0 || syy == 0) return 0;
  return sxy / std::sqrt(sxx * syy);
}

double PredictedBestRegret(const std::vector<double>& predicted,
                           const std::vector<double>& measured) {
  if (measured.empty()) return 0;
  const size_t chosen = std::max_element(predicted.begin(), predicted.end()) - predicted.begin();
  const double best = *std::max_element(measured.begin(), measured.end());
  return 1 - measured[chosen] / best;
}

double PooledStandardDeviation(const std::vector<std::vector<double>>& groups) {
  double squares = 0;
  double degrees_of_freedom = 0;
  for (const std::vector<double>& group : groups) {
    if (group.size() < 2) continue;
    const double mean = std::accumulate(group.begin(), group.end(), 0.0) / group.size();
    for (double x : group) squares += (x - mean) * (x - mean);
    degrees_of_freedom += static_cast<double>(group.size() - 1);
  }
  return degrees_of_freedom > 0 ? std::sqrt(squares / degrees_of_freedom) : 0;
}

}  // namespace paratune
