#include "worker/launch_values.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "convert/spec_convert.h"
#include "estimator/pipeline_layout.h"

namespace paratune {
namespace {

using Kind = PlaceholderKind;

// Megatron-LM's uneven split counts the embedding and the loss as one layer each
// (--account-for-embedding-in-pipeline-split, --account-for-loss-in-pipeline-split).
constexpr int64_t kUnevenSplitExtraLayers = 2;

bool PlainText(absl::string_view text) {
  for (char c : text) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) &&
        absl::string_view("._,:/-").find(c) == absl::string_view::npos) {
      return false;
    }
  }
  return !text.empty();
}

absl::Status CheckPlain(const std::string& field, absl::string_view text) {
  if (PlainText(text)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, " (\"", absl::CHexEscape(text.substr(0, 256)),
                   "\") must be letters, digits and . , : / _ - to fill a launch template"));
}

// "none", "selective" or "full": the API's enum name without its prefix.
std::string RecomputeName(const ParallelConfig& config) {
  return absl::AsciiStrToLower(absl::StripPrefix(
      v1::Recompute_Name(ParallelConfigToProto(config).recompute()), "RECOMPUTE_"));
}

}  // namespace

const std::vector<Placeholder>& LaunchPlaceholders() {
  // What each means: docs/backends.md, "Templates".
  static const std::vector<Placeholder>* const placeholders = new std::vector<Placeholder>{
      {"tp", Kind::kInteger},
      {"pp", Kind::kInteger},
      {"cp", Kind::kInteger},
      {"dp", Kind::kInteger},  // the probe's: fewer replicas for a replica-scope probe
      {"mbs", Kind::kInteger},
      {"gbs", Kind::kInteger},  // the launch's micro-batches per step of the probe's replicas
      {"seq_len", Kind::kInteger},
      {"vp", Kind::kInteger},
      {"layers_per_virtual_stage", Kind::kInteger},
      {"uneven_pipeline", Kind::kBoolean},
      {"recompute", Kind::kRecompute},
      {"sequence_parallel", Kind::kBoolean},  // false whenever tp is 1
      {"num_layers", Kind::kInteger},
      {"hidden_size", Kind::kInteger},
      {"ffn_hidden_size", Kind::kInteger},
      {"num_attention_heads", Kind::kInteger},
      {"num_kv_heads", Kind::kInteger},
      {"vocab_size", Kind::kInteger},
      {"tied_embeddings", Kind::kBoolean},
      {"fp8", Kind::kBoolean},
      {"distributed_optimizer", Kind::kBoolean},
      {"fp32_gradients", Kind::kBoolean},
      {"train_iters", Kind::kInteger},  // extra warm-up + warm-up + timed steps, per launch
      {"nnodes", Kind::kInteger},
      {"node_rank", Kind::kInteger},
      {"nproc_per_node", Kind::kInteger},
      {"world_size", Kind::kInteger},
      {"master_addr", Kind::kText},
      {"master_port", Kind::kInteger},
      {"gpu_ids", Kind::kText},
      {"probe_name", Kind::kText},
  };
  return *placeholders;
}

const Placeholder* FindPlaceholder(absl::string_view name) {
  for (const Placeholder& placeholder : LaunchPlaceholders()) {
    if (name == placeholder.name) return &placeholder;
  }
  return nullptr;
}

absl::Status CheckPlaceholderValue(const Placeholder& placeholder, absl::string_view value) {
  int64_t number = 0;
  switch (placeholder.kind) {
    case Kind::kInteger:
      if (absl::SimpleAtoi(value, &number)) return absl::OkStatus();
      return absl::InvalidArgumentError(
          absl::StrCat("{", placeholder.name, "} is an integer, never \"", value, "\""));
    case Kind::kBoolean:
      if (value == "true" || value == "false") return absl::OkStatus();
      return absl::InvalidArgumentError(
          absl::StrCat("{", placeholder.name, "} is true or false, never \"", value, "\""));
    case Kind::kRecompute:
      if (value == "none" || value == "selective" || value == "full") return absl::OkStatus();
      return absl::InvalidArgumentError(absl::StrCat(
          "{", placeholder.name, "} is none, selective or full, never \"", value, "\""));
    case Kind::kText:
      if (PlainText(value)) return absl::OkStatus();
      return absl::InvalidArgumentError(
          absl::StrCat("{", placeholder.name, "} is letters, digits and . , : / _ -, never \"",
                       absl::CHexEscape(value), "\""));
  }
  return absl::OkStatus();
}

