#include "server/slurm/slurm_client.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "common/subprocess.h"

namespace paratune {
namespace {

// squeue's columns: job id, state, reason, name. The name comes last because it is the one
// column that may hold the separator.
constexpr char kSqueueFormat[] = "%i|%T|%r|%j";

// What Slurm's tools print for a job slurmctld no longer knows.
constexpr char kInvalidJobId[] = "Invalid job id specified";

std::string Message(const CommandOutput& output) {
  return std::string(absl::StripAsciiWhitespace(
      absl::StrCat(output.stderr_text, output.stderr_text.empty() ? "" : " ", output.stdout_text)));
}

absl::Status Failed(absl::string_view command, const CommandOutput& output) {
  return absl::UnavailableError(
      absl::StrCat(command, " exited with code ", output.exit_code, ": ", Message(output)));
}

// "CANCELLED by 0" -> "CANCELLED": sacct names who cancelled a job.
std::string StateWord(absl::string_view state) {
  return std::string(state.substr(0, state.find(' ')));
}

// States of a job that has not ended, which sacct may still show for a job that squeue no
// longer lists until slurmctld's record of its end reaches the database.
bool Unfinished(absl::string_view state) {
  for (absl::string_view live :
       {"PENDING", "RUNNING", "REQUEUED", "RESIZING", "SUSPENDED", "COMPLETING", "CONFIGURING"}) {
    if (state == live) return true;
  }
  return false;
}

}  // namespace

CommandRunner SubprocessCommandRunner(absl::Duration timeout, const absl::Notification* cancel) {
  return [timeout, cancel](const std::vector<std::string>& argv) -> absl::StatusOr<CommandOutput> {
    SubprocessOptions options;
    options.argv = argv;
    options.timeout = timeout;
    // Enough for squeue on a busy cluster; Slurm's tools print nothing large otherwise.
    options.max_output_bytes = 16 << 20;
    PT_ASSIGN_OR_RETURN(const SubprocessResult result, RunSubprocess(options, *cancel));
    if (result.ending != SubprocessResult::Ending::kExited) {
      return absl::UnavailableError(
          absl::StrCat(argv[0], " ", DescribeEnding(result, timeout), ": ", result.stderr_tail));
    }
    return CommandOutput{result.exit_code, result.stdout_tail, result.stderr_tail};
  };
}

SlurmClient::SlurmClient(Commands commands, CommandRunner run)
    : commands_(std::move(commands)), run_(std::move(run)) {}

absl::StatusOr<int64_t> SlurmClient::Submit(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {commands_.sbatch, "--parsable"};
  argv.insert(argv.end(), args.begin(), args.end());
  PT_ASSIGN_OR_RETURN(const CommandOutput output, run_(argv));
  // squeue answers before each submission, so an sbatch that ran and exited non-zero refused
  // the job itself (partition, account, QOS, GRES), as it will refuse the same job again.
  if (output.exit_code != 0) {
    return absl::FailedPreconditionError(Failed("sbatch", output).message());
  }
  // --parsable prints "ID" or "ID;CLUSTER".
  const absl::string_view printed = absl::StripAsciiWhitespace(output.stdout_text);
  int64_t job = 0;
  if (!absl::SimpleAtoi(printed.substr(0, printed.find(';')), &job) || job <= 0) {
    return absl::UnavailableError(
        absl::StrCat("sbatch printed no job id: \"", printed.substr(0, 200), "\""));
  }
  return job;
}

absl::StatusOr<std::vector<SlurmClient::Job>> SlurmClient::ListJobs() {
  PT_ASSIGN_OR_RETURN(const CommandOutput output, run_({commands_.squeue, "--me", "--noheader",
                                                        absl::StrCat("--format=", kSqueueFormat)}));
  if (output.exit_code != 0) return Failed("squeue", output);
  std::vector<Job> jobs;
  for (absl::string_view line : absl::StrSplit(output.stdout_text, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> columns = absl::StrSplit(line, absl::MaxSplits('|', 3));
    Job job;
    // Array and heterogeneous jobs ("12_3", "12+1") are never the launcher's: skipped.
    if (columns.size() != 4 || !absl::SimpleAtoi(columns[0], &job.id)) continue;
    job.state = std::string(columns[1]);
    job.reason = std::string(columns[2]);
    job.name = std::string(columns[3]);
    jobs.push_back(std::move(job));
  }
  return jobs;
}

absl::StatusOr<SlurmClient::Ending> SlurmClient::FinalState(int64_t job) {
  if (absl::StatusOr<Ending> accounted = FinalStateFromAccounting(job);
      accounted.ok() || accounted.status().code() != absl::StatusCode::kNotFound) {
    return accounted;
  }
  PT_ASSIGN_OR_RETURN(const CommandOutput output,
                      run_({commands_.scontrol, "show", "job", absl::StrCat(job)}));
  if (output.exit_code != 0) {
    if (absl::StrContains(Message(output), kInvalidJobId)) {
      return absl::NotFoundError(absl::StrCat("Slurm no longer knows job ", job));
    }
    return Failed("scontrol show job", output);
  }
  Ending ending;
  for (absl::string_view word :
       absl::StrSplit(output.stdout_text, absl::ByAnyChar(" \n"), absl::SkipEmpty())) {
    if (absl::ConsumePrefix(&word, "JobState=")) ending.state = std::string(word);
    if (absl::ConsumePrefix(&word, "ExitCode=")) ending.exit_code = std::string(word);
  }
  if (ending.state.empty()) {
    return absl::UnavailableError(
        absl::StrCat("scontrol show job ", job, " printed no JobState: ", Message(output)));
  }
  return ending;
}

absl::StatusOr<SlurmClient::Ending> SlurmClient::FinalStateFromAccounting(int64_t job) {
  if (accounting_disabled_) return absl::NotFoundError("accounting storage is disabled");
  PT_ASSIGN_OR_RETURN(const CommandOutput output,
                      run_({commands_.sacct, "--noheader", "--parsable2", "--allocations",
                            absl::StrCat("--jobs=", job), "--format=JobID,State,ExitCode"}));
  if (output.exit_code != 0) {
    accounting_disabled_ = absl::StrContains(Message(output), "accounting storage is disabled");
    return absl::NotFoundError(absl::StrCat("sacct: ", Message(output)));
  }
  for (absl::string_view line : absl::StrSplit(output.stdout_text, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> columns = absl::StrSplit(line, '|');
    if (columns.size() == 3 && columns[0] == absl::StrCat(job) &&
        !Unfinished(StateWord(columns[1]))) {
      return Ending{StateWord(columns[1]), std::string(columns[2])};
    }
  }
  // The job ended moments ago and the record of its end has not reached the database yet.
  return absl::NotFoundError(absl::StrCat("sacct has no record of job ", job));
}

absl::Status SlurmClient::Cancel(int64_t job) {
  PT_ASSIGN_OR_RETURN(const CommandOutput output, run_({commands_.scancel, absl::StrCat(job)}));
  if (output.exit_code != 0 && !absl::StrContains(Message(output), kInvalidJobId)) {
    return Failed("scancel", output);
  }
  return absl::OkStatus();
}

}  // namespace paratune
