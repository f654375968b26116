#include "worker/command_backend.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/free_port.h"
#include "common/status_macros.h"
#include "common/subprocess.h"
#include "common/template_name.h"
#include "estimator/short_probe.h"
#include "launch/launch_values.h"
#include "worker/command_outcome.h"
#include "worker/probe_specs.h"
#include "worker/short_steps.h"
#include "worker/step_metrics.h"

namespace paratune {
namespace {

constexpr int kMaxTemplates = 64;
constexpr double kMaxTimeoutSeconds = 7 * 24 * 3600;
constexpr double kMaxKillGraceSeconds = 300;
constexpr absl::Duration kDefaultKillGrace = absl::Seconds(10);
constexpr int64_t kMaxExtraWarmupIterations = 1000;
// Enough for the log's last lines in a message; the parsing sees every line as it comes.
constexpr int64_t kKeptOutputBytes = 64 * 1024;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The {master_port} of each of `launches` launches. A gang's members need them all before
// the first launch, since the scheduler relays one rendezvous token per lease: gang[0] picks
// them up-front and sends them as "P1,P2,..."; the others take them from the token.
absl::StatusOr<std::vector<int>> MasterPorts(const v1::ProbeAssignment& assignment, size_t launches,
                                             ProbeContext& context) {
  std::vector<int> ports;
  if (assignment.gang_index() == 0) {
    for (size_t k = 0; k < launches; ++k) {
      PT_ASSIGN_OR_RETURN(const int port, PickFreeTcpPort());
      ports.push_back(port);
    }
    if (assignment.gang_size() == 1) return ports;
  }
  PT_ASSIGN_OR_RETURN(const std::string relayed, context.Rendezvous(absl::StrJoin(ports, ",")));
  ports.clear();
  for (absl::string_view text : absl::StrSplit(relayed, ',')) {
    int port = 0;
    if (!absl::SimpleAtoi(text, &port) || port < 1 || port > 65535) {
      ports.clear();
      break;
    }
    ports.push_back(port);
  }
  if (ports.size() != launches) {
    return absl::InternalError(absl::StrCat(
        "the rendezvous token (\"", relayed.substr(0, 64), "\") is not ",
        launches == 1 ? "a port"
                      : absl::StrCat(launches, " comma-separated ports, one per launch")));
  }
  return ports;
}

// The training switches a template must pass on when a probe sets them, with the value that
// needs no flag: what Megatron-LM core_v0.19.0 and NeMo 2.4.0 run by default. A template that
// never mentions one would probe the framework's default instead of what the search asked
// for (deploy/templates/nemo_llama.textproto has no way to ask for tp_comm_overlap).
struct TrainingSwitch {
  const char* placeholder;
  const char* framework_default;
};
constexpr TrainingSwitch kTrainingSwitches[] = {
    {"fp8", "false"},
    {"fp8_param_gather", "false"},
    {"tp_comm_overlap", "false"},
    {"cp_comm_type", "p2p"},
};

// INVALID_ARGUMENT naming the switch when `values` set a switch away from the framework's
// default and `command`, the template `template_name`, never mentions it (cp_comm_type only
// with context parallelism).
absl::Status CheckSwitchesReachTheFramework(const std::string& template_name,
                                            const LaunchTemplate& command,
                                            const LaunchValues& values) {
  PT_ASSIGN_OR_RETURN(const std::string cp, values.Get("cp"));
  for (const TrainingSwitch& training_switch : kTrainingSwitches) {
    const std::string name = training_switch.placeholder;
    if (name == "cp_comm_type" && cp == "1") continue;
    PT_ASSIGN_OR_RETURN(const std::string value, values.Get(name));
    if (value == training_switch.framework_default || command.Mentions(name)) continue;
    return absl::InvalidArgumentError(
        absl::StrCat("template \"", template_name, "\" never mentions {", name,
                     "}, so it cannot run this probe's ", name, " (", value,
                     "): the framework would run its default (", training_switch.framework_default,
                     ") instead; add an element for it to the template (docs/backends.md)"));
  }
  return absl::OkStatus();
}

double Sum(const std::vector<double>& values) {
  return std::accumulate(values.begin(), values.end(), 0.0);
}

}  // namespace

absl::StatusOr<CommandBackend::Launch> CommandBackend::Compile(const v1::CommandTemplate& proto,
                                                               const std::string& field) {
  PT_RETURN_IF_ERROR(ValidateTemplateName(field + ".name", proto.name()));
  PT_ASSIGN_OR_RETURN(LaunchTemplate command, LaunchTemplate::Create(proto, field));
  // Without them a launch would run some other batch or number of steps than the probe's.
  for (const auto& [placeholder, what] :
       {std::pair<const char*, const char*>{"gbs", "global batch"},
        {"train_iters", "iterations"}}) {
    if (!command.Uses(placeholder)) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".argv (nor .env) never uses {",
                                                     placeholder, "}: a probe sets the ", what,
                                                     " of each launch (docs/backends.md)"));
    }
  }
  if (!std::isfinite(proto.timeout_seconds()) || proto.timeout_seconds() < 0 ||
      proto.timeout_seconds() > kMaxTimeoutSeconds) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".timeout_seconds (",
                                                   proto.timeout_seconds(), ") must be in [0, ",
                                                   kMaxTimeoutSeconds, "]"));
  }
  if (!std::isfinite(proto.kill_grace_seconds()) || proto.kill_grace_seconds() < 0 ||
      proto.kill_grace_seconds() > kMaxKillGraceSeconds) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".kill_grace_seconds (",
                                                   proto.kill_grace_seconds(), ") must be in [0, ",
                                                   kMaxKillGraceSeconds, "]"));
  }
  if (proto.extra_warmup_iterations() < 0 ||
      proto.extra_warmup_iterations() > kMaxExtraWarmupIterations) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".extra_warmup_iterations (", proto.extra_warmup_iterations(),
                     ") must be in [0, ", kMaxExtraWarmupIterations, "]"));
  }
  PT_ASSIGN_OR_RETURN(TrainingLogPatterns log,
                      TrainingLogPatterns::Create(proto.log(), field + ".log"));
  return Launch{proto.name(),
                std::move(command),
                proto.working_directory(),
                proto.timeout_seconds() == 0 ? absl::InfiniteDuration()
                                             : absl::Seconds(proto.timeout_seconds()),
                proto.kill_grace_seconds() == 0 ? kDefaultKillGrace
                                                : absl::Seconds(proto.kill_grace_seconds()),
                proto.extra_warmup_iterations(),
                std::move(log)};
}

