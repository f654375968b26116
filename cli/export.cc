#include "cli/export.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "cli/output.h"
#include "common/status_macros.h"
#include "convert/search_text.h"
#include "convert/spec_convert.h"
#include "estimator/data_parallel_sharding.h"
#include "launch/builtin_templates.h"
#include "launch/launch_template.h"
#include "launch/launch_values.h"
#include "launch/torchtitan_options.h"

namespace paratune {
namespace {

// `text` with every control character a space: the display name, the hosts and the names are
// anyone's text, and a line break would end a comment of an sbatch script and run the rest.
std::string OneLine(std::string text) {
  for (char& c : text) {
    if (absl::ascii_iscntrl(static_cast<unsigned char>(c))) c = ' ';
  }
  return text;
}

// Where the configuration came from, for the comment heading every export. One line.
std::string Provenance(const v1::Search& search, const v1::Candidate& candidate) {
  const v1::ProbeResult& result = candidate.probe_result();
  std::string measured = "not probed";
  if (result.outcome() == v1::PROBE_OK) {
    measured = absl::StrFormat("%.1f TFLOP/s per GPU %s by %s", result.model_tflops_per_gpu(),
                               result.simulated() ? "SIMULATED" : "measured", result.backend());
    if (!result.ran_on().empty()) absl::StrAppend(&measured, ", ", DescribeRanOn(result));
    absl::StrAppend(&measured, "; ", DescribeMemoryHeadroom(candidate.memory(), result));
  }
  return OneLine(absl::StrFormat("%s of %s (%s): predicted %.1f, %s", candidate.name(),
                                 search.name(),
                                 search.display_name().empty() ? "no name" : search.display_name(),
                                 candidate.predicted().model_tflops_per_gpu(), measured));
}

// --format's value for `format`.
const char* FormatName(ExportFormat format) {
  switch (format) {
    case ExportFormat::kMegatron:
      return "megatron";
    case ExportFormat::kNemo:
      return "nemo";
    case ExportFormat::kJson:
      return "json";
    case ExportFormat::kSbatch:
      return "sbatch";
    case ExportFormat::kMegatronBridge:
      return "megatron-bridge";
    case ExportFormat::kTorchTitan:
      return "torchtitan";
    case ExportFormat::kTorchTitanToml:
      return "torchtitan-toml";
  }
  return "unknown";
}

// The built-in template each format renders.
const char* TemplateName(ExportFormat format) {
  switch (format) {
    case ExportFormat::kNemo:
      return "nemo-llama";
    case ExportFormat::kMegatronBridge:
      return "megatron-bridge-llama";
    case ExportFormat::kTorchTitan:
    case ExportFormat::kTorchTitanToml:
      return "torchtitan-llama";
    default:
      return "megatron-llama";
  }
}

// FAILED_PRECONDITION naming the training field when `values` ask for something that
// Megatron-Bridge v0.5.0's recipe overrides cannot state
// (deploy/templates/megatron_bridge_llama.textproto says why for each).
absl::Status CheckMegatronBridgeCanState(const LaunchValues& values) {
  const auto is = [&values](const char* name, const char* value) {
    return values.Get(name).value_or("") == value;
  };
  constexpr char kPreset[] =
      "the recipe's precision preset (mixed_precision, a name such as \"bf16_mixed\") holds it, "
      "and no override reaches a field inside a preset; set it on the ConfigContainer in Python "
      "(cfg.mixed_precision = bf16_mixed(); cfg.mixed_precision.";
  if (is("tp_comm_overlap", "true")) {
    return absl::FailedPreconditionError(
        "training.tp_comm_overlap (true) cannot be exported as Megatron-Bridge v0.5.0 recipe "
        "overrides: Transformer Engine's userbuffers start only from the recipe's "
        "comm_overlap (a CommOverlapConfig), which is None in the recipe, so no override "
        "reaches it; set cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=True) in Python, "
        "or export --format=megatron");
  }
  if (is("fp32_gradients", "false")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "training.fp32_gradients (false) cannot be exported as Megatron-Bridge v0.5.0 recipe "
        "overrides: every precision preset reduces gradients in fp32 and overwrites "
        "ddp.grad_reduce_in_fp32 when the run starts; ",
        kPreset, "grad_reduce_in_fp32 = False), or export --format=megatron"));
  }
  if (is("fp8", "true") && is("fp8_param_gather", "false")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "training.fp8_param_gather (false) with fp8 cannot be exported as Megatron-Bridge "
        "v0.5.0 recipe overrides: the one preset of hybrid fp8 with delayed scaling "
        "(bf16_with_fp8_delayed_scaling_mixed) also gathers fp8 weights; ",
        kPreset, "fp8 = \"hybrid\"), or export --format=megatron"));
  }
  return absl::OkStatus();
}

