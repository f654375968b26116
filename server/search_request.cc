#include "server/search_request.h"

#include <cmath>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "common/template_name.h"

namespace paratune {
namespace {

constexpr const char* kBackends[] = {"sim", "replay", "command", "cuda"};

absl::Status CheckRange(absl::string_view field, int64_t value, int64_t low, int64_t high) {
  if (value < low || value > high) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " (", value, ") must be in [", low, ", ", high, "]"));
  }
  return absl::OkStatus();
}

absl::Status NormalizeProbeSettings(v1::ProbeSettings& probe) {
  if (probe.backend().empty()) probe.set_backend("sim");
  bool known_backend = false;
  for (const char* backend : kBackends) known_backend |= probe.backend() == backend;
  if (!known_backend) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.probe.backend (\"", absl::CHexEscape(probe.backend().substr(0, 64)),
                     "\") must be one of ", absl::StrJoin(kBackends, ", ")));
  }
  PT_RETURN_IF_ERROR(
      CheckRange("spec.probe.warmup_steps", probe.warmup_steps(), 0, kMaxWarmupSteps));
  if (probe.warmup_steps() == 0) probe.set_warmup_steps(kDefaultWarmupSteps);
  PT_RETURN_IF_ERROR(CheckRange("spec.probe.timed_steps", probe.timed_steps(), 0, kMaxTimedSteps));
  if (probe.timed_steps() == 0) probe.set_timed_steps(kDefaultTimedSteps);
  if (!std::isfinite(probe.deadline_seconds()) || probe.deadline_seconds() < 0 ||
      probe.deadline_seconds() > kMaxProbeDeadlineSeconds) {
    return absl::InvalidArgumentError(absl::StrCat("spec.probe.deadline_seconds (",
                                                   probe.deadline_seconds(), ") must be in [0, ",
                                                   kMaxProbeDeadlineSeconds, "]"));
  }
  if (probe.deadline_seconds() == 0) probe.set_deadline_seconds(kDefaultProbeDeadlineSeconds);
  PT_RETURN_IF_ERROR(
      CheckRange("spec.probe.max_attempts", probe.max_attempts(), 0, kMaxMaxAttempts));
  if (probe.max_attempts() == 0) probe.set_max_attempts(kDefaultMaxAttempts);
  if (!v1::ProbeScope_IsValid(probe.scope())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.probe.scope (", static_cast<int>(probe.scope()), ") is not a ProbeScope"));
  }
  if (probe.backend() == "command") {
    PT_RETURN_IF_ERROR(
        ValidateTemplateName("spec.probe.command_template", probe.command_template()));
  } else if (!probe.command_template().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.probe.command_template (\"", absl::CHexEscape(probe.command_template().substr(0, 64)),
        "\") is only for backend command, not ", probe.backend()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ValidatedSearchRequest> ValidateCreateSearchRequest(
    const v1::CreateSearchRequest& request) {
  if (static_cast<int64_t>(request.display_name().size()) > kMaxDisplayNameBytes) {
    return absl::InvalidArgumentError(absl::StrCat("display_name (", request.display_name().size(),
                                                   " bytes) must be at most ", kMaxDisplayNameBytes,
                                                   " bytes"));
  }
  v1::SearchSpec spec = request.spec();
  switch (spec.policy()) {
    case v1::SEARCH_POLICY_UNSPECIFIED:
      spec.set_policy(v1::TOP_K);
      break;
    case v1::TOP_K:
    case v1::EXHAUSTIVE:
      break;
    case v1::ADAPTIVE:
      return absl::UnimplementedError(
          "search policy ADAPTIVE arrives with the scheduler issue; use TOP_K or EXHAUSTIVE");
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("spec.policy (", static_cast<int>(spec.policy()),
                       ") is not a SearchPolicy; use TOP_K or EXHAUSTIVE"));
  }
  PT_RETURN_IF_ERROR(CheckRange("spec.top_k", spec.top_k(), 0, kMaxTopK));
  if (spec.top_k() == 0) spec.set_top_k(kDefaultTopK);
  PT_RETURN_IF_ERROR(NormalizeProbeSettings(*spec.mutable_probe()));
  if (spec.seed() == 0) spec.set_seed(1);

  PT_ASSIGN_OR_RETURN(ResolvedSpec resolved, ResolveSearchSpec(spec));
  return ValidatedSearchRequest{std::move(spec), std::move(resolved)};
}

}  // namespace paratune
