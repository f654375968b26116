// Accuracy measures of the validation report: percentage error, rank correlation, regret.
#ifndef PARATUNE_TOOLS_VALIDATION_STATS_H_
#define PARATUNE_TOOLS_VALIDATION_STATS_H_

#include <vector>

namespace paratune {

// Mean of |predicted - measured| / measured, as a fraction; 0 for empty input. The vectors
// have equal sizes and measured values are > 0.
double MeanAbsolutePercentageError(const std::vector<double>& predicted,
                                   const std::vector<double>& measured);

// Median of |predicted - measured| / measured, as a fraction (the mean of the two middle ones
// for an even count); 0 for empty input. Unlike the mean, one row far off does not carry it.
double MedianAbsolutePercentageError(const std::vector<double>& predicted,
                                     const std::vector<double>& measured);

// 1-based ranks of `values` in ascending order, ties sharing the mean of their ranks.
std::vector<double> AverageRanks(const std::vector<double>& values);

// Spearman's rank correlation: Pearson's correlation of the average ranks, in [-1, 1]; 0 when
// fewer than two values or either side is constant.
double SpearmanCorrelation(const std::vector<double>& x, const std::vector<double>& y);

// 1 - measured[i*] / max(measured), where i* is the index of the highest predicted value (the
// first on ties): how much slower the predicted-best configuration is than the measured best.
// Throughputs: higher is better. 0 for empty input.
double PredictedBestRegret(const std::vector<double>& predicted,
                           const std::vector<double>& measured);

// Pooled standard deviation of values about their own group's mean:
// sqrt(sum over groups of sum (x - mean_group)^2 / sum over groups of (n_group - 1)). Groups of
// one value add nothing; 0 when no group has two.
double PooledStandardDeviation(const std::vector<std::vector<double>>& groups);

}  // namespace paratune

#endif  // PARATUNE_TOOLS_VALIDATION_STATS_H_