// FAILED_PRECONDITION naming the field when `builtin` cannot state how `config` shards its
// data-parallel replicas (FindUnstatedSharding): it would train another sharding.
// nemo_llama.textproto says why NeMo v2.4.0's template states only the distributed optimizer.
absl::Status CheckTemplateStatesSharding(const BuiltinTemplate& builtin,
                                         const ParallelConfig& config, const LaunchValues& values,
                                         ExportFormat format) {
  const std::string target =
      absl::StrCat("--format=", FormatName(format), " (the built-in template ",
                   builtin.proto.name(), ", ", builtin.proto.checked_against(), ")");
  switch (FindUnstatedSharding(builtin.launch, values)) {
    case UnstatedSharding::kNone:
      break;
    case UnstatedSharding::kShardedGradients:
      return absl::FailedPreconditionError(absl::StrCat(
          "config.dp_sharding (", DataParallelShardingName(config.dp_sharding()),
          ") cannot be exported as ", target,
          ": it states only whether the distributed optimizer shards the optimizer states; "
          "export --format=megatron or --format=megatron-bridge (Megatron-FSDP)"));
    case UnstatedSharding::kHybridReplicas:
      return absl::FailedPreconditionError(absl::StrCat(
          "config.dp_shard_group (", config.dims().dp_shard_group, ") cannot be exported as ",
          target,
          ": it shards over every data-parallel rank, with no replicas of smaller groups; "
          "export --format=megatron or --format=megatron-bridge"));
  }
  return absl::OkStatus();
}

// A framework's arguments as rendered from a built-in template.
struct Rendered {
  std::string name;
  std::string file;
  std::string entry;
  std::vector<std::string> arguments;
  // The template's environment for the configuration, by name: what the framework needs
  // whatever the probe (e.g. Megatron-LM's CUDA_DEVICE_MAX_CONNECTIONS=1, required with tp or
  // cp > 1 before Blackwell), without a probe's own ({gpu_ids}).
  std::map<std::string, std::string> environment;
  // The release its arguments were checked against (CommandTemplate.checked_against).
  std::string checked_against;
  // For the TorchTitan formats, the options the arguments are written from.
  std::vector<TorchTitanOption> torchtitan_options;
};

bool IsTorchTitan(ExportFormat format) {
  return format == ExportFormat::kTorchTitan || format == ExportFormat::kTorchTitanToml;
}

