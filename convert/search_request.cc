#include "convert/search_request.h"

#include <cmath>
#include <optional>
#include <string>
#include <tuple>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "common/template_name.h"
#include "estimator/cluster_spec.h"
#include "estimator/field_error.h"

namespace paratune {
namespace {

constexpr const char* kBackends[] = {"sim", "replay", "command", "cuda"};

absl::Status CheckRange(absl::string_view field, int64_t value, int64_t low, int64_t high) {
  if (value < low || value > high) {
    return FieldError(field, absl::StrCat("(", value, ") must be in [", low, ", ", high, "]"));
  }
  return absl::OkStatus();
}

absl::Status NormalizeProbeSettings(v1::ProbeSettings& probe) {
  if (probe.backend().empty()) probe.set_backend(kDefaultBackend);
  bool known_backend = false;
  for (const char* backend : kBackends) known_backend |= probe.backend() == backend;
  if (!known_backend) {
    return FieldError("spec.probe.backend",
                      absl::StrCat("(\"", absl::CHexEscape(probe.backend().substr(0, 64)),
                                   "\") must be one of ", absl::StrJoin(kBackends, ", ")));
  }
  PT_RETURN_IF_ERROR(
      CheckRange("spec.probe.warmup_steps", probe.warmup_steps(), 0, kMaxWarmupSteps));
  if (probe.warmup_steps() == 0) probe.set_warmup_steps(kDefaultWarmupSteps);
  PT_RETURN_IF_ERROR(CheckRange("spec.probe.timed_steps", probe.timed_steps(), 0, kMaxTimedSteps));
  if (probe.timed_steps() == 0) probe.set_timed_steps(kDefaultTimedSteps);
  if (!std::isfinite(probe.deadline_seconds()) || probe.deadline_seconds() < 0 ||
      probe.deadline_seconds() > kMaxProbeDeadlineSeconds) {
    return FieldError("spec.probe.deadline_seconds",
                      absl::StrCat("(", probe.deadline_seconds(), ") must be in [0, ",
                                   kMaxProbeDeadlineSeconds, "]"));
  }
  if (!std::isfinite(probe.startup_seconds()) || probe.startup_seconds() < 0 ||
      probe.startup_seconds() > kMaxStartupSeconds) {
    return FieldError("spec.probe.startup_seconds",
                      absl::StrCat("(", probe.startup_seconds(), ") must be in [0, ",
                                   kMaxStartupSeconds, "] (0: the backend's)"));
  }
  if (probe.startup_seconds() == 0) probe.set_startup_seconds(ProbeStepsOf(probe).startup_seconds);
  PT_RETURN_IF_ERROR(
      CheckRange("spec.probe.max_attempts", probe.max_attempts(), 0, kMaxMaxAttempts));
  if (probe.max_attempts() == 0) probe.set_max_attempts(kDefaultMaxAttempts);
  PT_RETURN_IF_ERROR(CheckRange("spec.probe.max_launch_failures", probe.max_launch_failures(), 0,
                                kMaxMaxLaunchFailures));
  if (probe.max_launch_failures() == 0) probe.set_max_launch_failures(kDefaultMaxLaunchFailures);
  if (!v1::ProbeScope_IsValid(probe.scope())) {
    return FieldError("spec.probe.scope",
                      absl::StrCat("(", static_cast<int>(probe.scope()), ") is not a ProbeScope"));
  }
  if (probe.backend() == "command") {
    if (const std::optional<std::string> problem = TemplateNameProblem(probe.command_template())) {
      return FieldError("spec.probe.command_template", *problem);
    }
  } else if (!probe.command_template().empty()) {
    return FieldError("spec.probe.command_template",
                      absl::StrCat("(\"", absl::CHexEscape(probe.command_template().substr(0, 64)),
                                   "\") is only for backend command, not ", probe.backend()));
  }
  return absl::OkStatus();
}

// A double field in (0, high] whose 0 means `fallback`.
absl::Status NormalizeFraction(absl::string_view field, double& value, double high,
                               double fallback) {
  if (!std::isfinite(value) || value < 0 || value > high) {
    return FieldError(
        field, absl::StrCat("(", value, ") must be in (0, ", high, "], or 0 for ", fallback));
  }
  if (value == 0) value = fallback;
  return absl::OkStatus();
}

absl::Status NormalizeAdaptiveSettings(v1::AdaptiveSettings& adaptive) {
  double tolerance = adaptive.tolerance();
  PT_RETURN_IF_ERROR(NormalizeFraction("spec.adaptive.tolerance", tolerance, 1, kDefaultTolerance));
  adaptive.set_tolerance(tolerance);
  double sigmas = adaptive.confidence_sigmas();
  PT_RETURN_IF_ERROR(NormalizeFraction("spec.adaptive.confidence_sigmas", sigmas,
                                       kMaxConfidenceSigmas, kDefaultConfidenceSigmas));
  adaptive.set_confidence_sigmas(sigmas);
  PT_RETURN_IF_ERROR(
      CheckRange("spec.adaptive.max_in_flight", adaptive.max_in_flight(), 0, kMaxMaxInFlight));
  if (adaptive.max_in_flight() == 0) adaptive.set_max_in_flight(kDefaultMaxInFlight);
  if (!adaptive.has_max_confirmations()) adaptive.set_max_confirmations(kDefaultMaxConfirmations);
  PT_RETURN_IF_ERROR(CheckRange("spec.adaptive.max_confirmations", adaptive.max_confirmations(), 0,
                                kMaxMaxConfirmations));
  PT_RETURN_IF_ERROR(CheckRange("spec.adaptive.confirmation_steps_factor",
                                adaptive.confirmation_steps_factor(), 0,
                                kMaxConfirmationStepsFactor));
  if (adaptive.confirmation_steps_factor() == 0) {
    adaptive.set_confirmation_steps_factor(kDefaultConfirmationStepsFactor);
  }
  if (adaptive.confirmation_steps_factor() < 2) {
    return FieldError("spec.adaptive.confirmation_steps_factor",
                      absl::StrCat("(", adaptive.confirmation_steps_factor(), ") must be in [2, ",
                                   kMaxConfirmationStepsFactor, "], or 0"));
  }
  return absl::OkStatus();
}

absl::Status CheckBudget(const v1::SearchBudget& budget) {
  PT_RETURN_IF_ERROR(
      CheckRange("spec.budget.max_probes", budget.max_probes(), 0, kMaxBudgetProbes));
  for (const auto& [field, value, high] :
       {std::make_tuple("spec.budget.max_gpu_seconds", budget.max_gpu_seconds(),
                        kMaxBudgetGpuSeconds),
        std::make_tuple("spec.budget.deadline_seconds", budget.deadline_seconds(),
                        kMaxBudgetDeadlineSeconds)}) {
    if (!std::isfinite(value) || value < 0 || value > high) {
      return FieldError(field,
                        absl::StrCat("(", value, ") must be in [0, ", high, "] (0: no limit)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

ProbeSteps ProbeStepsOf(const v1::ProbeSettings& probe) {
  const bool command = probe.backend() == "command";
  ProbeSteps steps;
  steps.warmup_steps = probe.warmup_steps() != 0 ? probe.warmup_steps() : kDefaultWarmupSteps;
  steps.timed_steps = probe.timed_steps() != 0 ? probe.timed_steps() : kDefaultTimedSteps;
  steps.startup_seconds = probe.startup_seconds() != 0 ? probe.startup_seconds()
                          : command                    ? kDefaultCommandStartupSeconds
                                                       : kProbeStartupSeconds;
  steps.short_steps = probe.backend() != "replay";
  steps.launch_per_count = command;
  return steps;
}

void UpgradeStoredSpec(v1::SearchSpec& spec) {
  v1::SearchSpace& space = *spec.mutable_space();
  if (space.memory_policy() == v1::MEMORY_POLICY_UNSPECIFIED) {
    space.set_memory_policy(space.include_risky() ? v1::MEASURE_RISKY : v1::SAFE_ONLY);
    space.clear_include_risky();
  }
  const v1::TrainingSpec& training = spec.training();
  if (training.framework() == v1::FRAMEWORK_TORCHTITAN && training.tp_comm_overlap()) {
    spec.mutable_training()->set_torch_compile(true);
  }
}

absl::StatusOr<ValidatedSearchRequest> ValidateCreateSearchRequest(
    const v1::CreateSearchRequest& request) {
  if (static_cast<int64_t>(request.display_name().size()) > kMaxDisplayNameBytes) {
    return FieldError("display_name",
                      absl::StrCat("(", request.display_name().size(), " bytes) must be at most ",
                                   kMaxDisplayNameBytes, " bytes"));
  }
  v1::SearchSpec spec = request.spec();
  switch (spec.policy()) {
    case v1::SEARCH_POLICY_UNSPECIFIED:
      spec.set_policy(v1::ADAPTIVE);
      break;
    case v1::TOP_K:
    case v1::EXHAUSTIVE:
    case v1::ADAPTIVE:
      break;
    default:
      return FieldError("spec.policy",
                        absl::StrCat("(", static_cast<int>(spec.policy()),
                                     ") is not a SearchPolicy; use ADAPTIVE, TOP_K or EXHAUSTIVE"));
  }
  if (spec.policy() == v1::ADAPTIVE) {
    PT_RETURN_IF_ERROR(NormalizeAdaptiveSettings(*spec.mutable_adaptive()));
  } else if (spec.has_adaptive()) {
    return FieldError("spec.adaptive", absl::StrCat("is only for policy ADAPTIVE, not ",
                                                    v1::SearchPolicy_Name(spec.policy())));
  }
  PT_RETURN_IF_ERROR(CheckBudget(spec.budget()));
  PT_RETURN_IF_ERROR(CheckRange("spec.top_k", spec.top_k(), 0, kMaxTopK));
  if (spec.top_k() == 0) spec.set_top_k(kDefaultTopK);
  PT_RETURN_IF_ERROR(NormalizeProbeSettings(*spec.mutable_probe()));
  if (spec.seed() == 0) spec.set_seed(1);

  absl::StatusOr<ResolvedSpec> resolved = ResolveSearchSpec(spec);
  // Its errors name the fields from the spec down; this request holds it in `spec`.
  if (!resolved.ok()) return NestFieldError("spec", resolved.status());
  // Stored with the memory policy it runs, in one field, so that it keeps running with it.
  v1::SearchSpace& space = *spec.mutable_space();
  space.set_memory_policy(ProbesRiskyConfigurations(space) ? v1::MEASURE_RISKY : v1::SAFE_ONLY);
  space.clear_include_risky();
  return ValidatedSearchRequest{std::move(spec), *std::move(resolved)};
}

}  // namespace paratune
