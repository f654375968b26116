// Fuzzes how the cuda backend reads paratune-probe's report file (worker/cuda_probe_outcome.h):
// the input is the file's bytes, after a probe that exited saying it wrote its report. Any
// bytes become a run with an outcome, and an OK one holds the steps the probe was to run.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "common/subprocess.h"
#include "fuzz/fuzz_input.h"
#include "proto/probe.pb.h"
#include "worker/cuda_probe_outcome.h"
#include "worker/probe/probe_spec.h"

namespace {

// Llama-3.2-1B, global batch 8 on one GPU with short steps of 2 and 4 micro-batches, 3 timed
// steps each: the probe whose report the input is.
paratune::ProbeSpec Spec() {
  paratune::v1::ProbeAssignment assignment;
  assignment.set_name("searches/1/candidates/0/probes/1");
  assignment.mutable_model()->set_preset("llama3.2-1b");
  assignment.mutable_training()->set_global_batch_size(8);
  assignment.mutable_training()->set_seq_len(2048);
  assignment.mutable_cluster()->mutable_gpu()->set_type("h100-80gb");
  assignment.mutable_cluster()->set_num_nodes(1);
  assignment.mutable_cluster()->set_gpus_per_node(1);
  paratune::v1::ParallelConfig& config = *assignment.mutable_config();
  config.set_data_parallel(1);
  config.set_tensor_parallel(1);
  config.set_pipeline_parallel(1);
  config.set_context_parallel(1);
  config.set_micro_batch_size(1);
  assignment.set_scope(paratune::v1::PROBE_SCOPE_FULL);
  assignment.set_timed_steps(3);
  assignment.set_num_ranks(1);
  assignment.add_gang()->set_num_ranks(1);
  assignment.add_gpu_indices(0);
  assignment.add_micro_batch_counts(2);
  assignment.add_micro_batch_counts(4);
  return *paratune::ProbeSpec::FromAssignment(assignment);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using paratune::FuzzCheck;
  static const paratune::ProbeSpec* const spec = new paratune::ProbeSpec(Spec());
  paratune::SubprocessResult process;
  process.ending = paratune::SubprocessResult::Ending::kExited;
  // kProbeExitResultWritten (worker/probe/probe_exit_codes.h, visible to worker/ only): the
  // probe says its report is written, so the backend reads it.
  process.exit_code = 0;
  process.stderr_tail = "fuzz";
  process.wall_time = absl::Seconds(3);
  const std::optional<std::string> file(std::string(paratune::FuzzText(data, size)));
  const paratune::ProbeRun run = paratune::RunFromProbeProcess(*spec, process, file);
  FuzzCheck(run.outcome != paratune::v1::PROBE_OUTCOME_UNSPECIFIED, "a probe's run has an outcome");
  FuzzCheck(run.source == paratune::FigureSource::kMeasured, "a probe's run is measured");
  if (run.outcome == paratune::v1::PROBE_OK) {
    FuzzCheck(run.timed_steps.size() == 2, "an OK run has a series per short-step count");
    for (const paratune::ShortStepSeries& series : run.timed_steps) {
      FuzzCheck(series.step_times_seconds.size() == 3, "each series has the timed steps");
      for (double seconds : series.step_times_seconds) {
        FuzzCheck(seconds > 0, "every step time is positive");
      }
    }
  } else {
    FuzzCheck(run.timed_steps.empty(), "a failed run has no steps");
  }
  return 0;
}