absl::StatusOr<Rendered> Render(const v1::Search& search, const v1::Candidate& candidate,
                                ExportFormat format) {
  if (format == ExportFormat::kJson) {
    return absl::InvalidArgumentError("--format=json exports the search, not arguments");
  }
  const v1::SearchSpec& spec = search.spec();
  // Checked as the workers that probed it check it.
  PT_ASSIGN_OR_RETURN(
      const ResolvedConfiguration resolved,
      ResolveConfiguration(spec.model(), spec.training(), spec.cluster(), candidate.config()));
  PT_ASSIGN_OR_RETURN(const LaunchValues values,
                      LaunchValues::ForExport(resolved.model, resolved.training, resolved.cluster,
                                              resolved.config));
  // NeMo v2.4.0 starts Transformer Engine's userbuffers only in MegatronCommOverlapCallback,
  // which no recipe override adds (deploy/templates/nemo_llama.textproto says more).
  if (format == ExportFormat::kNemo && values.Get("tp_comm_overlap").value_or("") == "true") {
    return absl::FailedPreconditionError(
        "training.tp_comm_overlap (true) cannot be exported as NeMo v2.4.0 recipe overrides: "
        "NeMo turns tensor-parallel communication overlap on only with "
        "MegatronCommOverlapCallback(tp_comm_overlap=True) in trainer.callbacks, which no "
        "override adds; export --format=megatron, or add the callback to the recipe in Python");
  }
  // Megatron-Core 0.13, which NeMo v2.4.0 pins, has no overlap of the expert-parallel
  // all-to-all for a recipe override to turn on.
  if (format == ExportFormat::kNemo &&
      values.Get("moe_expert_parallel_overlap").value_or("") == "true") {
    return absl::FailedPreconditionError(
        "training.moe_expert_parallel_overlap (true) cannot be exported as NeMo v2.4.0 recipe "
        "overrides: it is Megatron-LM's --overlap-moe-expert-parallel-comm, which no NeMo "
        "v2.4.0 key sets; export --format=megatron");
  }
  // NeMo v2.4.0's pinned keys (frameworks/nemo_v2.4.0_override_keys.txt) name no flex backend.
  if (format == ExportFormat::kNemo && IsFlexDispatcher(resolved.training.moe_token_dispatcher()) &&
      resolved.model.is_moe()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "training.moe_token_dispatcher (",
        TokenDispatcherChoice(resolved.training.moe_token_dispatcher()),
        ") cannot be exported as NeMo v2.4.0 recipe overrides: no NeMo v2.4.0 key sets the flex "
        "dispatcher's backend; export --format=megatron or --format=megatron-bridge"));
  }
  if (format == ExportFormat::kMegatronBridge) {
    PT_RETURN_IF_ERROR(CheckMegatronBridgeCanState(values));
  }
  PT_ASSIGN_OR_RETURN(const BuiltinTemplate builtin, FindBuiltinTemplate(TemplateName(format)));
  // A template that cannot state which layers hold experts would put them on every layer
  // (nemo_llama.textproto says why NeMo v2.4.0's overrides cannot).
  if (resolved.model.is_moe() && resolved.model.MoeLayerCount() < resolved.model.num_layers() &&
      !builtin.launch.Mentions("moe_layer_pattern")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model \"", resolved.model.name(), "\" holds experts on ", resolved.model.MoeLayerCount(),
        " of its ", resolved.model.num_layers(), " layers, which --format=", FormatName(format),
        " (the built-in template ", builtin.proto.name(), ", ", builtin.proto.checked_against(),
        ") cannot state: it would put experts on every layer; export --format=megatron"));
  }
  PT_RETURN_IF_ERROR(CheckTemplateStatesSharding(builtin, resolved.config, values, format));
  PT_ASSIGN_OR_RETURN(std::vector<std::string> arguments,
                      builtin.launch.RenderFrameworkArguments(values));
  std::map<std::string, std::string> environment =
      builtin.launch.RenderFrameworkEnvironment(values);
  std::vector<TorchTitanOption> torchtitan_options;
  if (IsTorchTitan(format)) {
    // Typed by the release's declarations, the options and the job file written from them.
    PT_ASSIGN_OR_RETURN(torchtitan_options, ReadTorchTitanArguments(arguments));
    arguments.clear();
    for (const TorchTitanOption& option : torchtitan_options) {
      arguments.push_back(TorchTitanArgument(option));
    }
  }
  return Rendered{
      builtin.proto.name(),         builtin.file,           builtin.proto.framework_entry(),
      std::move(arguments),         std::move(environment), builtin.proto.checked_against(),
      std::move(torchtitan_options)};
}

// `environment` as "NAME=VALUE" words, by name.
std::vector<std::string> Assignments(const std::map<std::string, std::string>& environment) {
  std::vector<std::string> words;
  for (const auto& [name, value] : environment) words.push_back(absl::StrCat(name, "=", value));
  return words;
}

// Comment lines saying which template the arguments come from, and, when the search was
// probed with a worker's own template, that it is not the one exported.
std::string TemplateNote(const v1::Search& search, const Rendered& rendered) {
  std::string note = absl::StrFormat(
      "# The arguments after %s of the built-in template %s (%s), as a probe runs them,\n"
      "# less the probe's own (a short run on mock data, logging).\n",
      rendered.entry, rendered.name, rendered.file);
  if (!rendered.checked_against.empty()) {
    absl::StrAppend(&note,
                    OneLine(absl::StrCat("# Checked against ", rendered.checked_against,
                                         "; other releases may name them otherwise.")),
                    "\n");
  }
  if (!rendered.environment.empty()) {
    absl::StrAppend(&note, "# Run it with the environment the probe ran with: ",
                    absl::StrJoin(Assignments(rendered.environment), " "), "\n");
  }
  const v1::ProbeSettings& probe = search.spec().probe();
  if (probe.backend() == "command" && probe.command_template() != rendered.name) {
    absl::StrAppend(
        &note,
        OneLine(absl::StrCat("# ", search.name(), " was probed with the workers' template \"",
                             probe.command_template(), "\", not this one.")),
        "\n");
  }
  return note;
}

