#include "worker/cuda_backend.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/notification.h"
#include "common/status_macros.h"
#include "common/subprocess.h"
#include "worker/cuda_probe_outcome.h"
#include "worker/probe/gpu_inventory.h"
#include "worker/probe/probe_exit_codes.h"
#include "worker/probe/probe_spec.h"

namespace paratune {
namespace {

// How often gang[0]'s backend looks for its probe's NCCL id and at the cancellation.
constexpr absl::Duration kWatchInterval = absl::Milliseconds(20);

// A directory of its own for one probe, removed with everything in it.
class ScratchDirectory {
 public:
  static absl::StatusOr<ScratchDirectory> Create(const std::string& parent) {
    std::string path = parent + "/paratune-probe-XXXXXX";
    if (mkdtemp(path.data()) == nullptr) {
      return absl::UnavailableError(
          absl::StrCat("cannot create a probe directory in \"", parent, "\": ", strerror(errno)));
    }
    return ScratchDirectory(std::move(path));
  }
  ScratchDirectory(ScratchDirectory&& other) : path_(std::exchange(other.path_, "")) {}
  ScratchDirectory(const ScratchDirectory&) = delete;
  ~ScratchDirectory() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  std::string File(const char* name) const { return path_ + "/" + name; }

 private:
  explicit ScratchDirectory(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return std::nullopt;
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

absl::Status WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << contents;
  file.close();
  if (!file) return absl::UnavailableError(absl::StrCat("cannot write \"", path, "\""));
  return absl::OkStatus();
}

// Forwards the context's stop to the notification the probe process is run under,
// and for gang[0] publishes the NCCL id once the probe has written it (the probe writes it
// atomically, so a file that exists is whole). Stopped by Finish().
class ProbeWatcher {
 public:
  // `id_file` empty: nothing to publish.
  ProbeWatcher(ProbeContext& context, std::string id_file)
      : context_(context), id_file_(std::move(id_file)), thread_([this] { Watch(); }) {}
  // Stops the watch on every path; the run's own path reads the rendezvous' error from
  // Finish() first, and on an early return another error is already the answer.
  ~ProbeWatcher() { Finish().IgnoreError(); }

  // What the probe runs under.
  const absl::Notification& stop() const { return stop_; }

  // Ends the watch; afterwards the rendezvous' error, if it failed.
  absl::Status Finish() {
    if (!finished_.HasBeenNotified()) finished_.Notify();
    if (thread_.joinable()) thread_.join();
    return rendezvous_;
  }

 private:
  void Watch() {
    bool publish = !id_file_.empty();
    while (!finished_.WaitForNotificationWithTimeout(kWatchInterval)) {
      if (context_.stop().HasBeenNotified()) break;
      if (!publish) continue;
      const std::optional<std::string> id = ReadFile(id_file_);
      if (!id.has_value() || id->empty()) continue;
      publish = false;
      absl::StatusOr<std::string> token = context_.Rendezvous(*id);
      if (!token.ok()) {
        rendezvous_ = token.status();
        break;
      }
    }
    if (!stop_.HasBeenNotified()) stop_.Notify();
  }

  ProbeContext& context_;
  const std::string id_file_;
  absl::Notification stop_;
  absl::Notification finished_;
  absl::Status rendezvous_;  // written by the thread before it ends; read after join
  std::thread thread_;
};

}  // namespace

absl::StatusOr<ProbeRun> CudaBackend::Run(const ProbeSpec& spec, ProbeContext& context) {
  PT_RETURN_IF_ERROR(CheckCudaProbeRuns(spec));
  PT_RETURN_IF_ERROR(WaitUnlessStopped(context, absl::ZeroDuration(), spec));
  PT_ASSIGN_OR_RETURN(ScratchDirectory scratch,
                      ScratchDirectory::Create(options_.scratch_directory));
  const std::string assignment_file = scratch.File("assignment.pb");
  const std::string report_file = scratch.File("report.pb");
  PT_RETURN_IF_ERROR(WriteFile(assignment_file, spec.assignment().SerializeAsString()));

  SubprocessOptions run;
  run.argv = {options_.probe_binary, "--assignment=" + assignment_file, "--result=" + report_file};
  run.env = options_.environment;
  run.kill_grace = options_.kill_grace;
  run.max_output_bytes = 64 << 10;
  std::string id_file;
  if (spec.spans_processes()) {
    if (spec.creates_nccl_id()) {
      id_file = scratch.File("nccl_id");
      run.argv.push_back("--nccl_id_out=" + id_file);
    } else {
      // Blocks until gang[0]'s probe has created the id (CANCELLED if the probe is
      // stopped first).
      PT_ASSIGN_OR_RETURN(const std::string token, context.Rendezvous(""));
      run.argv.push_back("--nccl_id=" + token);
    }
  }

  ProbeWatcher watcher(context, id_file);
  absl::StatusOr<SubprocessResult> ran = RunSubprocess(run, watcher.stop());
  PT_RETURN_IF_ERROR(watcher.Finish());
  if (!ran.ok()) {
    return absl::UnavailableError(
        absl::StrCat("cannot run paratune-probe: ", ran.status().message()));
  }
  if (ran->ending == SubprocessResult::Ending::kCancelled) {
    return absl::CancelledError(DescribeStoppedProbe(*ran));
  }
  return RunFromProbeProcess(spec, *ran, ReadFile(report_file));
}

absl::StatusOr<std::vector<v1::Gpu>> ListProbeGpus(const std::string& probe_binary,
                                                   absl::Duration timeout) {
  SubprocessOptions run;
  run.argv = {probe_binary, "--list_gpus"};
  run.timeout = timeout;
  absl::Notification never;
  PT_ASSIGN_OR_RETURN(const SubprocessResult listed, RunSubprocess(run, never));
  const std::string stderr_text(absl::StripAsciiWhitespace(listed.stderr_tail));
  switch (listed.ending) {
    case SubprocessResult::Ending::kTimedOut:
      return absl::DeadlineExceededError(
          absl::StrCat(probe_binary, " --list_gpus ", DescribeEnding(listed, timeout)));
    case SubprocessResult::Ending::kExited:
      if (listed.exit_code == kProbeExitNoGpu) {
        return absl::UnavailableError(absl::StrCat(probe_binary, " --list_gpus: ", stderr_text));
      }
      if (listed.exit_code == kProbeExitResultWritten) break;
      [[fallthrough]];
    default:
      return absl::InternalError(absl::StrCat(probe_binary, " --list_gpus ",
                                              DescribeEnding(listed, timeout), ": ", stderr_text));
  }
  absl::StatusOr<std::vector<v1::Gpu>> gpus = ParseGpuInventory(listed.stdout_tail);
  if (!gpus.ok()) {
    return absl::InternalError(
        absl::StrCat(probe_binary, " --list_gpus printed no GPU list: ", gpus.status().message()));
  }
  return gpus;
}

}  // namespace paratune
