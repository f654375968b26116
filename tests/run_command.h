// Runs a command to completion for a test (promtool, sbatch, squeue, ...), feeding it
// stdin and capturing what it prints.
#ifndef PARATUNE_TESTS_RUN_COMMAND_H_
#define PARATUNE_TESTS_RUN_COMMAND_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/subprocess.h"

namespace paratune {

struct CommandResult {
  // How it ended (DescribeEnding in common/subprocess.h tells it in words); its stream
  // tails are empty: `output` has the output.
  SubprocessResult run;
  // stdout and stderr, line by line in the order the lines were read.
  std::string output;
  // Exited with code 0.
  bool succeeded() const;
};

struct CommandOptions {
  std::string stdin_text;
  // Added to (or replacing in) the test's environment.
  std::map<std::string, std::string> environment;
  // The command is killed after this long.
  absl::Duration timeout = absl::Seconds(60);
};

// Runs argv[0] (a path, or a name looked up in PATH) with `argv`. NOT_FOUND when it cannot be
// started; DEADLINE_EXCEEDED, with its output so far, when it overruns the timeout.
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         const CommandOptions& options = {});

// Where a program is in PATH; NOT_FOUND naming it and `package` (the Debian package that
// scripts/setup.sh installs) when it is missing.
absl::StatusOr<std::string> FindProgram(const std::string& name, const std::string& package);

}  // namespace paratune

#endif  // PARATUNE_TESTS_RUN_COMMAND_H_
