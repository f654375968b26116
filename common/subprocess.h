// Runs a program as a child process under a deadline and a cancellation: the worker's
// `command` backend's training launches and the `cuda` backend's paratune-probe (DESIGN.md
// §8), and the server's Slurm commands (§10). The child gets its own process group, so a
// launcher's own children (torchrun's ranks, srun's steps) are stopped with it; a child that
// outlives its deadline gets SIGTERM, then SIGKILL.
#ifndef PARATUNE_COMMON_SUBPROCESS_H_
#define PARATUNE_COMMON_SUBPROCESS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace paratune {

enum class OutputStream { kStdout, kStderr };

struct SubprocessOptions {
  // argv[0] is the program: a path, or a name looked up in PATH. No shell is involved; pass
  // {"/bin/sh", "-c", script} for one.
  std::vector<std::string> argv;
  // Set in (or replacing in) the inherited environment.
  std::map<std::string, std::string> env;
  // Where the child starts; empty means this process's working directory.
  std::string working_directory;
  // A file the child reads as its stdin; empty means /dev/null.
  std::string stdin_path;
  // Longest run; the child's process group is then stopped and the run ends kTimedOut.
  absl::Duration timeout = absl::InfiniteDuration();
  // How long a stopped child gets between SIGTERM and SIGKILL.
  absl::Duration kill_grace = absl::Seconds(5);
  // Bytes of each stream kept in the result: the last ones, where errors are.
  int64_t max_output_bytes = 1 << 20;
  // Called on the calling thread with every complete line (without its '\n') as it arrives,
  // and with a last partial line at the end. May be empty.
  std::function<void(OutputStream, absl::string_view line)> on_line;
};

struct SubprocessResult {
  enum class Ending {
    kExited,     // exit_code is set
    kSignaled,   // signal is set: the child died of it (a segfault, the OOM killer, ...)
    kTimedOut,   // the timeout passed; the child was stopped
    kCancelled,  // the cancellation was notified; the child was stopped
  };
  Ending ending = Ending::kExited;
  int exit_code = 0;
  int signal = 0;
  // The last max_output_bytes of each stream.
  std::string stdout_tail;
  std::string stderr_tail;
  absl::Duration wall_time;
};

// "exited with code 3", "killed by signal 11 (Segmentation fault)", "timed out after 10s",
// "cancelled": for messages.
std::string DescribeEnding(const SubprocessResult& result, absl::Duration timeout);

// Starts options.argv and waits for it, its timeout or `cancel`, whichever comes first; output
// is read as it comes so a chatty child never blocks. Blocks the calling thread. Errors:
// INVALID_ARGUMENT for an empty argv or a negative timeout; NOT_FOUND naming argv[0] when the
// program cannot be started (missing, not executable); INTERNAL for a failed system call.
// A child that ran is never an error, whatever its ending.
absl::StatusOr<SubprocessResult> RunSubprocess(const SubprocessOptions& options,
                                               const absl::Notification& cancel);

}  // namespace paratune

#endif  // PARATUNE_COMMON_SUBPROCESS_H_
