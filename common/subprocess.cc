#include "common/subprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

extern char** environ;

namespace paratune {
namespace {

// How often the wait loop looks at the cancellation while the child is quiet.
constexpr absl::Duration kPollInterval = absl::Milliseconds(20);
// Longest wait for the pipes to close once the child is gone.
constexpr absl::Duration kFinalDrain = absl::Seconds(1);

absl::Status ErrnoError(absl::string_view what, int error) {
  return absl::InternalError(absl::StrCat(what, ": ", strerror(error)));
}

// One of the child's output pipes: what is kept of it and the line being assembled.
struct Stream {
  OutputStream which;
  int fd = -1;
  std::string tail;
  std::string partial_line;

  void Close() {
    if (fd >= 0) close(fd);
    fd = -1;
  }
};

void Consume(Stream& stream, absl::string_view data, const SubprocessOptions& options) {
  stream.tail.append(data.data(), data.size());
  const size_t max = static_cast<size_t>(std::max<int64_t>(options.max_output_bytes, 0));
  // Trimming only past twice the limit keeps appends amortised O(1).
  if (stream.tail.size() > 2 * max) stream.tail.erase(0, stream.tail.size() - max);
  if (!options.on_line) return;
  stream.partial_line.append(data.data(), data.size());
  size_t start = 0;
  for (size_t newline; (newline = stream.partial_line.find('\n', start)) != std::string::npos;
       start = newline + 1) {
    options.on_line(stream.which,
                    absl::string_view(stream.partial_line).substr(start, newline - start));
  }
  stream.partial_line.erase(0, start);
}

// Reads what the pipe has now; closes it at end of file.
void Drain(Stream& stream, const SubprocessOptions& options) {
  std::array<char, 64 * 1024> buffer;
  while (stream.fd >= 0) {
    const ssize_t n = read(stream.fd, buffer.data(), buffer.size());
    if (n > 0) {
      Consume(stream, absl::string_view(buffer.data(), static_cast<size_t>(n)), options);
    } else if (n == 0) {
      stream.Close();
    } else if (errno == EINTR) {
      continue;
    } else {
      // EAGAIN: nothing more for now. Anything else: the pipe is unusable; stop reading it.
      if (errno != EAGAIN) stream.Close();
      return;
    }
  }
}

// Waits up to `timeout` for output on the open streams and reads it.
void PollAndDrain(std::array<Stream, 2>& streams, absl::Duration timeout,
                  const SubprocessOptions& options) {
  std::array<pollfd, 2> fds;
  int count = 0;
  for (Stream& stream : streams) {
    if (stream.fd >= 0) fds[count++] = pollfd{stream.fd, POLLIN, 0};
  }
  const int timeout_ms = static_cast<int>(absl::ToInt64Milliseconds(timeout));
  if (count == 0) {
    if (timeout_ms > 0) absl::SleepFor(timeout);
    return;
  }
  if (poll(fds.data(), count, timeout_ms) <= 0) return;
  for (Stream& stream : streams) Drain(stream, options);
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

std::vector<std::string> Environment(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const absl::string_view item(*entry);
    const absl::string_view key = item.substr(0, item.find('='));
    if (overrides.count(std::string(key)) == 0) env.emplace_back(item);
  }
  for (const auto& [key, value] : overrides) env.push_back(absl::StrCat(key, "=", value));
  return env;
}

// Reaps the child if it has exited; returns its wait status.
std::optional<int> TryReap(pid_t pid, bool block) {
  int status = 0;
  while (true) {
    const pid_t reaped = waitpid(pid, &status, block ? 0 : WNOHANG);
    if (reaped == pid) return status;
    if (reaped == -1 && errno == EINTR) continue;
    return std::nullopt;
  }
}

}  // namespace

std::string DescribeEnding(const SubprocessResult& result, absl::Duration timeout) {
  switch (result.ending) {
    case SubprocessResult::Ending::kExited:
      return absl::StrCat("exited with code ", result.exit_code);
    case SubprocessResult::Ending::kSignaled:
      return absl::StrCat("killed by signal ", result.signal, " (", strsignal(result.signal), ")");
    case SubprocessResult::Ending::kTimedOut:
      return absl::StrCat("timed out after ", absl::FormatDuration(timeout));
    case SubprocessResult::Ending::kCancelled:
      return "cancelled";
  }
  return "ended";
}

absl::StatusOr<SubprocessResult> RunSubprocess(const SubprocessOptions& options,
                                               const absl::Notification& cancel) {
  if (options.argv.empty()) return absl::InvalidArgumentError("argv (empty) must name a program");
  if (options.timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("timeout (", absl::FormatDuration(options.timeout), ") must be >= 0"));
  }
  std::array<Stream, 2> streams{Stream{OutputStream::kStdout}, Stream{OutputStream::kStderr}};
  std::array<int, 2> child_ends{-1, -1};
  for (int i = 0; i < 2; ++i) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      const int error = errno;
      for (Stream& stream : streams) stream.Close();
      for (int fd : child_ends) {
        if (fd >= 0) close(fd);
      }
      return ErrnoError("pipe2", error);
    }
    streams[i].fd = fds[0];
    child_ends[i] = fds[1];
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, child_ends[0], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, child_ends[1], STDERR_FILENO);
  const std::string stdin_path = options.stdin_path.empty() ? "/dev/null" : options.stdin_path;
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, stdin_path.c_str(), O_RDONLY, 0);
  if (!options.working_directory.empty()) {
    posix_spawn_file_actions_addchdir_np(&actions, options.working_directory.c_str());
  }
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  // Its own process group, so that stopping it stops everything it started; default signal
  // dispositions and an empty mask, whatever this daemon blocks.
  sigset_t no_signals, all_signals;
  sigemptyset(&no_signals);
  sigfillset(&all_signals);
  posix_spawnattr_setsigmask(&attributes, &no_signals);
  posix_spawnattr_setsigdefault(&attributes, &all_signals);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> argv_strings = options.argv;
  std::vector<std::string> env_strings = Environment(options.env);
  std::vector<char*> argv = Pointers(argv_strings);
  std::vector<char*> envp = Pointers(env_strings);
  pid_t pid = 0;
  const absl::Time start = absl::Now();
  const int spawn_error =
      posix_spawnp(&pid, argv[0], &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  for (int fd : child_ends) close(fd);
  if (spawn_error != 0) {
    for (Stream& stream : streams) stream.Close();
    return absl::NotFoundError(absl::StrCat(
        "cannot start \"", options.argv[0], "\"",
        options.working_directory.empty() ? ""
                                          : absl::StrCat(" in \"", options.working_directory, "\""),
        ": ", strerror(spawn_error)));
  }

  SubprocessResult result;
  std::optional<int> status;
  const absl::Time deadline = options.timeout == absl::InfiniteDuration() ? absl::InfiniteFuture()
                                                                          : start + options.timeout;
  while (!status.has_value()) {
    if (cancel.HasBeenNotified() || absl::Now() >= deadline) {
      result.ending = cancel.HasBeenNotified() ? SubprocessResult::Ending::kCancelled
                                               : SubprocessResult::Ending::kTimedOut;
      kill(-pid, SIGTERM);
      const absl::Time kill_at = absl::Now() + options.kill_grace;
      while (!(status = TryReap(pid, false)).has_value() && absl::Now() < kill_at) {
        PollAndDrain(streams, std::min(kPollInterval, kill_at - absl::Now()), options);
      }
      kill(-pid, SIGKILL);
      if (!status.has_value()) status = TryReap(pid, true);
      break;
    }
    PollAndDrain(streams, std::min(kPollInterval, deadline - absl::Now()), options);
    status = TryReap(pid, false);
  }
  // Whatever the leader left running in its group (a stray rank holding a GPU) goes with it.
  kill(-pid, SIGKILL);
  // Read what was written before the end. A process that left the group (setsid) and keeps
  // a pipe open would hold it forever, so reading is bounded.
  const absl::Time stop_reading = absl::Now() + kFinalDrain;
  while ((streams[0].fd >= 0 || streams[1].fd >= 0) && absl::Now() < stop_reading) {
    PollAndDrain(streams, kPollInterval, options);
  }
  for (Stream& stream : streams) stream.Close();
  result.wall_time = absl::Now() - start;
  if (result.ending != SubprocessResult::Ending::kCancelled &&
      result.ending != SubprocessResult::Ending::kTimedOut && status.has_value()) {
    if (WIFEXITED(*status)) {
      result.ending = SubprocessResult::Ending::kExited;
      result.exit_code = WEXITSTATUS(*status);
    } else if (WIFSIGNALED(*status)) {
      result.ending = SubprocessResult::Ending::kSignaled;
      result.signal = WTERMSIG(*status);
    }
  }
  for (Stream& stream : streams) {
    if (options.on_line && !stream.partial_line.empty()) {
      options.on_line(stream.which, stream.partial_line);
    }
    const size_t max = static_cast<size_t>(std::max<int64_t>(options.max_output_bytes, 0));
    if (stream.tail.size() > max) stream.tail.erase(0, stream.tail.size() - max);
  }
  result.stdout_tail = std::move(streams[0].tail);
  result.stderr_tail = std::move(streams[1].tail);
  return result;
}

}  // namespace paratune