absl::Status CheckLaunchShape(const v1::ProbeAssignment& assignment, const ProbeSpecs& specs) {
  const ParallelConfig& config = specs.config;
  const int64_t replica = config.tp() * config.pp() * config.cp();
  const int64_t ranks = assignment.num_ranks();
  if (ranks < replica || ranks % replica != 0 || ranks > ConfigurationGpus(config) ||
      config.dp() % (ranks / replica) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("assignment.num_ranks (", ranks, ") must be a number of tp x pp x cp (",
                     replica, ") replicas that divides data_parallel (", config.dp(), ")"));
  }
  if (assignment.scope() == v1::PROBE_SCOPE_FULL && ranks != ConfigurationGpus(config)) {
    return absl::InvalidArgumentError(
        absl::StrCat("assignment.num_ranks (", ranks, ") of a full-scope probe must be the ",
                     ConfigurationGpus(config), " GPUs of the configuration"));
  }
  if (assignment.gang_size() == 0) {
    return absl::InvalidArgumentError(
        "assignment.gang (empty) must list the workers running the probe");
  }
  int64_t next_rank = 0;
  for (int i = 0; i < assignment.gang_size(); ++i) {
    const v1::GangMember& member = assignment.gang(i);
    const std::string field = absl::StrCat("assignment.gang[", i, "]");
    if (member.first_rank() != next_rank || member.num_ranks() < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, " (first_rank ", member.first_rank(), ", num_ranks ", member.num_ranks(),
          ") must start at rank ", next_rank, " and hold at least one"));
    }
    next_rank += member.num_ranks();
    PT_RETURN_IF_ERROR(CheckPlain(absl::StrCat(field, ".hostname"), member.hostname()));
  }
  if (next_rank != ranks) {
    return absl::InvalidArgumentError(absl::StrCat(
        "assignment.gang (", next_rank, " ranks) must hold assignment.num_ranks (", ranks, ")"));
  }
  if (assignment.gang_index() < 0 || assignment.gang_index() >= assignment.gang_size()) {
    return absl::InvalidArgumentError(absl::StrCat("assignment.gang_index (",
                                                   assignment.gang_index(), ") must be in [0, ",
                                                   assignment.gang_size(), ")"));
  }
  const int64_t local = assignment.gang(assignment.gang_index()).num_ranks();
  if (assignment.gpu_indices_size() != local) {
    return absl::InvalidArgumentError(
        absl::StrCat("assignment.gpu_indices (", assignment.gpu_indices_size(),
                     " GPUs) must have one GPU per rank of this worker (", local, ")"));
  }
  for (int i = 0; i < assignment.gpu_indices_size(); ++i) {
    if (assignment.gpu_indices(i) < 0) {
      return absl::InvalidArgumentError(absl::StrCat("assignment.gpu_indices[", i, "] (",
                                                     assignment.gpu_indices(i), ") must be >= 0"));
    }
  }
  PT_RETURN_IF_ERROR(CheckPlain("assignment.name", assignment.name()));
  return absl::OkStatus();
}

absl::StatusOr<LaunchValues> LaunchValues::ForProbe(const v1::ProbeAssignment& assignment,
                                                    const ProbeSpecs& specs,
                                                    int64_t micro_batches_per_step,
                                                    int64_t extra_warmup_iterations,
                                                    int master_port) {
  PT_RETURN_IF_ERROR(CheckLaunchShape(assignment, specs));
  const ParallelConfig& config = specs.config;
  const ModelSpec& model = specs.model;
  const TrainingSpec& training = specs.training;
  const int64_t probe_dp = assignment.num_ranks() / (config.tp() * config.pp() * config.cp());

  LaunchValues values;
  values.SetInteger("tp", config.tp());
  values.SetInteger("pp", config.pp());
  values.SetInteger("cp", config.cp());
  values.SetInteger("dp", probe_dp);
  values.SetInteger("mbs", config.micro_batch());
  values.SetInteger("gbs", micro_batches_per_step * probe_dp * config.micro_batch());
  values.SetInteger("seq_len", training.seq_len());
  values.SetInteger("vp", config.virtual_pipeline());
  // Valid configurations split their layers evenly or, counting the embedding and the loss
  // as a layer each, unevenly (estimator/pipeline_layout.h).
  const int64_t stages = config.pp() * config.virtual_pipeline();
  const bool uneven =
      !EvenPipelineSplitFits(model.num_layers(), config.pp(), config.virtual_pipeline());
  values.SetBoolean("uneven_pipeline", uneven);
  values.SetInteger("layers_per_virtual_stage",
                    (model.num_layers() + (uneven ? kUnevenSplitExtraLayers : 0)) / stages);
  values.SetText("recompute", RecomputeName(config));
  values.SetBoolean("sequence_parallel", config.sequence_parallel() && config.tp() > 1);
  values.SetInteger("num_layers", model.num_layers());
  values.SetInteger("hidden_size", model.hidden_size());
  values.SetInteger("ffn_hidden_size", model.ffn_hidden_size());
  values.SetInteger("num_attention_heads", model.num_attention_heads());
  values.SetInteger("num_kv_heads", model.num_kv_heads());
  values.SetInteger("vocab_size", model.vocab_size());
  values.SetBoolean("tied_embeddings", model.tied_embeddings());
  values.SetBoolean("fp8", training.fp8());
  values.SetBoolean("distributed_optimizer", training.distributed_optimizer());
  values.SetBoolean("fp32_gradients", training.fp32_gradients());
  values.SetInteger("train_iters",
                    extra_warmup_iterations + assignment.warmup_steps() + assignment.timed_steps());
  values.SetInteger("nnodes", assignment.gang_size());
  values.SetInteger("node_rank", assignment.gang_index());
  values.SetInteger("nproc_per_node", assignment.gpu_indices_size());
  values.SetInteger("world_size", assignment.num_ranks());
  values.SetText("master_addr", assignment.gang(0).hostname());
  values.SetInteger("master_port", master_port);
  values.SetText("gpu_ids", absl::StrJoin(assignment.gpu_indices(), ","));
  values.SetText("probe_name", assignment.name());
  return values;
}

absl::StatusOr<std::string> LaunchValues::Get(absl::string_view name) const {
  auto it = values_.find(name);
  if (it == values_.end()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown placeholder {", name, "}"));
  }
  return it->second;
}

void LaunchValues::SetText(const char* name, std::string value) {
  values_[name] = std::move(value);
}

void LaunchValues::SetInteger(const char* name, int64_t value) {
  values_[name] = absl::StrCat(value);
}

void LaunchValues::SetBoolean(const char* name, bool value) {
  values_[name] = value ? "true" : "false";
}

}  // namespace paratune
