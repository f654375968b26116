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
#include "common/free_port.h"
#include "common/status_macros.h"
#include "common/subprocess.h"
#include "common/template_name.h"
#include "launch/launch_template.h"
#include "launch/launch_values.h"
#include "worker/command_outcome.h"

namespace paratune {
namespace {

constexpr int kMaxTemplates = 64;
constexpr double kMaxTimeoutSeconds = 7 * 24 * 3600;
constexpr double kMaxKillGraceSeconds = 300;
constexpr absl::Duration kDefaultKillGrace = absl::Seconds(10);
constexpr int64_t kMaxExtraWarmupIterations = 1000;
// Enough for the log's last lines in a message; the parsing sees every line as it comes.
constexpr int64_t kKeptOutputBytes = 64 * 1024;

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
  // The placeholder whose mention passes the switch on, where it is not the switch's own: an
  // MoE model's dense layers reach the framework only as the layer pattern.
  const char* carrier = nullptr;
  // Whether the switch matters only for a mixture-of-experts model ({moe} true).
  bool moe_only = false;
};
constexpr TrainingSwitch kTrainingSwitches[] = {
    {"fp8", "false"},
    {"fp8_param_gather", "false"},
    {"tp_comm_overlap", "false"},
    {"cp_comm_type", "p2p"},
    {"torch_compile", "false"},  // TorchTitan's default; refused under Megatron-LM
    // A template without experts would probe a dense model; one without the layer pattern
    // (nemo_llama.textproto: NeMo v2.4.0 gives every layer the same spec) an MoE layer
    // everywhere.
    {"moe", "false"},
    {"moe_dense_layers", "false", "moe_layer_pattern"},
    // TransformerConfig's defaults (transformer_config.py:829, 862, 888).
    {"moe_grouped_gemm", "false", nullptr, true},
    {"moe_token_dispatcher", "allgather", nullptr, true},
    // "none" unless a flex dispatcher: a template that cannot name the backend cannot run it.
    {"moe_flex_dispatcher_backend", "none", nullptr, true},
    {"moe_capacity_factor", "0", nullptr, true},
    {"moe_expert_parallel_overlap", "false", nullptr, true},
    {"moe_shared_expert_overlap", "false", nullptr, true},
};

// INVALID_ARGUMENT naming the switch when `values` set a switch away from the framework's
// default and `command`, the template `template_name`, never mentions it (cp_comm_type only
// with context parallelism, the routing switches only with experts).
absl::Status CheckSwitchesReachTheFramework(const std::string& template_name,
                                            const LaunchTemplate& command,
                                            const LaunchValues& values) {
  PT_ASSIGN_OR_RETURN(const std::string cp, values.Get("cp"));
  PT_ASSIGN_OR_RETURN(const std::string moe, values.Get("moe"));
  for (const TrainingSwitch& training_switch : kTrainingSwitches) {
    const std::string name = training_switch.placeholder;
    if (name == "cp_comm_type" && cp == "1") continue;
    if (training_switch.moe_only && moe != "true") continue;
    PT_ASSIGN_OR_RETURN(const std::string value, values.Get(name));
    const char* carrier =
        training_switch.carrier != nullptr ? training_switch.carrier : training_switch.placeholder;
    if (value == training_switch.framework_default || command.Mentions(carrier)) continue;
    return absl::InvalidArgumentError(
        absl::StrCat("template \"", template_name, "\" never mentions {", carrier,
                     "}, so it cannot run this probe's ", name, " (", value,
                     "): the framework would run its default (", training_switch.framework_default,
                     ") instead; add an element for it to the template (docs/backends.md)"));
  }
  switch (FindUnstatedSharding(command, values)) {
    case UnstatedSharding::kNone:
      break;
    case UnstatedSharding::kShardedGradients: {
      PT_ASSIGN_OR_RETURN(const std::string sharding, values.Get("dp_sharding"));
      return absl::InvalidArgumentError(absl::StrCat(
          "template \"", template_name,
          "\" never mentions {dp_sharding}, so it cannot run this probe's dp_sharding (", sharding,
          "): the framework would shard the optimizer states alone, or nothing; add elements "
          "for it to the template (docs/backends.md)"));
    }
    case UnstatedSharding::kHybridReplicas: {
      PT_ASSIGN_OR_RETURN(const std::string replicas,
                          values.Get("distributed_optimizer_instances"));
      return absl::InvalidArgumentError(absl::StrCat(
          "template \"", template_name,
          "\" never mentions {distributed_optimizer_instances} or {dp_replicate}, so it cannot "
          "run this probe's ",
          replicas,
          " replicas of sharded groups (config.dp_shard_group): the framework would shard over "
          "every data-parallel rank; add an element for it to the template (docs/backends.md)"));
    }
  }
  return absl::OkStatus();
}

// TorchTitan's trainer (deploy/templates/torchtitan_llama.textproto) logs its steps in its own
// metrics line. Recognised by the module the template runs until LogPatterns can say which
// log it reads.
constexpr char kTorchTitanEntry[] = "torchtitan.train";

StepLog StepLogOf(const v1::CommandTemplate& proto) {
  return proto.framework_entry() == kTorchTitanEntry ? StepLog::kTorchTitan
                                                     : StepLog::kValuePatterns;
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
                      TrainingLogPatterns::Create(proto.log(), field + ".log", StepLogOf(proto)));
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

absl::StatusOr<CommandBackend::LaunchRun> CommandBackend::RunLaunch(const Launch& launch,
                                                                    const LaunchValues& values,
                                                                    double tokens_per_gpu_per_step,
                                                                    const ExpectedSteps& expected,
                                                                    ProbeContext& context) {
  PT_ASSIGN_OR_RETURN(LaunchTemplate::Command command, launch.command.Render(values));
  TrainingLog log(launch.log, tokens_per_gpu_per_step);
  SubprocessOptions options;
  options.argv = std::move(command.argv);
  options.env = std::move(command.env);
  options.working_directory = launch.working_directory;
  options.timeout = launch.timeout;
  options.kill_grace = launch.kill_grace;
  options.max_output_bytes = kKeptOutputBytes;
  options.on_line = [&log](OutputStream, absl::string_view line) { log.AddLine(line); };
  absl::StatusOr<SubprocessResult> run = RunSubprocess(options, context.stop());
  if (!run.ok()) {
    if (run.status().code() != absl::StatusCode::kNotFound) return run.status();
    return absl::UnavailableError(
        absl::StrCat("template \"", launch.name, "\": ", run.status().message()));
  }
  if (run->ending == SubprocessResult::Ending::kCancelled) {
    return absl::CancelledError(DescribeStoppedRun(*run, log, expected));
  }
  LaunchRun result;
  result.outcome = ClassifyCommandRun(*run, log, expected, launch.timeout);
  result.startup_seconds =
      std::max(0.0, absl::ToDoubleSeconds(run->wall_time) - Sum(log.step_times_seconds()));
  result.peak_memory_bytes = log.peak_memory_bytes();
  return result;
}

absl::Duration CommandBackend::StopGrace(const ProbeSpec& spec) const {
  const Launch* launch = FindLaunch(spec.assignment().command_template());
  return launch == nullptr ? absl::ZeroDuration() : launch->kill_grace;
}

absl::StatusOr<ProbeRun> CommandBackend::Run(const ProbeSpec& spec, ProbeContext& context) {
  const v1::ProbeAssignment& assignment = spec.assignment();
  PT_RETURN_IF_ERROR(WaitUnlessStopped(context, absl::ZeroDuration(), spec));
  PT_RETURN_IF_ERROR(
      ValidateTemplateName("assignment.command_template", assignment.command_template()));
  const Launch* launch = FindLaunch(assignment.command_template());
  if (launch == nullptr) {
    return absl::UnavailableError(absl::StrCat("this worker's config defines no template \"",
                                               assignment.command_template(), "\""));
  }
  // One launch of full steps, or one per short-step count (docs/short_probes.md).
  const std::vector<int64_t> micro_batches_per_launch = spec.TimedMicroBatches();
  const size_t launches = micro_batches_per_launch.size();
  const bool short_steps = !spec.micro_batch_counts().empty();
  PT_ASSIGN_OR_RETURN(const std::vector<int> master_ports,
                      MasterPorts(assignment, launches, context));

  ProbeRun run;
  run.source = FigureSource::kMeasured;
  const v1::GangMember& member = assignment.gang(assignment.gang_index());
  const std::string where =
      absl::StrFormat("template \"%s\", ranks %d-%d of %d on node %d of %d", launch->name,
                      member.first_rank(), member.first_rank() + member.num_ranks() - 1,
                      assignment.num_ranks(), assignment.gang_index(), assignment.gang_size());
  // Every launch is a fresh process: each runs and drops its own warm-up.
  const ExpectedSteps expected{launch->extra_warmup_iterations + spec.warmup_steps(),
                               spec.timed_steps(), assignment.gang_size() > 1};
  std::string untimed_message;  // set when the launches logged no step times
  double startup_seconds = 0;
  double peak_memory_bytes = 0;
  for (size_t k = 0; k < launches; ++k) {
    const int64_t micro_batches = micro_batches_per_launch[k];
    const std::string which = short_steps
                                  ? absl::StrFormat(": launch %d of %d (%d micro-batches per step)",
                                                    k + 1, launches, micro_batches)
                                  : "";
    if (context.stop().HasBeenNotified()) {
      return absl::CancelledError(
          absl::StrCat(where, which, ": not started, the probe was stopped"));
    }
    PT_ASSIGN_OR_RETURN(
        const LaunchValues values,
        LaunchValues::ForProbe(assignment, spec.model(), spec.training(), spec.config(),
                               micro_batches, launch->extra_warmup_iterations, master_ports[k]));
    PT_RETURN_IF_ERROR(CheckSwitchesReachTheFramework(launch->name, launch->command, values));
    // The tokens of one GPU's share of a step: a replica's micro-batches over its tp x cp x pp
    // GPUs.
    const ParallelConfig& config = spec.config();
    const double tokens_per_gpu_per_step =
        static_cast<double>(micro_batches * config.micro_batch() * spec.training().seq_len()) /
        static_cast<double>(config.tp() * config.cp() * config.pp());
    absl::StatusOr<LaunchRun> launched =
        RunLaunch(*launch, values, tokens_per_gpu_per_step, expected, context);
    if (absl::IsCancelled(launched.status())) {
      return absl::CancelledError(absl::StrCat(where, which, ": ", launched.status().message()));
    }
    PT_RETURN_IF_ERROR(launched.status());
    peak_memory_bytes = std::max(peak_memory_bytes, launched->peak_memory_bytes);
    CommandOutcome& outcome = launched->outcome;
    if (outcome.outcome != v1::PROBE_OK) {
      run.outcome = outcome.outcome;
      run.detail = absl::StrCat(where, which, ": ", outcome.message);
      break;
    }
    if (k > 0 && outcome.timed_step_times.empty() != run.timed_steps.empty()) {
      // The node that logs step times holds the last rank, whatever the launch.
      run.outcome = v1::PROBE_CRASH;
      run.detail =
          absl::StrCat(where, which, ": ",
                       run.timed_steps.empty() ? "logged step times, but launch 1 logged none"
                                               : "logged no step times, but launch 1 did",
                       ": every launch should log them on the same node");
      break;
    }
    if (outcome.timed_step_times.empty()) {
      untimed_message = outcome.message;
      continue;
    }
    run.timed_steps.push_back({micro_batches, std::move(outcome.timed_step_times)});
    startup_seconds += launched->startup_seconds;
  }
  if (peak_memory_bytes > 0) {
    run.peak_memory_bytes = static_cast<int64_t>(peak_memory_bytes);
    run.peak_memory = Provenance::kMeasured;
    run.peak_memory_note = "on this node";
  }
  if (run.outcome != v1::PROBE_OUTCOME_UNSPECIFIED) return run;
  run.outcome = v1::PROBE_OK;
  if (run.timed_steps.empty()) {
    run.detail =
        absl::StrCat(where, ": ", untimed_message,
                     launches > 1 ? absl::StrFormat(", in each of its %d launches", launches) : "");
    return run;
  }
  run.detail = where;
  run.startup_seconds = startup_seconds;
  run.phases = StepPhases(spec, Provenance::kMeasured);
  if (spec.replica() && spec.config().dp() > 1) {
    // Its data-parallel traffic is that of fewer replicas than the configuration's.
    run.phases[static_cast<int>(ProbePhase::kDpCollectives)] = Provenance::kAbsent;
  }
  run.notes.push_back(absl::StrFormat("%d warm-up iterations dropped from %s",
                                      expected.dropped_iterations,
                                      launches > 1 ? "each launch" : "the launch"));
  run.notes.push_back(
      absl::StrFormat("start-up %.3g s%s (wall time less logged steps)", run.startup_seconds,
                      launches > 1 ? absl::StrFormat(" over %d launches", launches) : ""));
  return run;
}

}  // namespace paratune
