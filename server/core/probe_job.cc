#include "server/core/probe_job.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace paratune {
namespace {

constexpr size_t kMaxPrefixBytes = 64;

// Worker flags that the job sets itself.
constexpr const char* kLauncherWorkerFlags[] = {"server", "backend", "labels", "exit_after_probes"};

// `text` as one word of a POSIX shell script.
std::string ShellQuoted(absl::string_view text) {
  return absl::StrCat("'", absl::StrReplaceAll(text, {{"'", "'\\''"}}), "'");
}

// The flag a worker argument sets: "labels" of "--labels=a=b" or "-labels"; empty for an
// argument that is not a flag.
absl::string_view FlagName(absl::string_view arg) {
  if (!absl::ConsumePrefix(&arg, "-")) return "";
  absl::ConsumePrefix(&arg, "-");
  return arg.substr(0, arg.find('='));
}

// The batch script: one worker per node, which registers reserved for the probe, runs it and
// exits; --kill-on-bad-exit stops a gang whose member failed.
std::string JobScript(const ProbeJobOptions& options, const PendingProbe& probe) {
  std::vector<std::string> words = {
      "exec srun --ntasks-per-node=1 --kill-on-bad-exit=1", ShellQuoted(options.worker_binary),
      ShellQuoted(absl::StrCat("--server=", options.server_address)),
      ShellQuoted(absl::StrCat("--backend=", probe.backend)), "--exit_after_probes=1",
      // The job id comes from the job's environment.
      absl::StrCat(ShellQuoted("--labels=slurm_job_id="), "\"$SLURM_JOB_ID\"",
                   ShellQuoted(absl::StrCat(",", kProbeReservationLabel, "=", probe.probe)))};
  for (const std::string& arg : options.worker_args) words.push_back(ShellQuoted(arg));
  return absl::StrJoin(words, " ");
}

}  // namespace

absl::Status ValidateProbeJobOptions(const ProbeJobOptions& options) {
  const std::string& prefix = options.job_name_prefix;
  if (prefix.empty() || prefix.size() > kMaxPrefixBytes ||
      !std::all_of(prefix.begin(), prefix.end(), [](char c) {
        return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '-';
      })) {
    return absl::InvalidArgumentError(
        absl::StrCat("job_name_prefix (\"", absl::CHexEscape(prefix.substr(0, kMaxPrefixBytes)),
                     "\") must be 1 to ", kMaxPrefixBytes, " letters, digits, '_', '.' or '-'"));
  }
  if (options.worker_binary.empty()) {
    return absl::InvalidArgumentError("worker_binary (\"\") must name paratune-worker");
  }
  if (options.startup_allowance <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "startup_allowance (", absl::FormatDuration(options.startup_allowance), ") must be > 0"));
  }
  for (const std::string& flag : options.required_worker_flags) {
    if (std::none_of(options.worker_args.begin(), options.worker_args.end(),
                     [&flag](const std::string& arg) { return FlagName(arg) == flag; })) {
      return absl::InvalidArgumentError(absl::StrCat(
          "worker_args (\"", absl::CHexEscape(absl::StrJoin(options.worker_args, " ")),
          "\") set no --", flag,
          ", which the jobs' workers need to reach this server (it has TLS, requires client "
          "certificates or checks tokens): pass the path of the file on the compute nodes"));
    }
  }
  for (const std::string& arg : options.worker_args) {
    for (const char* flag : kLauncherWorkerFlags) {
      if (FlagName(arg) == flag) {
        return absl::InvalidArgumentError(
            absl::StrCat("worker_args (\"", absl::CHexEscape(arg),
                         "\") sets a flag the launcher sets itself (--server, --backend, "
                         "--labels, --exit_after_probes)"));
      }
    }
  }
  return absl::OkStatus();
}

std::string ProbeJobName(absl::string_view prefix, const ProbeId& probe) {
  return absl::StrCat(prefix, "-s", probe.search_id, "-c", probe.candidate, "-a", probe.attempt);
}

std::optional<ProbeId> ProbeOfJobName(absl::string_view prefix, absl::string_view job_name) {
  absl::string_view rest = job_name;
  if (!absl::ConsumePrefix(&rest, prefix) || !absl::ConsumePrefix(&rest, "-s")) {
    return std::nullopt;
  }
  std::vector<absl::string_view> parts = absl::StrSplit(rest, absl::MaxSplits("-c", 1));
  if (parts.size() != 2) return std::nullopt;
  std::vector<absl::string_view> tail = absl::StrSplit(parts[1], absl::MaxSplits("-a", 1));
  ProbeId probe;
  if (tail.size() != 2 || !absl::SimpleAtoi(parts[0], &probe.search_id) ||
      !absl::SimpleAtoi(tail[0], &probe.candidate) || !absl::SimpleAtoi(tail[1], &probe.attempt) ||
      ProbeJobName(prefix, probe) != job_name) {
    return std::nullopt;
  }
  return probe;
}

absl::StatusOr<ProbeJob> MakeProbeJob(const ProbeJobOptions& options, const PendingProbe& probe) {
  absl::StatusOr<ProbeId> id = ParseProbeName("probe", probe.probe);
  if (!id.ok()) return id.status();
  const int64_t per_node =
      probe.group_size > 0 ? probe.gpus_per_node / probe.group_size * probe.group_size : 0;
  if (per_node <= 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("a tensor x context parallel group of ", probe.group_size,
                     " ranks does not fit a node of ", probe.gpus_per_node, " GPUs"));
  }
  ProbeJob job;
  job.name = ProbeJobName(options.job_name_prefix, *id);
  job.nodes = (probe.ranks + per_node - 1) / per_node;
  const int64_t minutes = static_cast<int64_t>(
      std::ceil(absl::ToDoubleMinutes(probe.deadline + options.startup_allowance)));
  job.sbatch_args = {
      absl::StrCat("--job-name=", job.name),
      absl::StrCat("--nodes=", job.nodes),
      "--ntasks-per-node=1",
      absl::StrCat("--time=", std::max<int64_t>(minutes, 1)),
      // A job Slurm requeued would start workers for a probe attempt that has moved on.
      "--no-requeue",
  };
  std::vector<std::string>& args = job.sbatch_args;
  if (options.request_gpus) args.push_back(absl::StrCat("--gpus-per-node=", probe.gpus_per_node));
  if (options.exclusive) args.push_back("--exclusive");
  if (!options.partition.empty()) args.push_back(absl::StrCat("--partition=", options.partition));
  if (!options.account.empty()) args.push_back(absl::StrCat("--account=", options.account));
  if (!options.output.empty()) args.push_back(absl::StrCat("--output=", options.output));
  args.insert(args.end(), options.extra_sbatch_args.begin(), options.extra_sbatch_args.end());
  args.push_back(absl::StrCat("--wrap=", JobScript(options, probe)));
  return job;
}

}  // namespace paratune
