// Real child processes for end-to-end tests: spawn in their own process group, wait for a
// port file, and always end them (SIGTERM, then SIGKILL) even when a test fails.
#ifndef PARATUNE_TESTS_PROCESS_HARNESS_H_
#define PARATUNE_TESTS_PROCESS_HARNESS_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace paratune {

// A child process and its process group. Thread-compatible.
class ChildProcess {
 public:
  // Starts argv[0] (a path) with `argv`, stdout and stderr going to the test's log, in a new
  // process group. INTERNAL when the executable cannot be started.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Spawn(const std::vector<std::string>& argv);

  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // Terminate()s.
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  const std::string& name() const { return name_; }

  // The waitpid status once the process has exited; nullopt while it runs. Never blocks.
  std::optional<int> Poll();

  // Sends SIGTERM to the group, waits up to `grace` for the process to exit, then sends
  // SIGKILL to the group and reaps it. Returns the waitpid status. Idempotent.
  int Terminate(absl::Duration grace = absl::Seconds(10));

  // kill -9 of the group, as a crash or the OOM killer would: no chance to clean up. Reaps
  // it and returns the waitpid status. Idempotent.
  int Kill();

 private:
  ChildProcess(pid_t pid, std::string name) : pid_(pid), name_(std::move(name)) {}

  const pid_t pid_;
  const std::string name_;
  std::optional<int> exit_status_;
};

// Polls `path` every 20 ms until it holds a port number (written atomically by the server),
// for at most `timeout`. DEADLINE_EXCEEDED when it does not appear in time; UNAVAILABLE when
// `process` exits first.
absl::StatusOr<int> WaitForPortFile(const std::string& path, absl::Duration timeout,
                                    ChildProcess& process);

// "exit code 3", "signal 9 (Killed)" for a waitpid status.
std::string DescribeExitStatus(int status);

}  // namespace paratune

#endif  // PARATUNE_TESTS_PROCESS_HARNESS_H_
