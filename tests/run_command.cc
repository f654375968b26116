#include "tests/run_command.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

extern char** environ;

namespace paratune {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  static int counter = 0;
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/", name, ".", getpid(), ".", ++counter);
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

std::vector<std::string> Environment(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string variable = *entry;
    const std::string name = variable.substr(0, variable.find('='));
    if (overrides.count(name) == 0) environment.push_back(variable);
  }
  for (const auto& [name, value] : overrides) environment.push_back(name + "=" + value);
  return environment;
}

}  // namespace

bool CommandResult::succeeded() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         const CommandOptions& options) {
  if (argv.empty()) return absl::InvalidArgumentError("argv must name the program");
  const std::string input_path = TempPath("stdin");
  const std::string output_path = TempPath("output");
  {
    std::ofstream input(input_path);
    input << options.stdin_text;
  }
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> environment = Environment(options.environment);
  std::vector<char*> env;
  for (std::string& variable : environment) env.push_back(variable.data());
  env.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, input_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  // A group of its own, so a timeout kills whatever it started too.
  posix_spawnattr_setpgroup(&attributes, 0);
  sigset_t no_signals;
  sigemptyset(&no_signals);
  posix_spawnattr_setsigmask(&attributes, &no_signals);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  const int error = posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (error != 0) {
    return absl::InternalError(absl::StrCat("cannot start ", argv[0], ": ", std::strerror(error)));
  }
  const absl::Time give_up = absl::Now() + options.timeout;
  CommandResult result;
  while (true) {
    const pid_t done = waitpid(pid, &result.status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      return absl::InternalError(absl::StrCat("waitpid(", argv[0], "): ", std::strerror(errno)));
    }
    if (absl::Now() >= give_up) {
      kill(-pid, SIGKILL);
      waitpid(pid, &result.status, 0);
      return absl::DeadlineExceededError(absl::StrCat(argv[0], " did not finish within ",
                                                      absl::FormatDuration(options.timeout),
                                                      "; its output: ", ReadFile(output_path)));
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  result.output = ReadFile(output_path);
  std::remove(input_path.c_str());
  std::remove(output_path.c_str());
  return result;
}

absl::StatusOr<std::string> FindProgram(const std::string& name, const std::string& package) {
  const char* path = std::getenv("PATH");
  // Bazel's test environment has a short PATH; the Debian packages install into these.
  const std::string search = absl::StrCat(path != nullptr ? path : "", ":/usr/sbin:/usr/bin:/sbin");
  for (absl::string_view dir : absl::StrSplit(search, ':', absl::SkipEmpty())) {
    const std::string candidate = absl::StrCat(dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::NotFoundError(
      absl::StrCat(name, " is not installed (Debian package ", package, "); run scripts/setup.sh"));
}

}  // namespace paratune