absl::StatusOr<std::unique_ptr<CommandBackend>> CommandBackend::Create(
    const v1::WorkerConfig& config) {
  if (config.command_templates_size() < 1 || config.command_templates_size() > kMaxTemplates) {
    return absl::InvalidArgumentError(
        absl::StrCat("command_templates (", config.command_templates_size(),
                     " templates) must define 1 to ", kMaxTemplates, " for the command backend"));
  }
  std::vector<Launch> launches;
  absl::flat_hash_set<std::string> names;
  for (int i = 0; i < config.command_templates_size(); ++i) {
    const std::string field = absl::StrCat("command_templates[", i, "]");
    PT_ASSIGN_OR_RETURN(Launch launch, Compile(config.command_templates(i), field));
    if (!names.insert(launch.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".name (\"", launch.name, "\") is defined twice"));
    }
    launches.push_back(std::move(launch));
  }
  return std::unique_ptr<CommandBackend>(new CommandBackend(std::move(launches)));
}

std::vector<std::string> CommandBackend::TemplateNames() const {
  std::vector<std::string> names;
  for (const Launch& launch : launches_) names.push_back(launch.name);
  return names;
}

const CommandBackend::Launch* CommandBackend::FindLaunch(const std::string& name) const {
  for (const Launch& launch : launches_) {
    if (launch.name == name) return &launch;
  }
  return nullptr;
}

absl::StatusOr<CommandBackend::LaunchRun> CommandBackend::RunLaunch(
    const Launch& launch, const LaunchValues& values, const ExpectedSteps& expected,
    absl::Duration limit, const std::string& probe, ProbeContext& context) {
  PT_ASSIGN_OR_RETURN(LaunchTemplate::Command command, launch.command.Render(values));
  TrainingLog log(launch.log);
  SubprocessOptions options;
  options.argv = std::move(command.argv);
  options.env = std::move(command.env);
  options.working_directory = launch.working_directory;
  options.timeout = limit;
  options.kill_grace = launch.kill_grace;
  options.max_output_bytes = kKeptOutputBytes;
  options.on_line = [&log](OutputStream, absl::string_view line) { log.AddLine(line); };
  absl::StatusOr<SubprocessResult> run = RunSubprocess(options, context.cancelled());
  if (!run.ok()) {
    if (run.status().code() != absl::StatusCode::kNotFound) return run.status();
    return absl::UnavailableError(
        absl::StrCat("template \"", launch.name, "\": ", run.status().message()));
  }
  if (run->ending == SubprocessResult::Ending::kCancelled) {
    return absl::CancelledError(absl::StrCat("probe ", probe, " was cancelled"));
  }
  LaunchRun result;
  result.outcome = ClassifyCommandRun(*run, log, launch.log.step_time, expected, limit);
  result.startup_seconds =
      std::max(0.0, absl::ToDoubleSeconds(run->wall_time) - Sum(log.step_times_seconds()));
  result.peak_memory_bytes = log.peak_memory_bytes();
  return result;
}

