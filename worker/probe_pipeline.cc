#include "worker/probe_pipeline.h"

#include <exception>
#include <thread>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "worker/probe_failure.h"
#include "worker/probe_result_builder.h"

namespace paratune {
namespace {

// The backend's run, on a thread of its own so that the deadline holds even while the backend
// is busy; exceptions are caught here so that no backend can end the worker.
absl::StatusOr<ProbeRun> RunBackend(ProbeBackend& backend, const ProbeSpec& spec,
                                    ProbeContext& context, Clock& clock, absl::Time stop_at,
                                    bool& stopped_at_deadline) {
  absl::StatusOr<ProbeRun> run;
  absl::Notification finished;
  std::thread runner([&] {
    try {
      run = backend.Run(spec, context);
    } catch (const std::exception& e) {
      run = absl::InternalError(absl::StrCat("backend threw: ", e.what()));
    } catch (...) {
      run = absl::InternalError("backend threw a non-standard exception");
    }
    finished.Notify();
  });
  stopped_at_deadline = !clock.WaitForNotification(finished, stop_at - clock.Now());
  if (stopped_at_deadline) context.Stop();
  runner.join();
  return run;
}

}  // namespace

v1::ProbeResult RunProbe(ProbeBackend& backend, const v1::ProbeAssignment& assignment,
                         ProbeContext& context, Clock& clock) {
  const absl::Time start = clock.Now();
  const auto failed = [&](const absl::Status& error) {
    v1::ProbeResult result = ResultFromBackendError(backend.Name(), error);
    result.set_wall_seconds(absl::ToDoubleSeconds(clock.Now() - start));
    return result;
  };
  absl::StatusOr<ProbeSpec> spec = ProbeSpec::FromAssignment(assignment);
  if (!spec.ok()) return failed(spec.status());
  const absl::Duration deadline = spec->deadline_seconds() > 0
                                      ? absl::Seconds(spec->deadline_seconds())
                                      : kDefaultProbeDeadline;
  const absl::Duration grace = backend.StopGrace(*spec);
  if (deadline <= grace) {
    return failed(absl::InvalidArgumentError(absl::StrCat(
        "assignment.deadline_seconds (", spec->deadline_seconds(), ") leaves no time to run: the ",
        backend.Name(), " backend is told to stop a probe ", absl::FormatDuration(grace),
        " before its deadline, to be gone by it")));
  }
  bool stopped_at_deadline = false;
  absl::StatusOr<ProbeRun> run =
      RunBackend(backend, *spec, context, clock, start + deadline - grace, stopped_at_deadline);
  if (stopped_at_deadline) {
    v1::ProbeResult result =
        ResultAtDeadline(backend.Name(), absl::ToDoubleSeconds(deadline), grace, run.status());
    result.set_wall_seconds(absl::ToDoubleSeconds(clock.Now() - start));
    return result;
  }
  if (!run.ok()) return failed(run.status());
  const double deadline_seconds = absl::ToDoubleSeconds(deadline);
  // Only a run that ends OK is held to it: a modelled failure's wall time is its cost, and the
  // failure itself (out of memory, a crash) comes in its first step.
  if (run->outcome == v1::PROBE_OK && run->wall_time == Provenance::kModelled &&
      run->wall_seconds > deadline_seconds) {
    run->outcome = v1::PROBE_TIMEOUT;
    run->timed_steps.clear();
    run->detail = absl::StrFormat(
        "%s%sit would take %.0f s%s, over its deadline of %.0f s, so it "
        "was stopped there",
        run->detail, run->detail.empty() ? "" : ": ", run->wall_seconds,
        run->wall_time_note.empty() ? "" : absl::StrCat(" (", run->wall_time_note, ")"),
        deadline_seconds);
    run->wall_seconds = deadline_seconds;
    run->wall_time_note = "its deadline";
  }
  return BuildProbeResult(*spec, backend.Name(), *run, absl::ToDoubleSeconds(clock.Now() - start));
}

}  // namespace paratune