// `word` as one word of a POSIX shell command: as it is when it holds nothing the shell
// reads, else single-quoted.
std::string ShellWord(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
           absl::string_view("_@%+=:,./-").find(c) != absl::string_view::npos;
  });
  if (plain) return word;
  return absl::StrCat("'", absl::StrReplaceAll(word, {{"'", "'\\''"}}), "'");
}

// The arguments as shell words, joined by `separator`.
std::string ShellWords(const std::vector<std::string>& arguments, absl::string_view separator) {
  std::vector<std::string> words;
  words.reserve(arguments.size());
  for (const std::string& argument : arguments) words.push_back(ShellWord(argument));
  return absl::StrJoin(words, separator);
}

// How to use each framework's arguments: comment lines after the header.
constexpr char kMegatronUsage[] =
    "# Add your data and tokenizer (--data-path, --tokenizer-type ...), --train-iters or\n"
    "# --train-samples, and checkpointing; arguments given later override these.\n";
// NeMo 2 recipe overrides (nemo llm pretrain --factory ... KEY=VALUE).
constexpr char kNemoUsage[] =
    "# Add your data module, trainer.max_steps, logging and checkpointing.\n";
// Megatron-Bridge recipe overrides (torchrun scripts/training/run_recipe.py --recipe ...
// KEY=VALUE), after "# Pass them to torchrun ... ENTRY".
constexpr char kMegatronBridgeUsage[] =
    " in a Megatron-Bridge checkout (the NeMo\n"
    "# containers' /opt/Megatron-Bridge); add your data (--dataset=llm-pretrain\n"
    "# 'dataset.blend=[[PREFIX],null]'; without it the recipe trains on mock data),\n"
    "# train.train_iters, checkpointing and logging.\n";
// TorchTitan options (torchrun ... -m torchtitan.train --section.field=value ...).
constexpr char kTorchTitanUsage[] =
    "# Pass them after torchrun ... -m torchtitan.train --job.config_file=YOUR.toml: options\n"
    "# on the command line override the file's (torchtitan/config/manager.py). Add your\n"
    "# dataset and tokenizer (--training.dataset, --model.hf_assets_path), --training.steps\n"
    "# and checkpointing.\n";
// TorchTitan's TOML job file (torchrun ... -m torchtitan.train --job.config_file=FILE).
constexpr char kTorchTitanJobFileUsage[] =
    "# Run torchrun ... -m torchtitan.train --job.config_file=THIS_FILE; options on the\n"
    "# command line override the file's (torchtitan/config/manager.py). Add your dataset and\n"
    "# tokenizer ([training] dataset, [model] hf_assets_path), [training] steps and\n"
    "# checkpointing. --format=torchtitan writes the same options for the command line.\n";

// What an export of arguments says after the header every one has: the framework's words
// for them and how to use them.
struct Usage {
  const char* title;
  std::string lines;
};

Usage UsageOf(ExportFormat format, const Rendered& rendered) {
  switch (format) {
    case ExportFormat::kNemo:
      return {"NeMo 2 recipe overrides", kNemoUsage};
    case ExportFormat::kMegatronBridge:
      return {"Megatron-Bridge recipe overrides",
              absl::StrCat("# Pass them to torchrun ... ", rendered.entry, kMegatronBridgeUsage)};
    case ExportFormat::kTorchTitan:
      return {"TorchTitan options", kTorchTitanUsage};
    case ExportFormat::kTorchTitanToml:
      return {"TorchTitan job file", kTorchTitanJobFileUsage};
    default:  // kMegatron; json and sbatch have texts of their own
      return {"Megatron-LM arguments", kMegatronUsage};
  }
}

// An export of arguments in `format` (neither json nor sbatch): "# TITLE for PROVENANCE",
// where the arguments come from (TemplateNote), how to use them, then the arguments as shell
// words, one per line, or for torchtitan-toml as the job file.
std::string FrameworkText(const v1::Search& search, const v1::Candidate& candidate,
                          const Rendered& rendered, ExportFormat format) {
  const Usage usage = UsageOf(format, rendered);
  const std::string body = format == ExportFormat::kTorchTitanToml
                               ? TorchTitanToml(rendered.torchtitan_options)
                               : absl::StrCat(ShellWords(rendered.arguments, " \\\n"), "\n");
  return absl::StrCat("# ", usage.title, " for ", Provenance(search, candidate), "\n",
                      TemplateNote(search, rendered), usage.lines, body);
}

