#include "cli/export.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "convert/search_text.h"
#include "convert/spec_convert.h"
#include "google/protobuf/util/json_util.h"

namespace paratune {
namespace {

int64_t VirtualStages(const v1::ParallelConfig& config) {
  return config.virtual_pipeline() > 1 ? config.virtual_pipeline() : 1;
}

bool SequenceParallel(const v1::ParallelConfig& config) {
  return config.tensor_parallel() > 1 &&
         (!config.has_sequence_parallel() || config.sequence_parallel());
}

// Where the configuration came from, for the comment heading every export. One line: the
// display name and the hosts are anyone's text, and a line break would end the comment of
// an sbatch script and run the rest.
std::string Provenance(const v1::Search& search, const v1::Candidate& candidate) {
  const v1::ProbeResult& result = candidate.probe_result();
  std::string measured = "not probed";
  if (result.outcome() == v1::PROBE_OK) {
    measured = absl::StrFormat("%.1f TFLOP/s per GPU %s by %s", result.model_tflops_per_gpu(),
                               result.simulated() ? "SIMULATED" : "measured", result.backend());
    if (!result.ran_on().empty()) absl::StrAppend(&measured, ", ", DescribeRanOn(result));
    absl::StrAppend(&measured, "; ", DescribeMemoryHeadroom(candidate.memory(), result));
  }
  std::string text =
      absl::StrFormat("%s of %s (%s): predicted %.1f, %s", candidate.name(), search.name(),
                      search.display_name().empty() ? "no name" : search.display_name(),
                      candidate.predicted().model_tflops_per_gpu(), measured);
  for (char& c : text) {
    if (absl::ascii_iscntrl(c)) c = ' ';
  }
  return text;
}

// Megatron-LM (megatron/training/arguments.py) arguments, one per element.
absl::StatusOr<std::vector<std::string>> MegatronArguments(const v1::Search& search,
                                                           const v1::Candidate& candidate) {
  const v1::SearchSpec& spec = search.spec();
  PT_ASSIGN_OR_RETURN(const ModelSpec model, ModelSpecFromProto(spec.model()));
  PT_ASSIGN_OR_RETURN(const TrainingSpec training, TrainingSpecFromProto(spec.training()));
  const ModelDimensions& m = model.dims();
  const v1::ParallelConfig& c = candidate.config();
  std::vector<std::string> args = {
      absl::StrCat("--tensor-model-parallel-size ", c.tensor_parallel()),
      absl::StrCat("--pipeline-model-parallel-size ", c.pipeline_parallel()),
      absl::StrCat("--context-parallel-size ", c.context_parallel()),
      absl::StrCat("--micro-batch-size ", c.micro_batch_size()),
      absl::StrCat("--global-batch-size ", training.global_batch_size()),
      absl::StrCat("--seq-length ", training.seq_len()),
      absl::StrCat("--max-position-embeddings ", training.seq_len()),
      absl::StrCat("--num-layers ", m.num_layers),
      absl::StrCat("--hidden-size ", m.hidden_size),
      absl::StrCat("--ffn-hidden-size ", m.ffn_hidden_size),
      absl::StrCat("--num-attention-heads ", m.num_attention_heads),
  };
  if (m.num_kv_heads != m.num_attention_heads) {
    args.push_back("--group-query-attention");
    args.push_back(absl::StrCat("--num-query-groups ", m.num_kv_heads));
  }
  args.insert(args.end(), {"--swiglu", "--normalization RMSNorm", "--position-embedding-type rope",
                           "--disable-bias-linear", "--bf16"});
  if (!m.tied_embeddings) args.push_back("--untie-embeddings-and-output-weights");
  if (VirtualStages(c) > 1) {
    args.push_back(absl::StrCat("--num-layers-per-virtual-pipeline-stage ",
                                m.num_layers / (c.pipeline_parallel() * VirtualStages(c))));
  }
  if (m.num_layers % (c.pipeline_parallel() * VirtualStages(c)) != 0) {
    // The uneven split the estimator planned: embedding and loss each count as a layer.
    args.push_back("--account-for-embedding-in-pipeline-split");
    args.push_back("--account-for-loss-in-pipeline-split");
  }
  if (SequenceParallel(c)) args.push_back("--sequence-parallel");
  if (training.distributed_optimizer()) args.push_back("--use-distributed-optimizer");
  if (training.fp32_gradients()) args.push_back("--accumulate-allreduce-grads-in-fp32");
  if (training.flash_attention()) args.push_back("--use-flash-attn");
  if (spec.training().precision() == v1::FP8) args.push_back("--fp8-format hybrid");
  switch (c.recompute()) {
    case v1::RECOMPUTE_SELECTIVE:
      args.push_back("--recompute-granularity selective");
      break;
    case v1::RECOMPUTE_FULL:
      args.insert(args.end(), {"--recompute-granularity full", "--recompute-method uniform",
                               "--recompute-num-layers 1"});
      break;
    default:
      break;
  }
  return args;
}

std::string Megatron(const v1::Search& search, const v1::Candidate& candidate,
                     const std::vector<std::string>& args) {
  return absl::StrCat("# Megatron-LM arguments for ", Provenance(search, candidate),
                      "\n# Add your data, tokenizer, optimizer and checkpoint arguments.\n",
                      absl::StrJoin(args, " \\\n"), "\n");
}

// NeMo 2 recipe overrides (nemo llm pretrain --factory ... KEY=VALUE).
std::string Nemo(const v1::Search& search, const v1::Candidate& candidate) {
  const v1::SearchSpec& spec = search.spec();
  const v1::ParallelConfig& c = candidate.config();
  std::vector<std::string> overrides = {
      absl::StrCat("trainer.num_nodes=", spec.cluster().num_nodes()),
      absl::StrCat("trainer.devices=", spec.cluster().gpus_per_node()),
      absl::StrCat("trainer.strategy.tensor_model_parallel_size=", c.tensor_parallel()),
      absl::StrCat("trainer.strategy.pipeline_model_parallel_size=", c.pipeline_parallel()),
      absl::StrCat("trainer.strategy.context_parallel_size=", c.context_parallel()),
      absl::StrCat("trainer.strategy.virtual_pipeline_model_parallel_size=",
                   VirtualStages(c) > 1 ? absl::StrCat(VirtualStages(c)) : "None"),
      absl::StrCat("trainer.strategy.sequence_parallel=", SequenceParallel(c) ? "True" : "False"),
      absl::StrCat("data.micro_batch_size=", c.micro_batch_size()),
      absl::StrCat("data.global_batch_size=", spec.training().global_batch_size()),
      absl::StrCat("data.seq_length=", spec.training().seq_len()),
  };
  if (c.recompute() == v1::RECOMPUTE_FULL) {
    overrides.insert(overrides.end(), {"model.config.recompute_granularity=full",
                                       "model.config.recompute_method=uniform",
                                       "model.config.recompute_num_layers=1"});
  } else if (c.recompute() == v1::RECOMPUTE_SELECTIVE) {
    overrides.push_back("model.config.recompute_granularity=selective");
  }
  return absl::StrCat("# NeMo 2 recipe overrides for ", Provenance(search, candidate), "\n",
                      absl::StrJoin(overrides, " \\\n"), "\n");
}

absl::StatusOr<std::string> Json(const v1::Search& search, const v1::Candidate& candidate) {
  // The spec and the chosen candidate: everything needed to reproduce the launch.
  v1::Search exported = search;
  exported.clear_candidates();
  *exported.add_candidates() = candidate;
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  const auto status = google::protobuf::util::MessageToJsonString(exported, &json, options);
  if (!status.ok()) return absl::InternalError(std::string(status.message()));
  return json;
}

std::string Sbatch(const v1::Search& search, const v1::Candidate& candidate,
                   const std::vector<std::string>& args) {
  const v1::ClusterSpec& cluster = search.spec().cluster();
  return absl::StrFormat(
      R"(#!/bin/bash
# Megatron-LM pretraining with %s
#SBATCH --job-name=paratune-%s
#SBATCH --nodes=%d
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=%d
#SBATCH --exclusive
# Set MEGATRON_LM to a Megatron-LM checkout; extra arguments (data, tokenizer, ...) are
# passed through: sbatch this-script.sh --data-path ... --tokenizer-type ...
set -euo pipefail
export CUDA_DEVICE_MAX_CONNECTIONS=1
MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_ADDR MASTER_PORT=${MASTER_PORT:-29500}
srun --kill-on-bad-exit=1 bash -c 'exec torchrun --nnodes="$SLURM_NNODES" \
  --nproc-per-node=%d --node-rank="$SLURM_NODEID" \
  --master-addr="$MASTER_ADDR" --master-port="$MASTER_PORT" \
  "${MEGATRON_LM:?set MEGATRON_LM to a Megatron-LM checkout}/pretrain_gpt.py" "$@"' bash \
  %s \
  "$@"
)",
      Provenance(search, candidate),
      absl::StrReplaceAll(absl::StripPrefix(search.name(), "searches/"), {{"/", "-"}}),
      cluster.num_nodes(), cluster.gpus_per_node(), cluster.gpus_per_node(),
      absl::StrJoin(args, " \\\n  "));
}

}  // namespace

absl::StatusOr<ExportFormat> ParseExportFormat(absl::string_view text) {
  const std::string format = absl::AsciiStrToLower(text);
  if (format == "megatron") return ExportFormat::kMegatron;
  if (format == "nemo") return ExportFormat::kNemo;
  if (format == "json") return ExportFormat::kJson;
  if (format == "sbatch") return ExportFormat::kSbatch;
  return absl::InvalidArgumentError(
      absl::StrCat("--format (\"", text, "\") must be megatron, nemo, json or sbatch"));
}

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

absl::StatusOr<std::string> ExportCandidate(const v1::Search& search,
                                            const v1::Candidate& candidate, ExportFormat format) {
  switch (format) {
    case ExportFormat::kNemo:
      return Nemo(search, candidate);
    case ExportFormat::kJson:
      return Json(search, candidate);
    case ExportFormat::kMegatron:
    case ExportFormat::kSbatch: {
      PT_ASSIGN_OR_RETURN(const std::vector<std::string> args,
                          MegatronArguments(search, candidate));
      return format == ExportFormat::kMegatron ? Megatron(search, candidate, args)
                                               : Sbatch(search, candidate, args);
    }
  }
  return absl::InvalidArgumentError("unknown export format");
}

}  // namespace paratune