absl::StatusOr<v1::ProbeResult> CommandBackend::Run(const v1::ProbeAssignment& assignment,
                                                    ProbeContext& context) {
  const absl::Time start = absl::Now();
  PT_RETURN_IF_ERROR(WaitUnlessCancelled(context, absl::ZeroDuration(), assignment.name()));
  PT_ASSIGN_OR_RETURN(const ProbeSpecs specs, ResolveProbeSpecs(assignment));
  PT_RETURN_IF_ERROR(
      ValidateTemplateName("assignment.command_template", assignment.command_template()));
  const Launch* launch = FindLaunch(assignment.command_template());
  if (launch == nullptr) {
    return absl::UnavailableError(absl::StrCat("this worker's config defines no template \"",
                                               assignment.command_template(), "\""));
  }
  PT_RETURN_IF_ERROR(CheckLaunchShape(assignment, specs.config));
  const int64_t full_micro_batches = specs.config.NumMicroBatches(specs.training);
  PT_RETURN_IF_ERROR(CheckMicroBatchCounts(assignment, specs.config, full_micro_batches));
  // One launch of full steps, or one per short-step count (docs/short_probes.md).
  const std::vector<int64_t> counts(assignment.micro_batch_counts().begin(),
                                    assignment.micro_batch_counts().end());
  const std::vector<int64_t> micro_batches_per_launch =
      counts.empty() ? std::vector<int64_t>{full_micro_batches} : counts;
  const size_t launches = micro_batches_per_launch.size();
  // What the launches may spend together: each must be gone by the deadline, its log read.
  absl::Duration budget = absl::InfiniteDuration();
  if (assignment.deadline_seconds() > 0) {
    const absl::Duration deadline = absl::Seconds(assignment.deadline_seconds());
    if (deadline <= launch->kill_grace) {
      return absl::InvalidArgumentError(
          absl::StrCat("assignment.deadline_seconds (", assignment.deadline_seconds(),
                       ") leaves no time to run: template \"", launch->name, "\" stops a run ",
                       absl::FormatDuration(launch->kill_grace), " before it"));
    }
    budget = deadline - launch->kill_grace;
  }
  PT_ASSIGN_OR_RETURN(const std::vector<int> master_ports,
                      MasterPorts(assignment, launches, context));

  v1::ProbeResult result;
  result.set_backend(Name());
  result.set_simulated(false);
  const v1::GangMember& member = assignment.gang(assignment.gang_index());
  const std::string where =
      absl::StrFormat("template \"%s\", ranks %d-%d of %d on node %d of %d: ", launch->name,
                      member.first_rank(), member.first_rank() + member.num_ranks() - 1,
                      assignment.num_ranks(), assignment.gang_index(), assignment.gang_size());
  // Every launch is a fresh process: each runs and drops its own warm-up.
  const ExpectedSteps expected{launch->extra_warmup_iterations + assignment.warmup_steps(),
                               assignment.timed_steps(), assignment.gang_size() > 1};
  std::vector<ShortStepSeries> timed;  // the timed steps of each launch that logged them
  std::string untimed_message;         // set when the launches logged no step times
  double startup_seconds = 0;
  double peak_memory_bytes = 0;
  std::string probe_dp;  // {dp}, the same in every launch
  for (size_t k = 0; k < launches; ++k) {
    const int64_t micro_batches = micro_batches_per_launch[k];
    const std::string which =
        counts.empty() ? ""
                       : absl::StrFormat("launch %d of %d (%d micro-batches per step): ", k + 1,
                                         launches, micro_batches);
    PT_RETURN_IF_ERROR(WaitUnlessCancelled(context, absl::ZeroDuration(), assignment.name()));
    absl::Duration limit = launch->timeout;
    if (assignment.deadline_seconds() > 0) {
      // Whole milliseconds, for a readable message.
      const absl::Duration left =
          absl::Trunc(budget - (absl::Now() - start), absl::Milliseconds(1));
      if (left <= absl::ZeroDuration()) {
        result.set_outcome(v1::PROBE_TIMEOUT);
        result.set_message(absl::StrCat(
            where, which, "not started: the probe has spent the ", absl::FormatDuration(budget),
            " that its deadline (", assignment.deadline_seconds(),
            " s) leaves before the kill grace (", absl::FormatDuration(launch->kill_grace), ")"));
        break;
      }
      limit = std::min(limit, left);
    }
    PT_ASSIGN_OR_RETURN(
        const LaunchValues values,
        LaunchValues::ForProbe(assignment, specs.model, specs.training, specs.config, micro_batches,
                               launch->extra_warmup_iterations, master_ports[k]));
    PT_RETURN_IF_ERROR(CheckSwitchesReachTheFramework(launch->name, launch->command, values));
    PT_ASSIGN_OR_RETURN(probe_dp, values.Get("dp"));
    PT_ASSIGN_OR_RETURN(LaunchRun run,
                        RunLaunch(*launch, values, expected, limit, assignment.name(), context));
    peak_memory_bytes = std::max(peak_memory_bytes, run.peak_memory_bytes);
    if (run.outcome.outcome != v1::PROBE_OK) {
      result.set_outcome(run.outcome.outcome);
      result.set_message(where + which + run.outcome.message);
      break;
    }
    if (k > 0 && run.outcome.timed_step_times.empty() != timed.empty()) {
      // The node that logs step times holds the last rank, whatever the launch.
      result.set_outcome(v1::PROBE_CRASH);
      result.set_message(absl::StrCat(where, which,
                                      timed.empty() ? "logged step times, but launch 1 logged none"
                                                    : "logged no step times, but launch 1 did",
                                      ": every launch should log them on the same node"));
      break;
    }
    if (run.outcome.timed_step_times.empty()) {
      untimed_message = run.outcome.message;
      continue;
    }
    timed.push_back({micro_batches, std::move(run.outcome.timed_step_times)});
    startup_seconds += run.startup_seconds;
  }

  if (result.outcome() == v1::PROBE_OUTCOME_UNSPECIFIED) {
    result.set_outcome(v1::PROBE_OK);
    if (timed.empty()) {
      result.set_message(absl::StrCat(
          where, untimed_message,
          launches > 1 ? absl::StrFormat(", in each of its %d launches", launches) : ""));
    } else if (counts.empty()) {
      SetStepTimes(specs, timed.front().step_times_seconds, result);
    } else {
      absl::StatusOr<std::vector<double>> full_steps =
          ExtrapolateShortSteps(timed, full_micro_batches, specs.config, result);
      if (full_steps.ok()) {
        SetStepTimes(specs, *full_steps, result);
      } else {
        result.set_message(where + result.message());  // PROBE_INFRA_ERROR, saying why
      }
    }
  }
  if (result.outcome() == v1::PROBE_OK && !timed.empty()) {
    result.set_startup_seconds(startup_seconds);
    const bool replica = assignment.num_ranks() < ConfigurationGpus(specs.config);
    for (const char* part : TrainingStepParts()) {
      if (!(replica && absl::string_view(part) == "dp_collectives")) result.add_measured(part);
    }
    std::string steps = absl::StrFormat("mean step time %.4g s", result.mean_step_time_seconds());
    if (counts.empty()) {
      absl::StrAppendFormat(&steps, " over %d timed steps after %d warm-up iterations",
                            assignment.timed_steps(), expected.dropped_iterations);
    } else {
      absl::StrAppendFormat(&steps,
                            ", the full step of %d micro-batches extrapolated from %d timed steps "
                            "at each of %s micro-batches per step, one launch each after %d "
                            "warm-up iterations",
                            full_micro_batches, assignment.timed_steps(),
                            absl::StrJoin(counts, " and "), expected.dropped_iterations);
    }
    result.set_message(absl::StrFormat(
        "%smeasured: %s; start-up %.3g s%s (wall time less logged steps)%s%s", where, steps,
        startup_seconds, launches > 1 ? absl::StrFormat(" over %d launches", launches) : "",
        peak_memory_bytes > 0
            ? absl::StrFormat("; peak memory %.2f GiB on this node", peak_memory_bytes / kGiB)
            : "",
        replica ? absl::StrFormat("; replica scope: %s of the configuration's %d data-parallel "
                                  "replicas, so its data-parallel traffic was not measured",
                                  probe_dp, specs.config.dp())
                : ""));
  }
  if (peak_memory_bytes > 0) {
    result.set_peak_memory_bytes(static_cast<int64_t>(peak_memory_bytes));
    result.add_measured("peak_memory");
  }
  result.set_wall_seconds(absl::ToDoubleSeconds(absl::Now() - start));
  return result;
}

}  // namespace paratune