absl::StatusOr<std::string> Json(const v1::Search& search, const v1::Candidate& candidate) {
  // The spec and the chosen candidate: everything needed to reproduce the launch.
  v1::Search exported = search;
  exported.clear_candidates();
  *exported.add_candidates() = candidate;
  return ToJson(exported);
}

std::string Sbatch(const v1::Search& search, const v1::Candidate& candidate,
                   const Rendered& rendered) {
  const v1::ClusterSpec& cluster = search.spec().cluster();
  return absl::StrFormat(
      R"(#!/bin/bash
# Megatron-LM pretraining with %s
%s#SBATCH --job-name=paratune-%s
#SBATCH --nodes=%d
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=%d
#SBATCH --exclusive
# Set MEGATRON_LM to a Megatron-LM checkout; extra arguments (data, tokenizer, iterations,
# checkpoints) are passed through and override the ones here:
# sbatch this-script.sh --data-path ... --tokenizer-type ... --train-iters ...
set -euo pipefail
%sMASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_ADDR MASTER_PORT=${MASTER_PORT:-29500}
srun --kill-on-bad-exit=1 bash -c 'exec torchrun --nnodes="$SLURM_NNODES" \
  --nproc-per-node=%d --node-rank="$SLURM_NODEID" \
  --master-addr="$MASTER_ADDR" --master-port="$MASTER_PORT" \
  "${MEGATRON_LM:?set MEGATRON_LM to a Megatron-LM checkout}/%s" "$@"' bash \
  %s \
  "$@"
)",
      Provenance(search, candidate), TemplateNote(search, rendered),
      absl::StrReplaceAll(absl::StripPrefix(search.name(), "searches/"), {{"/", "-"}}),
      cluster.num_nodes(), cluster.gpus_per_node(),
      rendered.environment.empty()
          ? ""
          : absl::StrCat("export ", ShellWords(Assignments(rendered.environment), " "), "\n"),
      cluster.gpus_per_node(), rendered.entry, ShellWords(rendered.arguments, " \\\n  "));
}

}  // namespace

absl::StatusOr<v1::Candidate> ChooseCandidate(const v1::Search& search,
                                              absl::string_view candidate) {
  if (!candidate.empty()) {
    int64_t n = 0;
    const std::string name = absl::SimpleAtoi(candidate, &n)
                                 ? absl::StrCat(search.name(), "/candidates/", n)
                                 : std::string(candidate);
    for (const v1::Candidate& c : search.candidates()) {
      if (c.name() == name) return c;
    }
    return absl::NotFoundError(
        absl::StrCat("--candidate (\"", candidate, "\"): ", search.name(), " has no ", name));
  }
  // Candidates come ranked: the first one probed OK is the best measured.
  for (const v1::Candidate& c : search.candidates()) {
    if (c.state() == v1::CANDIDATE_PROBED && c.probe_result().outcome() == v1::PROBE_OK) return c;
  }
  return absl::FailedPreconditionError(absl::StrCat(
      search.name(), " has no candidate probed OK yet (", v1::SearchState_Name(search.state()),
      "); pass --candidate=N to export a predicted one"));
}

absl::StatusOr<std::vector<std::string>> ExportArguments(const v1::Search& search,
                                                         const v1::Candidate& candidate,
                                                         ExportFormat format) {
  PT_ASSIGN_OR_RETURN(Rendered rendered, Render(search, candidate, format));
  return std::move(rendered.arguments);
}

absl::StatusOr<std::map<std::string, std::string>> ExportEnvironment(const v1::Search& search,
                                                                     const v1::Candidate& candidate,
                                                                     ExportFormat format) {
  PT_ASSIGN_OR_RETURN(Rendered rendered, Render(search, candidate, format));
  return std::move(rendered.environment);
}

absl::StatusOr<std::string> ExportCandidate(const v1::Search& search,
                                            const v1::Candidate& candidate, ExportFormat format) {
  if (format == ExportFormat::kJson) return Json(search, candidate);
  PT_ASSIGN_OR_RETURN(const Rendered rendered, Render(search, candidate, format));
  switch (format) {
    case ExportFormat::kSbatch:
      return Sbatch(search, candidate, rendered);
    case ExportFormat::kMegatron:
    case ExportFormat::kNemo:
    case ExportFormat::kMegatronBridge:
    case ExportFormat::kTorchTitan:
    case ExportFormat::kTorchTitanToml:
      return FrameworkText(search, candidate, rendered, format);
    case ExportFormat::kJson:
      break;
  }
  return absl::InvalidArgumentError("unknown export format");
}

}  // namespace paratune
