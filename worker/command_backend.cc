#include "worker/command_backend.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "common/template_name.h"
#include "worker/command_outcome.h"
#include "worker/free_port.h"
#include "worker/launch_values.h"
#include "worker/probe_specs.h"
#include "worker/step_metrics.h"
#include "common/subprocess.h"

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

// {master_port}: gang[0] picks a port on its host and the scheduler relays it to the others.
absl::StatusOr<int> MasterPort(const v1::ProbeAssignment& assignment, ProbeContext& context) {
  if (assignment.gang_size() == 1) return PickFreeTcpPort();
  std::string token;
  if (assignment.gang_index() == 0) {
    PT_ASSIGN_OR_RETURN(const int port, PickFreeTcpPort());
    token = absl::StrCat(port);
  }
  PT_ASSIGN_OR_RETURN(const std::string relayed, context.Rendezvous(token));
  int port = 0;
  if (!absl::SimpleAtoi(relayed, &port) || port < 1 || port > 65535) {
    return absl::InternalError(
        absl::StrCat("the rendezvous token (\"", relayed.substr(0, 32), "\") is not a port"));
  }
  return port;
}

}  // namespace

absl::StatusOr<CommandBackend::Launch> CommandBackend::Compile(const v1::CommandTemplate& proto,
                                                               const std::string& field) {
  PT_RETURN_IF_ERROR(ValidateTemplateName(field + ".name", proto.name()));
  PT_ASSIGN_OR_RETURN(LaunchTemplate command, LaunchTemplate::Create(proto, field));
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
  PT_RETURN_IF_ERROR(CheckLaunchShape(assignment, specs));
  absl::Duration limit = launch->timeout;
  if (assignment.deadline_seconds() > 0) {
    const absl::Duration deadline = absl::Seconds(assignment.deadline_seconds());
    if (deadline <= launch->kill_grace) {
      return absl::InvalidArgumentError(
          absl::StrCat("assignment.deadline_seconds (", assignment.deadline_seconds(),
                       ") leaves no time to run: template \"", launch->name, "\" stops a run ",
                       absl::FormatDuration(launch->kill_grace), " before it"));
    }
    limit = std::min(limit, deadline - launch->kill_grace);
  }
  PT_ASSIGN_OR_RETURN(const int master_port, MasterPort(assignment, context));
  PT_ASSIGN_OR_RETURN(
      const LaunchValues values,
      LaunchValues::ForProbe(assignment, specs, launch->extra_warmup_iterations, master_port));
  PT_ASSIGN_OR_RETURN(LaunchTemplate::Command command, launch->command.Render(values));

  TrainingLog log(launch->log);
  SubprocessOptions options;
  options.argv = std::move(command.argv);
  options.env = std::move(command.env);
  options.working_directory = launch->working_directory;
  options.timeout = limit;
  options.kill_grace = launch->kill_grace;
  options.max_output_bytes = kKeptOutputBytes;
  options.on_line = [&log](OutputStream, absl::string_view line) { log.AddLine(line); };
  absl::StatusOr<SubprocessResult> run = RunSubprocess(options, context.cancelled());
  if (!run.ok()) {
    if (run.status().code() != absl::StatusCode::kNotFound) return run.status();
    return absl::UnavailableError(
        absl::StrCat("template \"", launch->name, "\": ", run.status().message()));
  }
  if (run->ending == SubprocessResult::Ending::kCancelled) {
    return absl::CancelledError(absl::StrCat("probe ", assignment.name(), " was cancelled"));
  }

  const ExpectedSteps expected{launch->extra_warmup_iterations + assignment.warmup_steps(),
                               assignment.timed_steps(), assignment.gang_size() > 1};
  CommandOutcome outcome = ClassifyCommandRun(*run, log, launch->log.step_time, expected, limit);
  v1::ProbeResult result;
  result.set_backend(Name());
  result.set_simulated(false);
  result.set_outcome(outcome.outcome);
  const v1::GangMember& member = assignment.gang(assignment.gang_index());
  const std::string where =
      absl::StrFormat("template \"%s\", ranks %d-%d of %d on node %d of %d: ", launch->name,
                      member.first_rank(), member.first_rank() + member.num_ranks() - 1,
                      assignment.num_ranks(), assignment.gang_index(), assignment.gang_size());
  if (outcome.outcome != v1::PROBE_OK || outcome.timed_step_times.empty()) {
    result.set_message(where + outcome.message);
  } else {
    SetStepTimes(specs, outcome.timed_step_times, result);
    const bool replica = assignment.num_ranks() < ConfigurationGpus(specs.config);
    for (const char* part : TrainingStepParts()) {
      if (!(replica && absl::string_view(part) == "dp_collectives")) result.add_measured(part);
    }
    result.set_message(absl::StrFormat(
        "%smeasured: mean step time %.4g s over %d timed steps after %d warm-up iterations%s%s",
        where, result.mean_step_time_seconds(), assignment.timed_steps(),
        expected.dropped_iterations,
        log.peak_memory_bytes() > 0
            ? absl::StrFormat("; peak memory %.2f GiB on this node", log.peak_memory_bytes() / kGiB)
            : "",
        replica ? absl::StrFormat("; replica scope: %s of the configuration's %d data-parallel "
                                  "replicas, so its data-parallel traffic was not measured",
                                  values.Get("dp").value(), specs.config.dp())
                : ""));
  }
  if (log.peak_memory_bytes() > 0) {
    result.set_peak_memory_bytes(static_cast<int64_t>(log.peak_memory_bytes()));
    result.add_measured("peak_memory");
  }
  result.set_wall_seconds(absl::ToDoubleSeconds(absl::Now() - start));
  return result;
}

}  // namespace paratune
