// Estimator results as paratune.v1 messages.
#ifndef PARATUNE_CONVERT_ESTIMATE_CONVERT_H_
#define PARATUNE_CONVERT_ESTIMATE_CONVERT_H_

#include "estimator/memory_model.h"
#include "estimator/performance_model.h"
#include "estimator/plan_advice.h"
#include "estimator/planner.h"
#include "proto/autotuner_service.pb.h"
#include "proto/estimate.pb.h"

namespace paratune {

v1::MemoryVerdict VerdictToProto(MemoryVerdict verdict);
v1::MemoryEstimate MemoryEstimateToProto(const MemoryEstimate& estimate,
                                         const ParallelConfig& config, double safe_fraction);
v1::PerformanceEstimate PerformanceEstimateToProto(const PerformanceEstimate& estimate);
// Counts, the first `limit` candidates (all when 0), and non-zero rejection counts.
v1::PlanResponse PlanToProto(const Plan& plan, const PlanOptions& options, int64_t limit);
v1::PlanAdvice PlanAdviceToProto(const PlanAdvice& advice);

}  // namespace paratune

#endif  // PARATUNE_CONVERT_ESTIMATE_CONVERT_H_
