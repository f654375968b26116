// The fakes and the fixture the SlurmLauncher's tests share (slurm_launcher_test.cc,
// slurm_launcher_jobs_test.cc, slurm_launcher_errors_test.cc): a Slurm controller in memory,
// the scheduler as the launcher sees it, and a launcher over both with a fake clock.
#ifndef PARATUNE_SERVER_SLURM_SLURM_LAUNCHER_TEST_FIXTURE_H_
#define PARATUNE_SERVER_SLURM_SLURM_LAUNCHER_TEST_FIXTURE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/fake_clock.h"
#include "gtest/gtest.h"
#include "server/core/launch_target.h"
#include "server/slurm/slurm_client.h"
#include "server/slurm/slurm_launcher.h"

namespace paratune {

// A Slurm controller in memory, answering sbatch, squeue, sacct, scontrol and scancel the way
// Slurm 22.05 without accounting storage does (server/slurm/slurm_client_test.cc holds the real
// outputs). Tests move jobs along with Run and End. Thread-safe.
class FakeSlurm {
 public:
  struct Job {
    std::string name;
    std::vector<std::string> sbatch_args;
    std::string state = "PENDING";
    std::string exit_code = "0:0";
  };

  // Runs commands against this controller.
  CommandRunner Runner();

  // Starts job `id`.
  void Run(int64_t id);
  // Ends job `id` in `state` with `exit_code` ("exit:signal").
  void End(int64_t id, const std::string& state, const std::string& exit_code);
  // Makes the next sbatch calls exit with code 1 and `message`, or succeed again when empty.
  void RefuseSubmissions(const std::string& message);
  // Makes the next sbatch calls end as `output` says (the runner's error when not OK: sbatch
  // did not run to its exit), or succeed again when nullopt.
  void AnswerSubmissions(std::optional<absl::StatusOr<CommandOutput>> output);
  // Makes every command fail as when the controller cannot be reached, or not.
  void SetUnreachable(bool unreachable);

  // The jobs submitted, by id.
  std::map<int64_t, Job> jobs();
  // The calls of `program`, each as its argv joined by spaces, in the order made.
  std::vector<std::string> calls(absl::string_view program);
  // Notified at the first sbatch call.
  absl::Notification& first_submission() { return first_submission_; }

 private:
  absl::StatusOr<CommandOutput> Answer(const std::vector<std::string>& argv);
  static bool Ended(const std::string& state);
  void Set(int64_t id, const std::string& state, const std::string& exit_code);

  absl::Mutex mu_;
  std::map<int64_t, Job> jobs_ ABSL_GUARDED_BY(mu_);
  int64_t last_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
  std::string refusal_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::StatusOr<CommandOutput>> sbatch_answer_ ABSL_GUARDED_BY(mu_);
  bool unreachable_ ABSL_GUARDED_BY(mu_) = false;
  absl::Notification first_submission_;
};

// The scheduler as the launcher sees it: the pending probes a test sets, and the calls the
// launcher makes. Like the scheduler, a launch that ended or was refused under a queued probe
// (or one running on its reserved workers) re-queues that probe as its next attempt while
// attempts remain, else drops it; the probe of an ended search or one that moved on is left
// as it is. Thread-safe.
class FakeLaunchTarget : public LaunchTarget {
 public:
  explicit FakeLaunchTarget(int64_t max_attempts) : max_attempts_(max_attempts) {}

  // Adds `probe` to the pending probes.
  void Add(const PendingProbe& probe);
  // Removes the probe, as the scheduler does once it is reported or its search ended.
  void Remove(const std::string& probe);
  // Marks the probe running, on workers reserved for it or not.
  void SetRunning(const std::string& probe, bool on_reserved_workers);
  // The names of the pending probes.
  std::vector<std::string> pending();
  // "LaunchEnded PROBE: REASON" and "LaunchRefused PROBE: REASON", in the order made.
  std::vector<std::string> calls();

  std::vector<PendingProbe> PendingProbes() override;
  absl::Status LaunchEnded(absl::string_view probe, const std::string& reason) override;
  absl::Status LaunchRefused(absl::string_view probe, const std::string& reason) override;

 private:
  std::vector<PendingProbe>::iterator Find(absl::string_view probe)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Ended(absl::string_view call, absl::string_view probe, const std::string& reason);

  const int64_t max_attempts_;
  absl::Mutex mu_;
  std::vector<PendingProbe> pending_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
};

// searches/{search}/candidates/{candidate}/probes/{attempt}, queued where no live worker can
// host it: one replica of 8 ranks in tensor parallel groups of 2, on 8-GPU nodes, for at most
// 10 minutes.
PendingProbe Queued(int64_t search, int64_t candidate, int64_t attempt = 1);

// The probe of Queued(1, 0).
inline constexpr char kProbe[] = "searches/1/candidates/0/probes/1";

// A launcher over `slurm_` and `target_` (up to 2 attempts per probe) with `clock_`.
class SlurmLauncherTest : public ::testing::Test {
 protected:
  // Options for a launcher of up to 2 jobs whose rounds run only when a test calls Reconcile.
  SlurmLauncher::Options LauncherOptions();
  // A started launcher, or nullptr after a failed expectation.
  std::unique_ptr<SlurmLauncher> StartLauncher();
  // Queues candidates 0 .. n-1 of `search`.
  void QueueSearch(int64_t search, int64_t n);

  FakeClock clock_;
  FakeSlurm slurm_;
  FakeLaunchTarget target_{/*max_attempts=*/2};
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_SLURM_SLURM_LAUNCHER_TEST_FIXTURE_H_
