#include "tests/slurm_cluster.h"

#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/free_port.h"
#include "tests/metrics_text.h"

namespace paratune {
namespace {

constexpr absl::Duration kStartTimeout = absl::Seconds(60);
constexpr absl::Duration kPollInterval = absl::Milliseconds(200);
constexpr char kPartition[] = "paratune";

std::string Tail(const std::string& path, size_t bytes = 1500) {
  absl::StatusOr<std::string> text = ReadTextFile(path);
  if (!text.ok()) return "(no log)";
  return text->size() > bytes ? text->substr(text->size() - bytes) : *text;
}

// The "NodeName=... CPUs=... RealMemory=..." line `slurmd -C` prints for this machine.
absl::StatusOr<std::string> NodeLine(const std::string& slurmd) {
  absl::StatusOr<CommandResult> result = RunCommand({slurmd, "-C"});
  if (!result.ok()) return result.status();
  for (absl::string_view line : absl::StrSplit(result->output, '\n')) {
    if (absl::StartsWith(line, "NodeName=")) return std::string(line);
  }
  return absl::UnavailableError(absl::StrCat("slurmd -C printed no NodeName: ", result->output));
}

absl::Status WriteFile(const std::string& path, const std::string& contents, mode_t mode) {
  {
    std::ofstream file(path, std::ios::binary);
    file << contents;
    if (!file) return absl::InternalError(absl::StrCat("cannot write ", path));
  }
  if (chmod(path.c_str(), mode) != 0) return absl::InternalError(absl::StrCat("chmod ", path));
  return absl::OkStatus();
}

// Whether /proc/<pid>/environ holds `entry` (e.g. SLURM_CONF=/tmp/...).
bool EnvironHas(const std::string& pid, const std::string& entry) {
  std::ifstream file(absl::StrCat("/proc/", pid, "/environ"), std::ios::binary);
  std::stringstream contents;
  contents << file.rdbuf();
  for (absl::string_view variable : absl::StrSplit(contents.str(), '\0')) {
    if (variable == entry) return true;
  }
  return false;
}

struct ProcessStat {
  char state = '?';
  pid_t parent = -1;
};

// The state and parent pid from /proc/<pid>/stat.
ProcessStat StatOf(const std::string& pid) {
  std::ifstream file(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat;
  std::getline(file, stat);
  // pid (comm) state ppid ...; comm may hold spaces, so read after the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return {};
  std::vector<absl::string_view> fields = absl::StrSplit(stat.substr(close + 2), ' ');
  ProcessStat result;
  int parent = -1;
  if (fields.size() < 2 || fields[0].empty() || !absl::SimpleAtoi(fields[1], &parent)) return {};
  result.state = fields[0][0];
  result.parent = parent;
  return result;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SlurmCluster>> SlurmCluster::Start() {
  if (geteuid() != 0) {
    return absl::FailedPreconditionError(
        "a local Slurm needs root (slurmd starts jobs as their owner); run as root");
  }
  absl::StatusOr<std::string> munged = FindProgram("munged", "munge");
  if (!munged.ok()) return munged.status();
  absl::StatusOr<std::string> slurmctld = FindProgram("slurmctld", "slurm-wlm");
  if (!slurmctld.ok()) return slurmctld.status();
  absl::StatusOr<std::string> slurmd = FindProgram("slurmd", "slurm-wlm");
  if (!slurmd.ok()) return slurmd.status();
  // Job steps daemonize away from slurmd; as a subreaper this process gets them (not init,
  // which may not reap them here), so the destructor can reap them.
  prctl(PR_SET_CHILD_SUBREAPER, 1);

  std::unique_ptr<SlurmCluster> cluster(new SlurmCluster());
  // Under /tmp, not TEST_TMPDIR: munge's socket path must fit a sockaddr_un (108 bytes).
  char dir_template[] = "/tmp/paratune-slurm-XXXXXX";
  if (mkdtemp(dir_template) == nullptr) return absl::InternalError("mkdtemp under /tmp failed");
  cluster->dir_ = dir_template;
  const std::string& dir = cluster->dir_;
  // munged refuses a socket in a folder that others cannot search.
  chmod(dir.c_str(), 0755);
  std::filesystem::create_directories(dir + "/state");
  std::filesystem::create_directories(dir + "/spool");

  std::string key(1024, '\0');
  {
    std::ifstream random("/dev/urandom", std::ios::binary);
    random.read(key.data(), static_cast<std::streamsize>(key.size()));
  }
  if (absl::Status status = WriteFile(dir + "/munge.key", key, 0400); !status.ok()) return status;
  const std::string socket = dir + "/munge.sock";
  absl::StatusOr<std::unique_ptr<ChildProcess>> munge = ChildProcess::Spawn(
      {*munged, "--foreground", "--key-file=" + dir + "/munge.key", "--socket=" + socket,
       "--pid-file=" + dir + "/munged.pid", "--log-file=" + dir + "/munged.log",
       "--seed-file=" + dir + "/munge.seed"});
  if (!munge.ok()) return munge.status();
  cluster->munged_ = *std::move(munge);
  const absl::Time give_up = absl::Now() + kStartTimeout;
  while (access(socket.c_str(), F_OK) != 0) {
    if (cluster->munged_->Poll().has_value() || absl::Now() >= give_up) {
      return absl::UnavailableError(
          absl::StrCat("munged did not create its socket: ", Tail(dir + "/munged.log")));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }

  absl::StatusOr<int> controller_port = PickFreeTcpPort();
  if (!controller_port.ok()) return controller_port.status();
  absl::StatusOr<int> node_port = PickFreeTcpPort();
  while (node_port.ok() && *node_port == *controller_port) node_port = PickFreeTcpPort();
  if (!node_port.ok()) return node_port.status();
  absl::StatusOr<std::string> node = NodeLine(*slurmd);
  if (!node.ok()) return node.status();
  cluster->conf_ = dir + "/slurm.conf";
  const std::string conf = absl::StrCat(
      "ClusterName=paratune-test\n"
      "SlurmctldHost=localhost\n"
      "SlurmUser=root\n"
      "SlurmdUser=root\n"
      "AuthType=auth/munge\n"
      "CredType=cred/munge\n"
      "AuthInfo=socket=",
      socket, "\n", "SlurmctldPort=", *controller_port, "\n", "SlurmdPort=", *node_port, "\n",
      "StateSaveLocation=", dir, "/state\n", "SlurmdSpoolDir=", dir, "/spool\n",
      "SlurmctldPidFile=", dir, "/slurmctld.pid\n", "SlurmdPidFile=", dir, "/slurmd.pid\n",
      "SlurmctldLogFile=", dir, "/slurmctld.log\n", "SlurmdLogFile=", dir, "/slurmd.log\n",
      // No cgroups: the test machine (a container) may not delegate them.
      "ProctrackType=proctrack/linuxproc\n"
      "TaskPlugin=task/none\n"
      "SelectType=select/cons_tres\n"
      "AccountingStorageType=accounting_storage/none\n"
      "JobCompType=jobcomp/none\n"
      "MpiDefault=none\n"
      "ReturnToService=2\n"
      "KillWait=10\n",
      *node, "\n", "PartitionName=", kPartition,
      " Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n");
  if (absl::Status status = WriteFile(cluster->conf_, conf, 0644); !status.ok()) return status;
  setenv("SLURM_CONF", cluster->conf_.c_str(), 1);

  absl::StatusOr<std::unique_ptr<ChildProcess>> controller =
      ChildProcess::Spawn({*slurmctld, "-D", "-f", cluster->conf_});
  if (!controller.ok()) return controller.status();
  cluster->slurmctld_ = *std::move(controller);
  absl::StatusOr<std::unique_ptr<ChildProcess>> node_daemon =
      ChildProcess::Spawn({*slurmd, "-D", "-f", cluster->conf_});
  if (!node_daemon.ok()) return node_daemon.status();
  cluster->slurmd_ = *std::move(node_daemon);
  if (absl::Status status = cluster->WaitUntilIdle(); !status.ok()) return status;
  return cluster;
}

absl::Status SlurmCluster::WaitUntilIdle() {
  const absl::Time give_up = absl::Now() + kStartTimeout;
  std::string last;
  while (true) {
    absl::StatusOr<CommandResult> sinfo = Run({"sinfo", "-h", "-o", "%t"});
    if (sinfo.ok()) {
      last = sinfo->output;
      if (sinfo->succeeded() && absl::StrContains(last, "idle")) return absl::OkStatus();
    }
    for (ChildProcess* daemon : {slurmctld_.get(), slurmd_.get()}) {
      if (std::optional<int> exit = daemon->Poll(); exit.has_value()) {
        return absl::UnavailableError(absl::StrCat(daemon->name(), " exited (",
                                                   DescribeExitStatus(*exit), ")\n", LogTails()));
      }
    }
    if (absl::Now() >= give_up) {
      return absl::DeadlineExceededError(absl::StrCat("the node did not become idle within ",
                                                      absl::FormatDuration(kStartTimeout),
                                                      "; sinfo: ", last, "\n", LogTails()));
    }
    absl::SleepFor(kPollInterval);
  }
}

std::string SlurmCluster::LogTails() const {
  return absl::StrCat("slurmctld.log: ", Tail(dir_ + "/slurmctld.log"),
                      "\nslurmd.log: ", Tail(dir_ + "/slurmd.log"));
}

SlurmCluster::~SlurmCluster() {
  if (slurmctld_ != nullptr && slurmd_ != nullptr) {
    Run({"scancel", "--partition", kPartition}).IgnoreError();
    const absl::Time give_up = absl::Now() + absl::Seconds(60);
    while (absl::Now() < give_up) {
      absl::StatusOr<CommandResult> jobs = Run({"squeue", "-h", "-o", "%i"});
      if (!jobs.ok() || !jobs->succeeded() || absl::StripAsciiWhitespace(jobs->output).empty()) {
        break;
      }
      absl::SleepFor(kPollInterval);
    }
  }
  for (auto* daemon : {&slurmd_, &slurmctld_, &munged_}) daemon->reset();
  KillLeftovers();
  if (!conf_.empty()) unsetenv("SLURM_CONF");
  if (!dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

void SlurmCluster::KillLeftovers() {
  if (conf_.empty()) return;
  const std::string marker = "SLURM_CONF=" + conf_;
  const std::string self = absl::StrCat(getpid());
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return;
  std::vector<pid_t> children;
  while (dirent* entry = readdir(proc)) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry->d_name, &pid) || entry->d_name == self) continue;
    const bool ours = EnvironHas(entry->d_name, marker);
    if (ours) kill(pid, SIGKILL);
    // Only killed processes and zombies: the test's own children (a paratune-server) live.
    const ProcessStat stat = StatOf(entry->d_name);
    if (stat.parent == getpid() && (ours || stat.state == 'Z')) children.push_back(pid);
  }
  closedir(proc);
  // Orphaned job steps were reparented here (subreaper): reap them, killed or exited.
  for (pid_t child : children) {
    int status = 0;
    waitpid(child, &status, 0);
  }
}

absl::StatusOr<CommandResult> SlurmCluster::Run(const std::vector<std::string>& argv) {
  CommandOptions options;
  options.environment["SLURM_CONF"] = conf_;
  options.timeout = absl::Seconds(30);
  return RunCommand(argv, options);
}

absl::StatusOr<int64_t> SlurmCluster::Submit(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"sbatch", "--parsable"};
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<CommandResult> result = Run(argv);
  if (!result.ok()) return result.status();
  int64_t job = 0;
  // --parsable prints "ID" or "ID;CLUSTER".
  const std::string first =
      std::string(absl::StripAsciiWhitespace(result->output)).substr(0, result->output.find(';'));
  if (!result->succeeded() || !absl::SimpleAtoi(absl::StripAsciiWhitespace(first), &job)) {
    return absl::UnavailableError(absl::StrCat("sbatch failed: ", result->output));
  }
  return job;
}

absl::StatusOr<std::string> SlurmCluster::JobState(int64_t job) {
  absl::StatusOr<CommandResult> result = Run({"scontrol", "show", "job", absl::StrCat(job)});
  if (!result.ok()) return result.status();
  for (absl::string_view word : absl::StrSplit(result->output, absl::ByAnyChar(" \n"))) {
    if (absl::ConsumePrefix(&word, "JobState=")) return std::string(word);
  }
  return absl::NotFoundError(absl::StrCat("scontrol show job ", job, ": ", result->output));
}

absl::StatusOr<std::string> SlurmCluster::Cancel(int64_t job, absl::Duration timeout) {
  absl::StatusOr<CommandResult> cancelled = Run({"scancel", absl::StrCat(job)});
  if (!cancelled.ok()) return cancelled.status();
  const absl::Time give_up = absl::Now() + timeout;
  // squeue lists the job in these states until it has completed, its steps included; it
  // fails once slurmctld has forgotten the job.
  while (true) {
    absl::StatusOr<CommandResult> queued =
        Run({"squeue", "-h", "-j", absl::StrCat(job), "-t", "PD,CF,R,S,CG", "-o", "%T"});
    if (!queued.ok()) return queued.status();
    if (!queued->succeeded() || absl::StripAsciiWhitespace(queued->output).empty()) break;
    if (absl::Now() >= give_up) {
      return absl::DeadlineExceededError(
          absl::StrCat("job ", job, " still ", queued->output, " after scancel"));
    }
    absl::SleepFor(kPollInterval);
  }
  return JobState(job);
}

}  // namespace paratune
