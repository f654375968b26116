// How a command backend probe ended, from how its process ended and what its log said.
#ifndef PARATUNE_WORKER_COMMAND_OUTCOME_H_
#define PARATUNE_WORKER_COMMAND_OUTCOME_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/subprocess.h"
#include "proto/probe.pb.h"
#include "worker/training_log.h"

namespace paratune {

struct CommandOutcome {
  v1::ProbeOutcome outcome = v1::PROBE_OUTCOME_UNSPECIFIED;
  // The timed step times (seconds), for PROBE_OK only.
  std::vector<double> timed_step_times;
  // Why, for people: the failure with the log line that shows it and the output's last lines.
  std::string message;
};

// What the run had to do: `dropped_iterations` logged step times to skip (the template's
// extra warm-up and the probe's warm-up), then `timed_steps` to keep.
struct ExpectedSteps {
  int64_t dropped_iterations = 0;
  int64_t timed_steps = 0;
  // A gang member's run may log no step time at all: frameworks log iteration times on one
  // rank (Megatron-LM: the last), so only that node's run times the steps.
  bool untimed_allowed = false;
};

// The outcome of a run that ended otherwise than cancelled (DescribeStoppedRun), checked in
// this order:
//   1. exited 0 but a step line could not be read (log.unreadable_step_line()): PROBE_CRASH
//      saying why;
//   2. exited 0 and logged exactly the expected step times, each > 0: PROBE_OK; or, when
//      expected.untimed_allowed, exited 0 and logged none: PROBE_OK without step times;
//   3. printed an out-of-memory mark: PROBE_OUT_OF_MEMORY (whatever came after: a rank that
//      runs out of memory often leaves the others hanging until the timeout);
//   4. printed a NCCL failure mark: PROBE_CRASH, "NCCL error: ..." (the configuration failed
//      as run: paratune cannot tell a bad link from a layout the job cannot run, and a retry
//      on other nodes would cost a whole probe each time; node health is the cluster's
//      health checks' business);
//   5. timed out: PROBE_TIMEOUT;
//   6. killed by a signal or exited non-zero: PROBE_CRASH with the output's last lines;
//   7. exited 0 with fewer step times than expected, more, or one that is not > 0:
//      PROBE_CRASH saying so (the run stopped early, or the step_time pattern does not fit
//      its log), naming where step times are read from (TrainingLogPatterns).
// `timeout` is the run's limit, for the message.
CommandOutcome ClassifyCommandRun(const SubprocessResult& run, const TrainingLog& log,
                                  const ExpectedSteps& expected, absl::Duration timeout);

// What a run that was stopped (cancelled: the worker told the probe to stop) had done, for
// the message: "the run was stopped, after logging 2 of 5 step times" and the output's last
// lines.
std::string DescribeStoppedRun(const SubprocessResult& run, const TrainingLog& log,
                               const ExpectedSteps& expected);

}  // namespace paratune

#endif  // PARATUNE_WORKER_COMMAND_OUTCOME_H_
