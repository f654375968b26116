#include "worker/probe_specs.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "convert/spec_convert.h"

namespace paratune {
namespace {

constexpr int64_t kMaxTimedSteps = 10'000;

}  // namespace

absl::StatusOr<ProbeSpecs> ResolveProbeSpecs(const v1::ProbeAssignment& assignment) {
  PT_ASSIGN_OR_RETURN(ProbeSpecs specs,
                      ResolveConfiguration(assignment.model(), assignment.training(),
                                           assignment.cluster(), assignment.config()));
  if (assignment.timed_steps() < 1 || assignment.timed_steps() > kMaxTimedSteps) {
    return absl::InvalidArgumentError(absl::StrCat("assignment.timed_steps (",
                                                   assignment.timed_steps(), ") must be in [1, ",
                                                   kMaxTimedSteps, "]"));
  }
  return specs;
}

int64_t ConfigurationGpus(const ParallelConfig& config) {
  return config.dp() * config.tp() * config.pp() * config.cp();
}

}  // namespace paratune
