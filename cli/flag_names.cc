#include "cli/flag_names.h"

#include <cctype>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace paratune {
namespace {

struct FieldFlag {
  const char* field;  // the path below the request (SearchSpec's fields without "spec.")
  const char* flag;
  bool model_dimension = false;  // set by a flag only for an explicit model
};

// Every request field a flag of cli/main.cc sets.
constexpr FieldFlag kFieldFlags[] = {
    {"model.preset", "--model"},
    {"model.hidden_size", "--hidden_size", true},
    {"model.ffn_hidden_size", "--ffn_hidden_size", true},
    {"model.num_layers", "--num_layers", true},
    {"model.num_attention_heads", "--num_heads", true},
    {"model.num_kv_heads", "--num_kv_heads", true},
    {"model.vocab_size", "--vocab_size", true},
    {"model.tied_embeddings", "--tied_embeddings", true},
    {"cluster.gpu.type", "--gpu"},
    {"cluster.num_nodes", "--nodes"},
    {"cluster.gpus_per_node", "--gpus_per_node"},
    {"training.global_batch_size", "--global_batch"},
    {"training.seq_len", "--seq_len"},
    {"training.precision", "--fp8"},
    {"training.distributed_optimizer", "--distributed_optimizer"},
    {"training.fp32_gradients", "--fp32_grads"},
    {"training.flash_attention", "--flash_attention"},
    {"training.fp8_param_gather", "--fp8_param_gather"},
    {"training.tp_comm_overlap", "--tp_comm_overlap"},
    {"training.cp_comm_type", "--cp_comm_type"},
    {"config.data_parallel", "--dp"},
    {"config.tensor_parallel", "--tp"},
    {"config.pipeline_parallel", "--pp"},
    {"config.context_parallel", "--cp"},
    {"config.micro_batch_size", "--mbs"},
    {"config.virtual_pipeline", "--vp"},
    {"config.recompute", "--recompute"},
    {"config.sequence_parallel", "--sequence_parallel"},
    {"safe_memory_fraction", "--safe_fraction"},
    {"space.micro_batch_sizes", "--micro_batches"},
    {"space.virtual_pipeline_sizes", "--virtual_pipeline_sizes"},
    {"space.recompute_modes", "--recompute_modes"},
    {"space.allow_tp_cp_across_nodes", "--allow_tp_cp_across_nodes"},
    {"space.allow_uneven_pipeline_stages", "--allow_uneven_pipeline"},
    {"space.safe_memory_fraction", "--safe_fraction"},
    {"space.memory_policy", "--memory_policy"},
    // The older form of memory_policy; the CLI asks for it with --memory_policy.
    {"space.include_risky", "--memory_policy"},
    {"policy", "--policy"},
    {"top_k", "--top_k"},
    {"adaptive.tolerance", "--tolerance"},
    {"adaptive.confidence_sigmas", "--confidence_sigmas"},
    {"adaptive.max_in_flight", "--max_in_flight"},
    {"adaptive.max_confirmations", "--max_confirmations"},
    {"adaptive.confirmation_steps_factor", "--confirmation_steps_factor"},
    {"budget.max_probes", "--max_probes"},
    {"budget.max_gpu_seconds", "--max_gpu_hours, as GPU-seconds,"},
    {"budget.deadline_seconds", "--deadline, in seconds,"},
    {"probe.backend", "--backend"},
    {"probe.command_template", "--command_template"},
    {"probe.scope", "--scope"},
    {"probe.warmup_steps", "--warmup_steps"},
    {"probe.timed_steps", "--timed_steps"},
    {"probe.deadline_seconds", "--probe_deadline"},
    {"probe.startup_seconds", "--probe_startup"},
    {"probe.max_attempts", "--max_attempts"},
    {"probe.max_launch_failures", "--max_launch_failures"},
    {"seed", "--seed"},
    {"display_name", "--name"},
    {"limit", "--limit"},
};

// Characters of a field path.
bool IsPathChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.';
}

}  // namespace

std::string NameFlagsInMessage(absl::string_view message, bool explicit_model) {
  std::string out;
  size_t i = 0;
  while (i < message.size()) {
    // A field path starts with a letter or digit that follows no path character.
    if (!IsPathChar(message[i]) || message[i] == '.' || (i > 0 && IsPathChar(message[i - 1]))) {
      out += message[i++];
      continue;
    }
    size_t end = i;
    while (end < message.size() && IsPathChar(message[end])) ++end;
    absl::string_view path = message.substr(i, end - i);
    // A sentence's full stop is no part of the path.
    while (absl::EndsWith(path, ".")) path.remove_suffix(1);
    absl::string_view field = path;
    const bool prefixed = absl::ConsumePrefix(&field, "spec.");
    // A one-word field ("limit", "policy") is also a word of prose: it is a field only
    // prefixed, or where a message opens with it ("limit (-1) must be >= 0").
    const bool is_field = prefixed || absl::StrContains(field, '.') || i == 0;
    const char* flag = nullptr;
    for (const FieldFlag& mapping : kFieldFlags) {
      if (is_field && field == mapping.field && (explicit_model || !mapping.model_dimension)) {
        flag = mapping.flag;
        break;
      }
    }
    if (flag != nullptr) {
      out += flag;
    } else {
      absl::StrAppend(&out, path);
    }
    i += path.size();
  }
  return out;
}

absl::Status NameFlags(const absl::Status& status, bool explicit_model) {
  if (status.ok()) return status;
  return absl::Status(status.code(), NameFlagsInMessage(status.message(), explicit_model));
}

}  // namespace paratune
