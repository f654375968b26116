#include "worker/fake_backend.h"

#include <limits>
#include <stdexcept>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "estimator/memory_model.h"
#include "worker/probe/test_assignments.h"

namespace paratune {

absl::StatusOr<ProbeRun> FakeBackend::Run(const ProbeSpec& spec, ProbeContext& context) {
  const std::string& name = spec.name();
  if (name == "hang") {
    if (options_.hang_started != nullptr && !options_.hang_started->HasBeenNotified()) {
      options_.hang_started->Notify();
    }
    // Bounded, so that a test whose worker never stops the probe fails rather than hangs.
    if (context.stop().WaitForNotificationWithTimeout(absl::Seconds(60))) {
      return absl::CancelledError("the fake probe hung until it was stopped");
    }
    return absl::InternalError("the fake probe hung and was never stopped");
  }
  if (name == "throw") throw std::runtime_error("boom");
  if (name == "error") return absl::UnavailableError("driver went away");
  PT_RETURN_IF_ERROR(WaitUnlessStopped(context, options_.run_time, spec));
  ProbeRun run;
  run.detail =
      absl::StrFormat("the fake backend, %s a full step", absl::FormatDuration(options_.step_time));
  if (name == "rendezvous") {
    PT_ASSIGN_OR_RETURN(run.detail, context.Rendezvous(""));
  } else if (options_.clock != nullptr) {
    options_.clock->Advance(options_.step_time);
  }
  run.source = FigureSource::kSimulated;
  const MemoryEstimate memory =
      EstimateMemory(spec.model(), spec.training(), spec.cluster(), spec.config(), MemoryOptions());
  run.peak_memory_bytes = static_cast<int64_t>(memory.peak_bytes);
  run.peak_memory = Provenance::kModelled;
  run.peak_memory_note = "(the memory model's estimate)";
  if (memory.peak_bytes > memory.capacity_bytes) {
    run.outcome = v1::PROBE_OUT_OF_MEMORY;
    run.detail = "the fake probe's estimated memory exceeds the GPU's";
    return run;
  }
  run.outcome = v1::PROBE_OK;
  run.phases = StepPhases(spec, Provenance::kModelled);
  const double full_step = absl::ToDoubleSeconds(options_.step_time);
  for (int64_t micro_batches : spec.TimedMicroBatches()) {
    const double seconds = name == "nan" ? std::numeric_limits<double>::quiet_NaN()
                                         : full_step * static_cast<double>(micro_batches) /
                                               static_cast<double>(spec.micro_batches());
    run.timed_steps.push_back({micro_batches, std::vector<double>(spec.timed_steps(), seconds)});
  }
  return run;
}

v1::ProbeAssignment FakeAssignment(const std::string& name, double deadline_seconds) {
  v1::ProbeAssignment assignment = TestAssignment("llama3.2-1b", 64, 2048, 8, 1, 1, 1, 1);
  assignment.set_name(name);
  assignment.set_backend("fake");
  assignment.set_deadline_seconds(deadline_seconds);
  return assignment;
}

}  // namespace paratune
