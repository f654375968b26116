#include "launch/torchtitan_job.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace paratune {
namespace {

// One llama3 flavor of TorchTitan v0.2.2 (torchtitan/models/llama3/__init__.py:51-104) with the
// dimensions its Transformer builds: the vocabulary is TransformerModelArgs' default
// (model/args.py:33), the LM head apart from the embedding (model/model.py:448, 458), and
// the FFN width FeedForward's 2/3 x 4 dim, times ffn_dim_multiplier, rounded up to a multiple
// of multiple_of (model/model.py:332-336): 8B 1.3 and 1024, 70B 1.3 and 4096, 405B 1.2 and 4096.
struct Flavor {
  const char* name;
  int64_t hidden_size;
  int64_t ffn_hidden_size;
  int64_t num_layers;
  int64_t num_attention_heads;
  int64_t num_kv_heads;
};
constexpr int64_t kLlama3VocabSize = 128256;
constexpr Flavor kLlama3Flavors[] = {
    {"8B", 4096, 14336, 32, 32, 8},
    {"70B", 8192, 28672, 80, 64, 8},
    {"405B", 16384, 53248, 126, 128, 8},
};

bool Matches(const Flavor& flavor, const ModelSpec& model) {
  return model.hidden_size() == flavor.hidden_size &&
         model.ffn_hidden_size() == flavor.ffn_hidden_size &&
         model.num_layers() == flavor.num_layers &&
         model.num_attention_heads() == flavor.num_attention_heads &&
         model.num_kv_heads() == flavor.num_kv_heads && model.vocab_size() == kLlama3VocabSize &&
         model.head_dim() * model.num_attention_heads() == model.hidden_size() &&
         model.gated_mlp() && !model.tied_embeddings() && !model.is_moe();
}

}  // namespace

absl::StatusOr<std::string> TorchTitanLlamaFlavor(const ModelSpec& model) {
  std::vector<std::string> flavors;
  for (const Flavor& flavor : kLlama3Flavors) {
    if (Matches(flavor, model)) return std::string(flavor.name);
    flavors.push_back(absl::StrCat(flavor.name, " (h ", flavor.hidden_size, ", ffn ",
                                   flavor.ffn_hidden_size, ", L ", flavor.num_layers, ", a ",
                                   flavor.num_attention_heads, ", kv ", flavor.num_kv_heads, ")"));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "model \"", model.name(), "\" (h ", model.hidden_size(), ", ffn ", model.ffn_hidden_size(),
      ", L ", model.num_layers(), ", a ", model.num_attention_heads(), ", kv ",
      model.num_kv_heads(), ", vocab ", model.vocab_size(),
      model.tied_embeddings() ? ", tied embeddings" : "", model.is_moe() ? ", experts" : "",
      ") is none of ", kTorchTitanRelease, "'s llama3 flavors, which are ",
      absl::StrJoin(flavors, ", "), " with vocab ", kLlama3VocabSize,
      " and untied embeddings; TorchTitan selects a model by --model.name and --model.flavor "
      "only"));
}

absl::StatusOr<std::string> TorchTitanFlavorToRun(const ModelSpec& model,
                                                  const TrainingSpec& training,
                                                  const ParallelConfig& config) {
  PT_ASSIGN_OR_RETURN(std::string flavor, TorchTitanLlamaFlavor(model));
  // Its tensor parallelism shards the norms' activations by sequence, always
  // (torchtitan/models/llama3/infra/parallelize.py:181, 219, 233).
  if (config.tp() > 1 && !config.sequence_parallel()) {
    return absl::FailedPreconditionError(
        absl::StrCat("config.sequence_parallel (false) with config.tensor_parallel (", config.tp(),
                     "): ", kTorchTitanRelease,
                     "'s tensor parallelism is always sequence-parallel; search with "
                     "sequence parallelism"));
  }
  // training.mixed_precision_reduce takes "float32" only (torchtitan/config/job_config.py:290).
  if (!training.fp32_gradients()) {
    return absl::FailedPreconditionError(
        absl::StrCat("training.fp32_gradients (false): ", kTorchTitanRelease,
                     " reduces gradients in float32 only (training.mixed_precision_reduce)"));
  }
  // FSDP2 shards the parameters with the optimizer states and gradients: there is no
  // optimizer-only sharding (parallelism.data_parallel_shard_degree, job_config.py:324).
  if (config.dp_sharding() == DataParallelSharding::kOptimizer) {
    return absl::FailedPreconditionError(absl::StrCat(
        "config.dp_sharding (optimizer): ", kTorchTitanRelease,
        " has no optimizer-only sharding (its FSDP2 shards gradients and weights too); search "
        "with --framework=torchtitan, or dp_sharding gradients, full or none"));
  }
  // Without sharding TorchTitan replicates with DDP, which it runs alone: "DDP has not
  // supported > 1D parallelism" (torchtitan/models/llama3/infra/parallelize.py:149-151).
  if (config.dp_sharding() == DataParallelSharding::kNone && config.dp() > 1 &&
      config.tp() * config.pp() * config.cp() > 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("config.dp_sharding (none) with config.tensor_parallel (", config.tp(),
                     ") x config.pipeline_parallel (", config.pp(), ") x config.context_parallel (",
                     config.cp(), ") > 1: ", kTorchTitanRelease,
                     "'s DDP runs without other parallelism only (parallelize.py:149-151)"));
  }
  return flavor;
}

}  // namespace paratune
