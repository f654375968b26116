// `paratune export`: a search's chosen configuration as launch arguments for the frameworks
// users train with (DESIGN.md §10): Megatron-LM command-line arguments, NeMo 2 recipe
// overrides, Megatron-Bridge recipe overrides, TorchTitan options or its TOML job file, JSON,
// or a ready sbatch script running Megatron-LM under torchrun. The arguments
// are rendered from the launch templates that command-backend probes run (deploy/templates/,
// built in: launch/builtin_templates.h), so what is exported is what a probe measured.
#ifndef PARATUNE_CLI_EXPORT_H_
#define PARATUNE_CLI_EXPORT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/search.pb.h"

namespace paratune {

// --format: megatron, nemo, json, sbatch, megatron-bridge, torchtitan or torchtitan-toml.
enum class ExportFormat {
  kMegatron,
  kNemo,
  kJson,
  kSbatch,
  kMegatronBridge,
  kTorchTitan,
  kTorchTitanToml,
};

// The candidate to export: searches/{id}/candidates/{n} when `candidate` names one (n alone
// is accepted), else the best measured (the first of the ranked candidates, probed OK).
// NOT_FOUND naming the candidate; FAILED_PRECONDITION when nothing was measured OK.
absl::StatusOr<v1::Candidate> ChooseCandidate(const v1::Search& search,
                                              absl::string_view candidate);

// The framework arguments that `format` writes for `candidate`, one argv element each: for
// megatron and sbatch the Megatron-LM arguments after pretrain_gpt.py of the built-in template
// "megatron-llama", for nemo the NeMo 2 overrides of "nemo-llama", for megatron-bridge the
// run_recipe.py options and overrides of "megatron-bridge-llama", for torchtitan and
// torchtitan-toml the TorchTitan options after torchtitan.train of "torchtitan-llama" (each
// an option of TorchTitan v0.2.2 with a value of its type: launch/torchtitan_options.h's
// errors otherwise), rendered for the whole
// configuration with the search's global batch and without the template's {?probe=true}
// elements: the arguments a probe of the candidate runs, less its short run on mock data and
// its logging. INVALID_ARGUMENT for json, or naming the field when the search's model,
// training run or cluster or the candidate's configuration cannot be resolved (a preset this
// build does not know); FAILED_PRECONDITION for nemo when the configuration overlaps
// tensor-parallel communication (training.tp_comm_overlap with tp > 1), which NeMo v2.4.0's
// recipe overrides cannot turn on; FAILED_PRECONDITION for megatron-bridge naming the field
// and value that Megatron-Bridge v0.5.0's overrides cannot state (tensor-parallel
// communication overlap, bf16 gradient reduction, fp8 without fp8 weights); for nemo and
// megatron-bridge, a model that keeps dense layers between its MoE layers; naming
// config.dp_sharding or config.dp_shard_group and the value, a sharding the template cannot
// state (FindUnstatedSharding: for nemo sharded gradients or weights and hybrid groups); for
// torchtitan FAILED_PRECONDITION saying why when TorchTitan v0.2.2 cannot run the
// configuration (launch/torchtitan_job.h: a model of no llama3 flavor, ...); the built-in
// template's errors (launch/builtin_templates.h, LaunchTemplate::RenderFrameworkArguments).
absl::StatusOr<std::vector<std::string>> ExportArguments(const v1::Search& search,
                                                         const v1::Candidate& candidate,
                                                         ExportFormat format);

// The environment variables the framework needs for `candidate` in `format` (json excepted):
// the built-in template's env rendered for the whole configuration, less what only one
// probe's launch sets (CUDA_VISIBLE_DEVICES). ExportArguments' errors.
absl::StatusOr<std::map<std::string, std::string>> ExportEnvironment(const v1::Search& search,
                                                                     const v1::Candidate& candidate,
                                                                     ExportFormat format);

// The text of `candidate` of `search` in `format`: a comment saying where the configuration
// and the arguments come from, then ExportArguments (shell words, one per line; for sbatch a
// script running them), or for torchtitan-toml the same options as a TorchTitan job file
// (TorchTitanToml). ExportArguments' errors.
absl::StatusOr<std::string> ExportCandidate(const v1::Search& search,
                                            const v1::Candidate& candidate, ExportFormat format);

}  // namespace paratune

#endif  // PARATUNE_CLI_EXPORT_H_
