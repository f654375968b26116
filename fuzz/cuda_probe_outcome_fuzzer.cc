// Fuzzes how the cuda backend reads paratune-probe's result file (worker/cuda_probe_outcome.h):
// the input is the file's bytes, after a probe that exited saying it wrote its result. Any
// bytes become a ProbeResult with an outcome, from the cuda backend.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "common/subprocess.h"
#include "fuzz/fuzz_input.h"
#include "proto/probe.pb.h"
#include "worker/cuda_probe_outcome.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using paratune::FuzzCheck;
  paratune::SubprocessResult run;
  run.ending = paratune::SubprocessResult::Ending::kExited;
  // kProbeExitResultWritten (worker/probe/probe_exit_codes.h, visible to worker/ only): the
  // probe says its result file is written, so the backend reads it.
  run.exit_code = 0;
  run.stderr_tail = "fuzz";
  run.wall_time = absl::Seconds(3);
  const std::optional<std::string> file(std::string(paratune::FuzzText(data, size)));
  const paratune::v1::ProbeResult result =
      paratune::ResultFromProbeRun(run, absl::Minutes(5), file);
  FuzzCheck(result.outcome() != paratune::v1::PROBE_OUTCOME_UNSPECIFIED,
            "a probe's result has an outcome");
  FuzzCheck(result.backend() == "cuda", "a probe's result names the cuda backend");
  FuzzCheck(result.wall_seconds() == 3, "a probe's result has the run's wall time");
  return 0;
}
