// A probe backend for the tests of what runs backends (the probe pipeline, the worker daemon):
// no GPU, no process, no table; it passes the conformance suite as every real backend does
// (STYLE.md rule 9). Its figures are labelled simulated: nothing ran.
#ifndef PARATUNE_WORKER_FAKE_BACKEND_H_
#define PARATUNE_WORKER_FAKE_BACKEND_H_

#include <string>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/fake_clock.h"
#include "proto/probe.pb.h"
#include "worker/probe_backend.h"

namespace paratune {

// Behaves as the assignment's name says:
//   "hang"        blocks until told to stop (notifying Options.hang_started the first time),
//                 then returns CANCELLED;
//   "throw"       throws std::runtime_error("boom");
//   "error"       returns UNAVAILABLE ("driver went away");
//   "rendezvous"  an OK run whose detail is the gang's token (Rendezvous(""));
//   "nan"         an OK run whose step times are not a number;
//   anything else a run: OUT_OF_MEMORY when the memory model's estimate exceeds the GPU's
//                 capacity, else OK, each step of ProbeSpec::TimedMicroBatches taking
//                 step_time x its micro-batches / the full step's (so short steps extrapolate
//                 to step_time), phases and peak memory modelled.
// A run (but "hang" and "rendezvous") moves Options.clock by step_time, as the time it took,
// and every run but "hang" takes Options.run_time of real time first, stopping early when told
// to. Deterministic; thread-safe.
class FakeBackend : public ProbeBackend {
 public:
  struct Options {
    std::string name = "fake";
    absl::Duration step_time = absl::Seconds(1);
    // Advanced by step_time per run; may be null.
    FakeClock* clock = nullptr;
    absl::Duration run_time = absl::ZeroDuration();
    // Notified when the first "hang" run starts; may be null.
    absl::Notification* hang_started = nullptr;
  };

  explicit FakeBackend(Options options) : options_(std::move(options)) {}

  std::string Name() const override { return options_.name; }
  bool Deterministic() const override { return true; }
  absl::StatusOr<ProbeRun> Run(const ProbeSpec& spec, ProbeContext& context) override;

 private:
  const Options options_;
};

// A valid probe of the fake backend named `name`, which says how it runs (above): Llama-3.2-1B
// on one worker's 8 GPUs as dp8, 3 timed steps of 8 micro-batches, `deadline_seconds`.
v1::ProbeAssignment FakeAssignment(const std::string& name, double deadline_seconds);

}  // namespace paratune

#endif  // PARATUNE_WORKER_FAKE_BACKEND_H_
