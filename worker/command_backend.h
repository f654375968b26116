// The `command` backend (DESIGN.md §8): runs a real training launch for each probe, from a
// template the worker's own config file defines (proto/worker_config.proto), e.g. Megatron-LM's
// pretrain_gpt.py under torchrun, and reads its step times, peak memory and failures from its
// output. Clients pick a template by name; they never send a command line.
#ifndef PARATUNE_WORKER_COMMAND_BACKEND_H_
#define PARATUNE_WORKER_COMMAND_BACKEND_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "launch/launch_template.h"
#include "launch/launch_values.h"
#include "proto/worker_config.pb.h"
#include "worker/command_outcome.h"
#include "worker/probe_backend.h"
#include "worker/training_log.h"

namespace paratune {

// Runs this worker's share of a probe: with a gang of several workers, each runs the
// template for its own node ({node_rank} = its gang_index, {nproc_per_node} = its ranks,
// {master_addr} = gang[0]'s host) and reports what its node saw; the scheduler keeps the
// timing of the member that logged it.
//
// A probe of full steps launches the template once. A probe of short steps
// (assignment.micro_batch_counts, docs/short_probes.md) launches it once per count, in
// order, each launch with {gbs} of that many micro-batches and its own warm-up; the first
// launch that does not end OK ends the probe with its outcome, its message naming the launch.
// gang[0] picks every launch's {master_port} before the first and hands them to the others
// in its one rendezvous token through the scheduler, "P1,P2".
//
// A launch is stopped (SIGTERM to its process group, SIGKILL after the template's kill
// grace) when the worker tells the probe to stop, which it does at the latest the kill grace
// before the probe's deadline (StopGrace), so that every launch is gone by the deadline, or at
// the template's timeout. ClassifyCommandRun (command_outcome.h) says how each ended. An OK run
// has the timed step times of each launch (with short steps the worker extrapolates the full
// step from them), start-up (each launch's wall time less the step times it logged, summed),
// peak memory when the log reports it, every phase of the configuration's training step as
// measured but a replica-scope probe's data-parallel collectives (its traffic is that of fewer
// replicas: absent), and is measured here. A gang member that logs no step times in any launch
// is OK without them; one that logs them in some launches only is a PROBE_CRASH. Not
// deterministic. Thread-safe.
class CommandBackend : public ProbeBackend {
 public:
  // Checks and compiles config.command_templates (1 .. 64, distinct names, each passing {gbs}
  // and {train_iters} to its command). INVALID_ARGUMENT naming the field and value, e.g.
  // "command_templates[1].argv[3] (\"--tp={tpp}\"): unknown placeholder {tpp}".
  static absl::StatusOr<std::unique_ptr<CommandBackend>> Create(const v1::WorkerConfig& config);

  // The templates' names, in config order, for RegisterWorkerRequest.command_templates.
  std::vector<std::string> TemplateNames() const;

  std::string Name() const override { return "command"; }
  bool Deterministic() const override { return false; }
  // The named template's kill grace; zero when this worker has no such template (Run refuses
  // the probe).
  absl::Duration StopGrace(const ProbeSpec& spec) const override;
  // INVALID_ARGUMENT naming the field for a probe the template cannot run (no template named,
  // a training switch it never mentions, a placeholder without a value for it); INTERNAL for a
  // rendezvous token that does not hold one port per launch; UNAVAILABLE when this worker has
  // no such template or cannot start the program (another worker may: the worker reports
  // PROBE_INFRA_ERROR); CANCELLED when told to stop, during the rendezvous or a launch (saying
  // which launch and what it logged); the rendezvous' FAILED_PRECONDITION when the scheduler
  // no longer leases the probe here.
  absl::StatusOr<ProbeRun> Run(const ProbeSpec& spec, ProbeContext& context) override;

 private:
  // One compiled template.
  struct Launch {
    std::string name;
    LaunchTemplate command;
    std::string working_directory;
    absl::Duration timeout;  // InfiniteDuration when the template sets none
    absl::Duration kill_grace;
    int64_t extra_warmup_iterations = 0;
    TrainingLogPatterns log;
  };

  // How one launch of a probe ended.
  struct LaunchRun {
    CommandOutcome outcome;
    double startup_seconds = 0;  // its wall time less every step time it logged, >= 0
    double peak_memory_bytes = 0;
  };

  explicit CommandBackend(std::vector<Launch> launches) : launches_(std::move(launches)) {}
  static absl::StatusOr<Launch> Compile(const v1::CommandTemplate& proto, const std::string& field);
  const Launch* FindLaunch(const std::string& name) const;
  // Runs `launch` rendered with `values` for at most its timeout, reading its log
  // (TrainingLog, with the tokens of one GPU's share of a step). UNAVAILABLE when the program
  // cannot be started; CANCELLED saying what the run had logged when told to stop.
  static absl::StatusOr<LaunchRun> RunLaunch(const Launch& launch, const LaunchValues& values,
                                             double tokens_per_gpu_per_step,
                                             const ExpectedSteps& expected, ProbeContext& context);

  const std::vector<Launch> launches_;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_COMMAND_BACKEND_H_
