// Validation of CreateSearch requests, and the defaults a search runs with.
#ifndef PARATUNE_CONVERT_SEARCH_REQUEST_H_
#define PARATUNE_CONVERT_SEARCH_REQUEST_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "convert/spec_convert.h"
#include "estimator/short_probe.h"
#include "proto/autotuner_service.pb.h"
#include "proto/search.pb.h"

namespace paratune {

// Limits and defaults of SearchSpec and ProbeSettings (proto/search.proto).
inline constexpr int64_t kMaxDisplayNameBytes = 256;
inline constexpr int64_t kDefaultTopK = 8;
// ProbeSettings.backend when a spec leaves it unset.
inline constexpr char kDefaultBackend[] = "sim";
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
// Start-up of one launch (ProbeSettings.startup_seconds): a command template's training
// framework builds its model and data before the first step, which the cuda probe and the
// sim (estimator/short_probe.h, kProbeStartupSeconds) do not.
inline constexpr double kDefaultCommandStartupSeconds = 120;
inline constexpr double kMaxStartupSeconds = 3'600;
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

// How probes with these settings run (estimator/short_probe.h), each field left 0 taking the
// server's default: the sim and the cuda probe run every short step in one launch; the command
// backend launches its template once per micro-batch count; replay answers with measured full
// steps. An empty backend is the sim.
ProbeSteps ProbeStepsOf(const v1::ProbeSettings& probe);

// Brings a spec stored by an older server to this one's fields, keeping what it ran with: a
// search stored before SearchSpace.memory_policy existed ran SAFE_ONLY unless include_risky;
// a TorchTitan search stored before TrainingSpec.torch_compile existed ran its async tensor
// parallelism (tp_comm_overlap) compiled, the template bringing --compile.enable with it.
void UpgradeStoredSpec(v1::SearchSpec& spec);

// A CreateSearch request that passed validation.
struct ValidatedSearchRequest {
  // The request's spec with every default filled in (policy, top_k, probe settings, seed,
  // adaptive settings), so a stored search shows what it actually ran with.
  v1::SearchSpec spec;
  // The model, training run, cluster and plan options of `spec`.
  ResolvedSpec resolved;
};

// A field error (estimator/field_error.h) naming the field from the request down and the
// value, e.g. "spec.probe.timed_steps (20000) must be in [0, 10000]", for a bad display name,
// model, training run, cluster, search space, policy, top_k, probe settings, adaptive settings
// or budget (an unknown preset included).
absl::StatusOr<ValidatedSearchRequest> ValidateCreateSearchRequest(
    const v1::CreateSearchRequest& request);

}  // namespace paratune

#endif  // PARATUNE_CONVERT_SEARCH_REQUEST_H_
