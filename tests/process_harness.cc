#include "tests/process_harness.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

extern char** environ;

namespace paratune {
namespace {

constexpr absl::Duration kPollInterval = absl::Milliseconds(20);

}  // namespace

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(
    const std::vector<std::string>& argv) {
  if (argv.empty()) return absl::InvalidArgumentError("argv must name the executable");
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);

  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  // A group of its own, so Terminate reaches anything the child starts too.
  posix_spawnattr_setpgroup(&attributes, 0);
  sigset_t no_signals;
  sigemptyset(&no_signals);
  posix_spawnattr_setsigmask(&attributes, &no_signals);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  const int error = posix_spawn(&pid, args[0], nullptr, &attributes, args.data(), environ);
  posix_spawnattr_destroy(&attributes);
  if (error != 0) {
    return absl::InternalError(absl::StrCat("cannot start ", argv[0], ": ", std::strerror(error)));
  }
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid, argv[0]));
}

ChildProcess::~ChildProcess() { Terminate(); }

std::optional<int> ChildProcess::Poll() {
  if (exit_status_.has_value()) return exit_status_;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) exit_status_ = status;
  return exit_status_;
}

int ChildProcess::Terminate(absl::Duration grace) {
  if (Poll().has_value()) {
    // The leader is gone; anything left in its group still goes.
    kill(-pid_, SIGKILL);
    return *exit_status_;
  }
  kill(-pid_, SIGTERM);
  const absl::Time give_up = absl::Now() + grace;
  while (!Poll().has_value() && absl::Now() < give_up) absl::SleepFor(kPollInterval);
  return Kill();
}

int ChildProcess::Kill() {
  kill(-pid_, SIGKILL);
  if (!exit_status_.has_value()) {
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    exit_status_ = status;
  }
  return *exit_status_;
}

absl::StatusOr<int> WaitForPortFile(const std::string& path, absl::Duration timeout,
                                    ChildProcess& process) {
  const absl::Time give_up = absl::Now() + timeout;
  while (true) {
    std::ifstream file(path);
    std::stringstream contents;
    contents << file.rdbuf();
    int port = 0;
    if (file && absl::SimpleAtoi(absl::StripAsciiWhitespace(contents.str()), &port) && port > 0) {
      return port;
    }
    if (std::optional<int> status = process.Poll(); status.has_value()) {
      return absl::UnavailableError(absl::StrCat(
          process.name(), " exited (", DescribeExitStatus(*status), ") before writing ", path));
    }
    if (absl::Now() >= give_up) {
      return absl::DeadlineExceededError(absl::StrCat(process.name(), " did not write ", path,
                                                      " within ", absl::FormatDuration(timeout)));
    }
    absl::SleepFor(kPollInterval);
  }
}

std::string DescribeExitStatus(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exit code ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return absl::StrCat("signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
  }
  return absl::StrCat("status ", status);
}

}  // namespace paratune
