// Validation of CreateSearch requests, and the defaults a search runs with.
#ifndef PARATUNE_CONVERT_SEARCH_REQUEST_H_
#define PARATUNE_CONVERT_SEARCH_REQUEST_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "convert/spec_convert.h"
#include "proto/autotuner_service.pb.h"
#include "proto/search.pb.h"

namespace paratune {

// Limits and defaults of SearchSpec and ProbeSettings (proto/search.proto).
inline constexpr int64_t kMaxDisplayNameBytes = 256;
inline constexpr int64_t kDefaultTopK = 8;
inline constexpr int64_t kMaxTopK = 10'000;
inline constexpr int64_t kDefaultWarmupSteps = 2;
inline constexpr int64_t kMaxWarmupSteps = 1'000;
inline constexpr int64_t kDefaultTimedSteps = 5;
inline constexpr int64_t kMaxTimedSteps = 10'000;
inline constexpr double kMaxProbeDeadlineSeconds = 86'400;
inline constexpr int64_t kDefaultMaxAttempts = 2;
inline constexpr int64_t kMaxMaxAttempts = 100;
inline constexpr int64_t kDefaultMaxLaunchFailures = 3;
inline constexpr int64_t kMaxMaxLaunchFailures = 1'000;
// AdaptiveSettings and SearchBudget (proto/search.proto).
inline constexpr double kDefaultTolerance = 0.02;
inline constexpr double kDefaultConfidenceSigmas = 2;
inline constexpr double kMaxConfidenceSigmas = 10;
inline constexpr int64_t kDefaultMaxInFlight = 2;
inline constexpr int64_t kMaxMaxInFlight = 1'024;
inline constexpr int64_t kDefaultMaxConfirmations = 2;
inline constexpr int64_t kMaxMaxConfirmations = 16;
inline constexpr int64_t kDefaultConfirmationStepsFactor = 4;
inline constexpr int64_t kMaxConfirmationStepsFactor = 100;
inline constexpr int64_t kMaxBudgetProbes = 1'000'000;
inline constexpr double kMaxBudgetGpuSeconds = 1e12;
inline constexpr double kMaxBudgetDeadlineSeconds = 31'536'000;

// Whether probes with these settings run the short steps of the short-probe protocol
// (estimator/short_probe.h): the sim and the cuda probe do; the command templates run full
// steps yet, and replay answers with measured full steps. An empty backend is the sim.
bool RunsShortSteps(const v1::ProbeSettings& probe);

// A CreateSearch request that passed validation.
struct ValidatedSearchRequest {
  // The request's spec with every default filled in (policy, top_k, probe settings, seed,
  // adaptive settings), so a stored search shows what it actually ran with.
  v1::SearchSpec spec;
  // The model, training run, cluster and plan options of `spec`.
  ResolvedSpec resolved;
};

// INVALID_ARGUMENT naming the field and value, e.g.
// "spec.probe.timed_steps (20000) must be in [0, 10000]", for a bad display name, model,
// training run, cluster, search space, policy, top_k, probe settings, adaptive settings or
// budget (an unknown preset included).
absl::StatusOr<ValidatedSearchRequest> ValidateCreateSearchRequest(
    const v1::CreateSearchRequest& request);

}  // namespace paratune

#endif  // PARATUNE_CONVERT_SEARCH_REQUEST_H_
