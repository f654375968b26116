#include "measured/measured_runs.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "estimator/performance_model.h"
#include "measured/csv_table.h"

namespace paratune {
namespace {

// What every row of a table shares, and the row's own values.
struct RowSetup {
  ModelDimensions dims;
  std::string model_name;
  std::string software;
  GpuSpec gpu;
  int64_t gpus_per_node = 8;
  TrainingOptions training;
  ParallelDims parallel;
  std::string group;
  bool completed = true;
  double step_seconds = 0;
  std::string excluded_reason;
  double measured_memory_gib = 0;
  // The column step_seconds is read or derived from, for errors.
  std::string step_column;
};

// More GPUs than any table's run used; a larger product is a malformed cell.
constexpr int64_t kMaxGpus = int64_t{1} << 24;

// The product of `sizes` (name, value); INVALID_ARGUMENT "WHERE column \"name\" (value) ..."
// for a size below 1, or one that takes the product past kMaxGpus. Checked size by size so
// that no cell can overflow it, or leave a zero to divide by.
absl::StatusOr<int64_t> ProductOfSizes(
    absl::string_view where, std::initializer_list<std::pair<absl::string_view, int64_t>> sizes) {
  int64_t product = 1;
  for (const auto& [name, size] : sizes) {
    if (size < 1 || size > kMaxGpus / product) {
      return absl::InvalidArgumentError(absl::StrCat(where, "column \"", name, "\" (", size,
                                                     ") must be in [1, ", kMaxGpus / product,
                                                     "] here"));
    }
    product *= size;
  }
  return product;
}

// A GPT of the Megatron-LM papers: MHA, 4h non-gated MLP, embeddings tied to the LM head
// (Megatron's default; --untie-embeddings-and-output-weights is opt-in).
ModelDimensions GptDimensions(int64_t hidden, int64_t heads, int64_t layers, int64_t vocab) {
  ModelDimensions dims;
  dims.hidden_size = hidden;
  dims.ffn_hidden_size = 4 * hidden;
  dims.num_layers = layers;
  dims.num_attention_heads = heads;
  dims.num_kv_heads = heads;
  dims.vocab_size = vocab;
  dims.tied_embeddings = true;
  dims.gated_mlp = false;
  return dims;
}

absl::StatusOr<MeasuredRun> MakeRun(const CsvTable& table, size_t row, const std::string& file,
                                    RowSetup setup) {
  const std::string where = absl::StrCat(table.path(), ":", table.line(row), ": ");
  absl::StatusOr<ModelSpec> model = ModelSpec::Create(setup.model_name, setup.dims);
  if (!model.ok()) {
    return absl::InvalidArgumentError(where + std::string(model.status().message()));
  }
  absl::StatusOr<TrainingSpec> training = TrainingSpec::Create(setup.training);
  if (!training.ok()) {
    return absl::InvalidArgumentError(where + std::string(training.status().message()));
  }
  absl::StatusOr<int64_t> gpus_or = ProductOfSizes(where, {{"dp", setup.parallel.dp},
                                                           {"tp", setup.parallel.tp},
                                                           {"pp", setup.parallel.pp},
                                                           {"cp", setup.parallel.cp}});
  if (!gpus_or.ok()) return gpus_or.status();
  const int64_t gpus = *gpus_or;
  if (setup.gpus_per_node < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "column \"gpus_per_node\" (", setup.gpus_per_node, ") must be >= 1"));
  }
  if (setup.completed && !(std::isfinite(setup.step_seconds) && setup.step_seconds > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(where, "column \"", setup.step_column,
                                                   "\" gives a step time of ", setup.step_seconds,
                                                   " s: a completed run's is finite and > 0"));
  }
  const int64_t per_node = gpus < setup.gpus_per_node ? gpus : setup.gpus_per_node;
  if (gpus % per_node != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, gpus, " GPUs do not fill nodes of ", per_node));
  }
  absl::StatusOr<ClusterSpec> cluster = ClusterSpec::Create(setup.gpu, gpus / per_node, per_node);
  if (!cluster.ok()) {
    return absl::InvalidArgumentError(where + std::string(cluster.status().message()));
  }
  // Each table's sharding is its training's (the distributed optimizer, none where a reader
  // turns it off, FSDP for TorchTitan).
  setup.parallel.dp_sharding = training->DefaultDataParallelSharding();
  // The runs happened, so placement and uneven splits are whatever the source used.
  PlacementRules rules;
  rules.allow_tp_cp_across_nodes = true;
  rules.allow_uneven_pipeline = true;
  absl::StatusOr<ParallelConfig> config =
      ParallelConfig::Create(*model, *training, *cluster, rules, setup.parallel);
  if (!config.ok()) {
    return absl::InvalidArgumentError(where + std::string(config.status().message()));
  }
  return MeasuredRun{file,
                     std::move(setup.group),
                     setup.model_name,
                     std::move(setup.software),
                     table.line(row),
                     *model,
                     *training,
                     *cluster,
                     *config,
                     setup.completed,
                     setup.step_seconds,
                     std::move(setup.excluded_reason),
                     setup.measured_memory_gib};
}

// Catalog dimensions of the NVIDIA table's models (Hugging Face / NeMo configs); the table
// gives the layer count of the reduced-layer proxies itself.
absl::StatusOr<ModelDimensions> NvidiaModel(const std::string& name, int64_t layers) {
  ModelDimensions dims;
  if (absl::StartsWith(name, "llama3.1-")) {
    const std::string preset = absl::StrContains(name, "405b")  ? "llama3.1-405b"
                               : absl::StrContains(name, "70b") ? "llama3.1-70b"
                                                                : "llama3.1-8b";
    PT_ASSIGN_OR_RETURN(ModelSpec spec, FindModelPreset(preset));
    dims = spec.dims();
  } else if (name == "gpt3-175b") {
    dims = GptDimensions(12288, 96, 96, 51200);
  } else if (name == "nemotron4-15b" || name == "nemotron4-340b") {
    // Nemotron-4 (arXiv 2402.16819, 2406.11704): GQA with 8 KV heads, squared-ReLU MLP of 4h,
    // untied embeddings, 256k vocabulary.
    const bool big = name == "nemotron4-340b";
    dims = GptDimensions(big ? 18432 : 6144, big ? 96 : 48, 0, 256000);
    dims.num_kv_heads = 8;
    dims.tied_embeddings = false;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown model \"", name, "\""));
  }
  dims.num_layers = layers;
  return dims;
}

// The BF16 rows of the table, or with `fp8` its FP8 rows.
absl::StatusOr<std::vector<MeasuredRun>> LoadNvidiaDgxc(const CsvTable& table,
                                                        const std::string& file, bool fp8) {
  std::vector<MeasuredRun> runs;
  PT_ASSIGN_OR_RETURN(const GpuSpec gpu, FindGpuPreset("h100-80gb"));
  for (size_t row = 0; row < table.num_rows(); ++row) {
    PT_ASSIGN_OR_RETURN(const std::string precision, table.String(row, "precision"));
    if (precision != (fp8 ? "FP8" : "BF16")) continue;
    RowSetup setup;
    PT_ASSIGN_OR_RETURN(setup.model_name, table.String(row, "model"));
    PT_ASSIGN_OR_RETURN(const int64_t layers, table.Int(row, "layers"));
    absl::StatusOr<ModelDimensions> dims = NvidiaModel(setup.model_name, layers);
    if (!dims.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          table.path(), ":", table.line(row), ": column \"model\": ", dims.status().message()));
    }
    setup.dims = *dims;
    setup.gpu = gpu;
    PT_ASSIGN_OR_RETURN(setup.training.seq_len, table.Int(row, "seq_len"));
    PT_ASSIGN_OR_RETURN(setup.training.global_batch_size, table.Int(row, "global_batch"));
    // NeMo runs Megatron-Core's DDP with its default grad_reduce_in_fp32 = False: bf16
    // gradient buffers (the table does not say otherwise). The performance recipes overlap TP
    // communication (MegatronCommOverlapCallback, tp_comm_overlap=True).
    setup.training.fp32_gradients = false;
    setup.training.tp_comm_overlap = true;
    // fp8 as the NeMo recipes of these releases run it: Transformer Engine's delayed scaling,
    // bf16 model weights (fp8_param_gather is not stated, so TE's default: off).
    setup.training.fp8 = fp8;
    PT_ASSIGN_OR_RETURN(setup.parallel.tp, table.Int(row, "tp"));
    PT_ASSIGN_OR_RETURN(setup.parallel.pp, table.Int(row, "pp"));
    PT_ASSIGN_OR_RETURN(setup.parallel.cp, table.Int(row, "cp"));
    PT_ASSIGN_OR_RETURN(setup.parallel.virtual_pipeline, table.IntOr(row, "vp", 1));
    PT_ASSIGN_OR_RETURN(setup.parallel.dp, table.Int(row, "dp"));
    PT_ASSIGN_OR_RETURN(setup.parallel.micro_batch, table.Int(row, "micro_batch"));
    setup.parallel.sequence_parallel = setup.parallel.tp > 1;
    setup.step_column = "step_time_s";
    PT_ASSIGN_OR_RETURN(setup.step_seconds, table.Double(row, setup.step_column));
    PT_ASSIGN_OR_RETURN(setup.software, table.String(row, "release"));
    setup.group = absl::StrCat(setup.model_name, " ", setup.software);
    PT_ASSIGN_OR_RETURN(MeasuredRun run, MakeRun(table, row, file, std::move(setup)));
    runs.push_back(std::move(run));
  }
  return runs;
}

// The columns the GPT tables (Megatron-Core weak scaling, Narayanan et al.) share: the model
// by name and dimensions, the sequence and the global batch, on `gpu`.
absl::StatusOr<RowSetup> GptRowSetup(const CsvTable& table, size_t row, const GpuSpec& gpu) {
  RowSetup setup;
  PT_ASSIGN_OR_RETURN(setup.model_name, table.String(row, "model"));
  PT_ASSIGN_OR_RETURN(const int64_t hidden, table.Int(row, "hidden"));
  PT_ASSIGN_OR_RETURN(const int64_t heads, table.Int(row, "heads"));
  PT_ASSIGN_OR_RETURN(const int64_t layers, table.Int(row, "layers"));
  PT_ASSIGN_OR_RETURN(const int64_t vocab, table.Int(row, "vocab"));
  setup.dims = GptDimensions(hidden, heads, layers, vocab);
  setup.gpu = gpu;
  PT_ASSIGN_OR_RETURN(setup.training.seq_len, table.Int(row, "seq_len"));
  PT_ASSIGN_OR_RETURN(setup.training.global_batch_size, table.Int(row, "global_batch"));
  return setup;
}

absl::StatusOr<std::vector<MeasuredRun>> LoadMegatronCore(const CsvTable& table,
                                                          const std::string& file) {
  std::vector<MeasuredRun> runs;
  PT_ASSIGN_OR_RETURN(const GpuSpec gpu, FindGpuPreset("h100-80gb"));
  for (size_t row = 0; row < table.num_rows(); ++row) {
    PT_ASSIGN_OR_RETURN(RowSetup setup, GptRowSetup(table, row, gpu));
    PT_ASSIGN_OR_RETURN(setup.parallel.tp, table.Int(row, "tp"));
    PT_ASSIGN_OR_RETURN(setup.parallel.pp, table.Int(row, "pp"));
    PT_ASSIGN_OR_RETURN(setup.parallel.dp, table.Int(row, "dp"));
    // The table gives no micro-batch size, VP or recompute: 1, none, none assumed. Its notes
    // give the communication overlap: --overlap-grad-reduce, --overlap-param-gather,
    // --tp-comm-overlap.
    setup.training.tp_comm_overlap = true;
    setup.parallel.sequence_parallel = setup.parallel.tp > 1;
    setup.step_column = "derived_iter_time_s";
    PT_ASSIGN_OR_RETURN(setup.step_seconds, table.Double(row, setup.step_column));
    setup.group = setup.model_name;
    PT_ASSIGN_OR_RETURN(MeasuredRun run, MakeRun(table, row, file, std::move(setup)));
    runs.push_back(std::move(run));
  }
  return runs;
}

absl::StatusOr<std::vector<MeasuredRun>> LoadNarayanan(const CsvTable& table,
                                                       const std::string& file) {
  std::vector<MeasuredRun> runs;
  PT_ASSIGN_OR_RETURN(const GpuSpec gpu, FindGpuPreset("a100-80gb"));
  for (size_t row = 0; row < table.num_rows(); ++row) {
    PT_ASSIGN_OR_RETURN(RowSetup setup, GptRowSetup(table, row, gpu));
    // 2021: no FlashAttention, no distributed optimizer, no sequence parallelism.
    setup.training.flash_attention = false;
    setup.training.distributed_optimizer = false;
    PT_ASSIGN_OR_RETURN(setup.parallel.tp, table.Int(row, "tp"));
    PT_ASSIGN_OR_RETURN(setup.parallel.pp, table.Int(row, "pp"));
    PT_ASSIGN_OR_RETURN(setup.parallel.dp, table.Int(row, "dp"));
    PT_ASSIGN_OR_RETURN(setup.parallel.virtual_pipeline, table.Int(row, "virtual_stages_v"));
    PT_ASSIGN_OR_RETURN(setup.parallel.micro_batch, table.Int(row, "micro_batch"));
    setup.parallel.sequence_parallel = false;
    setup.parallel.recompute = Recompute::kFull;
    setup.step_column = "derived_iter_time_s";
    PT_ASSIGN_OR_RETURN(setup.step_seconds, table.Double(row, setup.step_column));
    setup.group = setup.model_name;
    PT_ASSIGN_OR_RETURN(MeasuredRun run, MakeRun(table, row, file, std::move(setup)));
    runs.push_back(std::move(run));
  }
  return runs;
}

// Two runs per row: TP-only with full recompute, and SP with selective recompute.
absl::StatusOr<std::vector<MeasuredRun>> LoadKorthikanti(const CsvTable& table,
                                                         const std::string& file) {
  std::vector<MeasuredRun> runs;
  PT_ASSIGN_OR_RETURN(const GpuSpec gpu, FindGpuPreset("a100-80gb"));
  for (size_t row = 0; row < table.num_rows(); ++row) {
    for (const bool selective : {false, true}) {
      RowSetup setup;
      PT_ASSIGN_OR_RETURN(const std::string model, table.String(row, "model"));
      setup.model_name = absl::StrCat(model, selective ? " sp+selective" : " full");
      PT_ASSIGN_OR_RETURN(const int64_t hidden, table.Int(row, "hidden"));
      PT_ASSIGN_OR_RETURN(const int64_t heads, table.Int(row, "heads"));
      PT_ASSIGN_OR_RETURN(const int64_t layers, table.Int(row, "layers"));
      // The source gives no vocabulary; 51200 reproduces its MFU figures (see its notes).
      setup.dims = GptDimensions(hidden, heads, layers, 51200);
      PT_ASSIGN_OR_RETURN(setup.dims.ffn_hidden_size, table.Int(row, "ffn_hidden"));
      setup.gpu = gpu;
      PT_ASSIGN_OR_RETURN(setup.training.seq_len, table.Int(row, "seq_len"));
      PT_ASSIGN_OR_RETURN(setup.training.global_batch_size, table.Int(row, "global_batch"));
      setup.training.flash_attention = false;
      setup.training.distributed_optimizer = false;
      PT_ASSIGN_OR_RETURN(setup.parallel.tp, table.Int(row, "tp"));
      PT_ASSIGN_OR_RETURN(setup.parallel.pp, table.Int(row, "pp"));
      PT_ASSIGN_OR_RETURN(setup.parallel.dp, table.Int(row, "dp"));
      PT_ASSIGN_OR_RETURN(setup.parallel.micro_batch, table.Int(row, "micro_batch"));
      PT_ASSIGN_OR_RETURN(setup.parallel.virtual_pipeline,
                          table.Int(row, "pipeline_interleaving_v(calculon_encoding)"));
      setup.parallel.sequence_parallel = selective;
      setup.parallel.recompute = selective ? Recompute::kSelective : Recompute::kFull;
      setup.step_column =
          selective ? "iter_time_seqpar_plus_selective_s" : "iter_time_full_recompute_s";
      PT_ASSIGN_OR_RETURN(setup.step_seconds, table.Double(row, setup.step_column));
      setup.group = setup.model_name;
      PT_ASSIGN_OR_RETURN(MeasuredRun run, MakeRun(table, row, file, std::move(setup)));
      runs.push_back(std::move(run));
    }
  }
  return runs;
}

// Fujii et al.'s table: global batch 1024 (data/measured/README.md), no recompute, SP,
// distributed optimizer, fp32 gradients, FlashAttention. "blank" cells were not run.
absl::StatusOr<std::vector<MeasuredRun>> LoadFujii(const CsvTable& table, const std::string& file) {
  std::vector<MeasuredRun> runs;
  PT_ASSIGN_OR_RETURN(const ModelSpec llama, FindModelPreset("llama3.1-8b"));
  for (size_t row = 0; row < table.num_rows(); ++row) {
    PT_ASSIGN_OR_RETURN(const std::string status, table.String(row, "cell_status"));
    if (status == "blank") continue;
    RowSetup setup;
    setup.model_name = llama.name();
    setup.dims = llama.dims();
    PT_ASSIGN_OR_RETURN(const std::string gpu_name, table.String(row, "gpu"));
    PT_ASSIGN_OR_RETURN(const int64_t memory_gb, table.Int(row, "gpu_mem_gb"));
    absl::StatusOr<GpuSpec> gpu = FindGpuPreset(absl::StrCat(gpu_name, "-", memory_gb, "gb"));
    if (!gpu.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(table.path(), ":", table.line(row),
                                                     ": column \"gpu\": ", gpu.status().message()));
    }
    setup.gpu = *gpu;
    PT_ASSIGN_OR_RETURN(setup.gpus_per_node, table.Int(row, "gpus_per_node"));
    PT_ASSIGN_OR_RETURN(setup.training.seq_len, table.Int(row, "seq_len"));
    setup.training.global_batch_size = 1024;
    PT_ASSIGN_OR_RETURN(setup.parallel.tp, table.Int(row, "tp"));
    PT_ASSIGN_OR_RETURN(setup.parallel.cp, table.Int(row, "cp"));
    PT_ASSIGN_OR_RETURN(setup.parallel.pp, table.Int(row, "pp"));
    PT_ASSIGN_OR_RETURN(setup.parallel.micro_batch, table.Int(row, "micro_batch_size"));
    PT_ASSIGN_OR_RETURN(const int64_t gpus, table.Int(row, "num_gpus"));
    // The source leaves dp empty in some cells that did not run; it is implied by the rest.
    // A failed cell whose tp x cp x pp does not divide its GPU count could not be run at all.
    const std::string where = absl::StrCat(table.path(), ":", table.line(row), ": ");
    absl::StatusOr<int64_t> model_parallel_or = ProductOfSizes(
        where, {{"tp", setup.parallel.tp}, {"cp", setup.parallel.cp}, {"pp", setup.parallel.pp}});
    if (!model_parallel_or.ok()) return model_parallel_or.status();
    const int64_t model_parallel = *model_parallel_or;
    if (gpus % model_parallel != 0) {
      if (status != "value") continue;
      return absl::InvalidArgumentError(
          absl::StrCat(table.path(), ":", table.line(row), ": column \"num_gpus\" (", gpus,
                       ") is not a multiple of tp x cp x pp (", model_parallel, ")"));
    }
    setup.parallel.dp = gpus / model_parallel;
    setup.parallel.sequence_parallel = setup.parallel.tp > 1;
    PT_ASSIGN_OR_RETURN(const std::string system, table.String(row, "system"));
    // The first author's Megatron-LM launch scripts for Llama-3.1-8B (okoge-kaz/Megatron-LM,
    // scripts/tsubame/Llama-3.1-8B/ and scripts/abci/Llama-3.1-8B/) pass --tp-comm-overlap on
    // TSUBAME's H100s and not on ABCI's A100s.
    setup.training.tp_comm_overlap = absl::StartsWith(system, "TSUBAME");
    setup.group = absl::StrCat(system, " s=", setup.training.seq_len, " ", gpus, " GPUs");
    setup.completed = status == "value";
    if (setup.completed) {
      setup.step_column = "throughput_tflops_per_gpu";
      PT_ASSIGN_OR_RETURN(const double tflops, table.Double(row, setup.step_column));
      PT_ASSIGN_OR_RETURN(const ModelSpec model, ModelSpec::Create(llama.name(), setup.dims));
      PT_ASSIGN_OR_RETURN(const TrainingSpec training, TrainingSpec::Create(setup.training));
      setup.step_seconds =
          ModelFlopsPerStep(model, training) / (tflops * 1e12 * static_cast<double>(gpus));
    }
    PT_ASSIGN_OR_RETURN(MeasuredRun run, MakeRun(table, row, file, std::move(setup)));
    runs.push_back(std::move(run));
  }
  return runs;
}

// The catalog preset of an fp8 table's Llama name ("LLAMA3-70B", "LLAMA3.1_405B",
// "LLAMA2-13B"); Llama 3 and 3.1 share their dimensions.
absl::StatusOr<std::string> Fp8LlamaPreset(const std::string& name) {
  const std::string lower = absl::AsciiStrToLower(name);
  const std::string size = lower.substr(lower.find_last_of("-_") + 1);
  if (absl::StartsWith(lower, "llama2")) return absl::StrCat("llama2-", size);
  if (absl::StartsWith(lower, "llama3")) return absl::StrCat("llama3.1-", size);
  return absl::InvalidArgumentError(absl::StrCat("unknown model \"", name, "\""));
}

absl::StatusOr<std::vector<MeasuredRun>> LoadNvidiaFp8(const CsvTable& table,
                                                       const std::string& file) {
  std::vector<MeasuredRun> runs;
  PT_ASSIGN_OR_RETURN(const GpuSpec gpu, FindGpuPreset("h100-80gb"));
  for (size_t row = 0; row < table.num_rows(); ++row) {
    PT_ASSIGN_OR_RETURN(const std::string precision, table.String(row, "precision"));
    PT_ASSIGN_OR_RETURN(const std::string name, table.String(row, "model"));
    PT_ASSIGN_OR_RETURN(const std::string notes, table.String(row, "notes"));
    // Rows whose precision the source does not state are not fp8 evidence; FSDP shards
    // weights in a way the memory model does not describe.
    if (!absl::StartsWith(precision, "FP8") || !absl::StartsWithIgnoreCase(name, "llama") ||
        notes == "FSDP=8") {
      continue;
    }
    RowSetup setup;
    setup.model_name = name;
    absl::StatusOr<std::string> preset = Fp8LlamaPreset(name);
    absl::StatusOr<ModelSpec> spec =
        preset.ok() ? FindModelPreset(*preset) : absl::StatusOr<ModelSpec>(preset.status());
    if (!spec.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          table.path(), ":", table.line(row), ": column \"model\": ", spec.status().message()));
    }
    setup.dims = spec->dims();
    setup.gpu = gpu;
    PT_ASSIGN_OR_RETURN(setup.training.seq_len, table.Int(row, "seq_len"));
    PT_ASSIGN_OR_RETURN(setup.training.global_batch_size, table.Int(row, "global_batch"));
    setup.training.fp8 = true;
    // As for nvidia_dgxc_h100.csv: NeMo's and Megatron-Core's perf recipes keep bf16 gradient
    // buffers (grad_reduce_in_fp32 = False) and overlap TP communication.
    setup.training.fp32_gradients = false;
    setup.training.tp_comm_overlap = true;
    // Megatron-LM's fp8 example (examples/llama/train_llama3_8b_h100_fp8.sh) passes
    // --fp8-param-gather; the NeMo tables do not say, so they keep TE's default (off).
    PT_ASSIGN_OR_RETURN(setup.software, table.String(row, "software"));
    setup.training.fp8_param_gather = absl::StartsWith(setup.software, "Megatron-Core");
    PT_ASSIGN_OR_RETURN(setup.parallel.tp, table.Int(row, "tp"));
    PT_ASSIGN_OR_RETURN(setup.parallel.pp, table.Int(row, "pp"));
    PT_ASSIGN_OR_RETURN(setup.parallel.cp, table.Int(row, "cp"));
    PT_ASSIGN_OR_RETURN(setup.parallel.virtual_pipeline, table.IntOr(row, "vp", 1));
    PT_ASSIGN_OR_RETURN(setup.parallel.micro_batch, table.Int(row, "micro_batch"));
    PT_ASSIGN_OR_RETURN(const int64_t gpus, table.Int(row, "num_gpus"));
    const int64_t model_parallel = setup.parallel.tp * setup.parallel.pp * setup.parallel.cp;
    if (model_parallel < 1 || gpus % model_parallel != 0) {
      return absl::InvalidArgumentError(absl::StrCat(table.path(), ":", table.line(row), ": ", gpus,
                                                     " GPUs are not a multiple of tp x pp "
                                                     "x cp (",
                                                     model_parallel, ")"));
    }
    setup.parallel.dp = gpus / model_parallel;
    setup.parallel.sequence_parallel = setup.parallel.tp > 1;
    setup.step_column = "tokens_per_s_per_gpu";
    PT_ASSIGN_OR_RETURN(const double tokens_per_gpu, table.Double(row, setup.step_column));
    setup.step_seconds = static_cast<double>(setup.training.global_batch_size) *
                         static_cast<double>(setup.training.seq_len) /
                         (tokens_per_gpu * static_cast<double>(gpus));
    setup.group = absl::StrCat(name, " ", setup.software);
    PT_ASSIGN_OR_RETURN(MeasuredRun run, MakeRun(table, row, file, std::move(setup)));
    runs.push_back(std::move(run));
  }
  return runs;
}

constexpr char kTorchTitanTable[] = "torchtitan_h100_202412.csv";

// A yes or no cell of the TorchTitan table.
absl::StatusOr<bool> YesNoCell(const CsvTable& table, size_t row, const std::string& column) {
  PT_ASSIGN_OR_RETURN(const std::string text, table.String(row, column));
  if (text == "yes") return true;
  if (text == "no") return false;
  return table.InvalidCell(row, column, absl::StrCat("\"", text, "\" is not yes or no"));
}

// The TorchTitan benchmark's GPU: an H100 with 96 GB of HBM2e at 2.4 TB/s (the benchmark's
// "Hardware"), 8 per host on NVLink, 400 Gb/s of RDMA per GPU; h100-94gb's memory, and the SXM
// peak the benchmark computes its MFU against.
absl::StatusOr<GpuSpec> TorchTitanGpu() {
  PT_ASSIGN_OR_RETURN(GpuSpec gpu, FindGpuPreset("h100-94gb"));
  gpu.hbm_bandwidth_gbps = 2400;
  return gpu;
}

absl::StatusOr<std::vector<MeasuredRun>> LoadTorchTitan(const CsvTable& table,
                                                        const std::string& file) {
  std::vector<MeasuredRun> runs;
  PT_ASSIGN_OR_RETURN(const GpuSpec gpu, TorchTitanGpu());
  for (size_t row = 0; row < table.num_rows(); ++row) {
    RowSetup setup;
    PT_ASSIGN_OR_RETURN(setup.model_name, table.String(row, "model"));
    absl::StatusOr<ModelSpec> model = FindModelPreset(setup.model_name);
    if (!model.ok()) return table.InvalidCell(row, "model", std::string(model.status().message()));
    setup.dims = model->dims();
    setup.gpu = gpu;
    setup.training.framework = Framework::kTorchTitan;
    PT_ASSIGN_OR_RETURN(setup.training.seq_len, table.Int(row, "seq_len"));
    PT_ASSIGN_OR_RETURN(setup.training.global_batch_size, table.Int(row, "global_batch"));
    // Float8 (torchao's Float8Linear): fp8 GEMMs on every linear but the LM head.
    PT_ASSIGN_OR_RETURN(setup.training.fp8, YesNoCell(table, row, "float8"));
    // Async TP overlaps the tensor-parallel collectives with the GEMMs they feed.
    PT_ASSIGN_OR_RETURN(setup.training.tp_comm_overlap, YesNoCell(table, row, "async_tp"));
    PT_ASSIGN_OR_RETURN(setup.training.torch_compile, YesNoCell(table, row, "torch_compile"));
    PT_ASSIGN_OR_RETURN(setup.parallel.dp, table.Int(row, "fsdp"));
    PT_ASSIGN_OR_RETURN(setup.parallel.tp, table.Int(row, "tp"));
    PT_ASSIGN_OR_RETURN(setup.parallel.pp, table.Int(row, "pp"));
    PT_ASSIGN_OR_RETURN(setup.parallel.cp, table.Int(row, "cp"));
    setup.parallel.sequence_parallel = setup.parallel.tp > 1;
    PT_ASSIGN_OR_RETURN(const int64_t local_batch, table.Int(row, "local_batch"));
    // TorchTitan splits a pipeline's local batch into as many micro-batches as stages
    // (experimental.pipeline_parallel_microbatches unset); the benchmark does not say more.
    if (local_batch % setup.parallel.pp != 0) {
      return table.InvalidCell(
          row, "local_batch",
          absl::StrCat("(", local_batch, ") is not a multiple of pp (", setup.parallel.pp, ")"));
    }
    setup.parallel.micro_batch = local_batch / setup.parallel.pp;
    PT_ASSIGN_OR_RETURN(const std::string schedule, table.String(row, "pp_schedule"));
    // Interleaved 1F1B with two stages per rank, the fewest it takes; the benchmark does not
    // state its count.
    setup.parallel.virtual_pipeline = schedule == "Interleaved1F1B" ? 2 : 1;
    PT_ASSIGN_OR_RETURN(const std::string checkpointing,
                        table.String(row, "activation_checkpointing"));
    if (checkpointing == "selective") {
      setup.parallel.recompute = Recompute::kSelective;
    } else if (checkpointing == "full") {
      setup.parallel.recompute = Recompute::kFull;
    } else if (checkpointing != "none") {
      return table.InvalidCell(
          row, "activation_checkpointing",
          absl::StrCat("\"", checkpointing, "\" is not none, selective or full"));
    }
    PT_ASSIGN_OR_RETURN(const int64_t gpus, table.Int(row, "num_gpus"));
    setup.step_column = "tokens_per_s_per_gpu";
    PT_ASSIGN_OR_RETURN(const double tokens_per_gpu, table.Double(row, setup.step_column));
    setup.step_seconds = static_cast<double>(setup.training.global_batch_size) *
                         static_cast<double>(setup.training.seq_len) /
                         (tokens_per_gpu * static_cast<double>(gpus));
    PT_ASSIGN_OR_RETURN(setup.measured_memory_gib, table.Double(row, "memory_gib"));
    if (!(setup.measured_memory_gib > 0)) {
      return table.InvalidCell(row, "memory_gib", "must be > 0");
    }
    PT_ASSIGN_OR_RETURN(const std::string source, table.String(row, "source"));
    setup.group = absl::StrCat("TorchTitan ", source.substr(source.rfind("Table")),
                               setup.training.torch_compile ? " compiled" : "");
    PT_ASSIGN_OR_RETURN(MeasuredRun run, MakeRun(table, row, file, std::move(setup)));
    if (run.cluster.world_size() != gpus) {
      return table.InvalidCell(
          row, "num_gpus",
          absl::StrCat("(", gpus, ") is not fsdp x tp x pp x cp (", run.cluster.world_size(), ")"));
    }
    runs.push_back(std::move(run));
  }
  return runs;
}

// The mixture-of-experts tables, one column format: NVIDIA's Megatron-Bridge performance
// summaries and NVIDIA's DGX Cloud benchmarking recipes (dgxc-benchmarking), both DGX-H100.
constexpr char kMegatronBridgeMoeTable[] = "megatron_bridge_moe_h100.csv";
constexpr char kDgxcMoeTable[] = "nvidia_dgxc_moe_h100.csv";

bool IsMoeTable(const std::string& file) {
  return file == kMegatronBridgeMoeTable || file == kDgxcMoeTable;
}

// The dispatcher a row's recipe sets: `text`, the row's token_dispatcher cell, is alltoall,
// allgather, or Megatron-Bridge's flex dispatcher with its backend as its recipe names it
// (moe_flex_dispatcher_backend, flex_dispatcher_backend.py): "flex (deepep)" or
// "flex (hybridep)".
absl::StatusOr<TokenDispatcher> MoeDispatcher(const CsvTable& table, size_t row,
                                              const std::string& text) {
  if (text == "alltoall") return TokenDispatcher::kAllToAll;
  if (text == "allgather") return TokenDispatcher::kAllGather;
  if (text == "flex (deepep)") return TokenDispatcher::kFlexDeepEp;
  if (text == "flex (hybridep)") return TokenDispatcher::kFlexHybridEp;
  return table.InvalidCell(
      row, "token_dispatcher",
      absl::StrCat("\"", text, "\" is not alltoall, allgather, flex (deepep) or flex (hybridep)"));
}

// Why the MoE table's reader leaves `row` out for a dataset of `fp8` rows; empty when it
// reads it.
absl::StatusOr<std::string> MoeSkipReason(const CsvTable& table, size_t row, bool fp8) {
  PT_ASSIGN_OR_RETURN(const std::string not_describable, table.String(row, "not_describable"));
  if (!not_describable.empty()) return not_describable;
  PT_ASSIGN_OR_RETURN(const std::string precision, table.String(row, "precision_used"));
  if (precision.empty()) return std::string("precision not stated by the source or its recipe");
  if (precision != "fp8" && precision != "bf16") {
    return table.InvalidCell(row, "precision_used",
                             absl::StrCat("\"", precision, "\" is not fp8, bf16 or empty"));
  }
  if ((precision == "fp8") != fp8) {
    return absl::StrCat(precision, " row; the dataset reads ", fp8 ? "fp8" : "bf16", " rows");
  }
  PT_ASSIGN_OR_RETURN(const int64_t fsdp, table.IntOr(row, "fsdp", 0));
  if (fsdp != 0) {
    // Megatron-FSDP shards weights in a way the memory model does not describe.
    return std::string("Megatron-FSDP run");
  }
  return std::string();
}

// The rows of an MoE table: the configuration as the source gives it, the routing and the rest
// as the row's recipe (its `recipe` column) sets them.
absl::StatusOr<std::vector<MeasuredRun>> LoadMoeTable(const CsvTable& table,
                                                      const std::string& file, bool fp8,
                                                      std::vector<SkippedRow>* skipped) {
  std::vector<MeasuredRun> runs;
  PT_ASSIGN_OR_RETURN(const GpuSpec gpu, FindGpuPreset("h100-80gb"));
  for (size_t row = 0; row < table.num_rows(); ++row) {
    RowSetup setup;
    PT_ASSIGN_OR_RETURN(setup.model_name, table.String(row, "model"));
    PT_ASSIGN_OR_RETURN(std::string reason, MoeSkipReason(table, row, fp8));
    if (!reason.empty()) {
      if (skipped != nullptr) {
        skipped->push_back({table.line(row), setup.model_name, std::move(reason)});
      }
      continue;
    }
    absl::StatusOr<ModelSpec> preset = FindModelPreset(absl::AsciiStrToLower(setup.model_name));
    if (!preset.ok()) return table.InvalidCell(row, "model", preset.status().message());
    setup.dims = preset->dims();
    setup.gpu = gpu;
    PT_ASSIGN_OR_RETURN(setup.training.seq_len, table.Int(row, "seq_len"));
    PT_ASSIGN_OR_RETURN(setup.training.global_batch_size, table.Int(row, "global_batch"));
    setup.training.fp8 = fp8;
    // Every recipe sets grad_reduce_in_fp32 = False (bf16 gradient buffers).
    setup.training.fp32_gradients = false;
    PT_ASSIGN_OR_RETURN(setup.training.tp_comm_overlap, table.Bool(row, "tp_comm_overlap"));
    // An empty capacity factor is dropless; the recipes pair it with forced load balancing
    // (force_load_balancing), so no expert gets more than its even share either way.
    PT_ASSIGN_OR_RETURN(const std::string capacity, table.String(row, "capacity_factor"));
    if (!capacity.empty()) {
      PT_ASSIGN_OR_RETURN(setup.training.moe_capacity_factor, table.Double(row, "capacity_factor"));
    }
    PT_ASSIGN_OR_RETURN(const std::string dispatcher_cell, table.String(row, "token_dispatcher"));
    PT_ASSIGN_OR_RETURN(setup.training.moe_token_dispatcher,
                        MoeDispatcher(table, row, dispatcher_cell));
    PT_ASSIGN_OR_RETURN(setup.excluded_reason, table.String(row, "excluded"));
    PT_ASSIGN_OR_RETURN(setup.training.moe_grouped_gemm, table.Bool(row, "grouped_gemm"));
    PT_ASSIGN_OR_RETURN(setup.training.moe_expert_parallel_overlap,
                        table.Bool(row, "moe_a2a_overlap"));
    PT_ASSIGN_OR_RETURN(setup.training.moe_shared_expert_overlap,
                        table.Bool(row, "shared_expert_overlap"));
    PT_ASSIGN_OR_RETURN(setup.parallel.tp, table.Int(row, "tp"));
    PT_ASSIGN_OR_RETURN(setup.parallel.pp, table.Int(row, "pp"));
    PT_ASSIGN_OR_RETURN(setup.parallel.cp, table.Int(row, "cp"));
    PT_ASSIGN_OR_RETURN(setup.parallel.virtual_pipeline, table.IntOr(row, "vp", 1));
    PT_ASSIGN_OR_RETURN(setup.parallel.ep, table.Int(row, "ep"));
    PT_ASSIGN_OR_RETURN(setup.parallel.etp, table.Int(row, "etp"));
    PT_ASSIGN_OR_RETURN(setup.parallel.micro_batch, table.Int(row, "micro_batch"));
    PT_ASSIGN_OR_RETURN(setup.parallel.recompute, RecomputeCell(table, row));
    setup.parallel.sequence_parallel = setup.parallel.tp > 1;
    PT_ASSIGN_OR_RETURN(const int64_t gpus, table.Int(row, "num_gpus"));
    const std::string where = absl::StrCat(table.path(), ":", table.line(row), ": ");
    PT_ASSIGN_OR_RETURN(const int64_t model_parallel,
                        ProductOfSizes(where, {{"tp", setup.parallel.tp},
                                               {"pp", setup.parallel.pp},
                                               {"cp", setup.parallel.cp}}));
    if (gpus % model_parallel != 0) {
      return table.InvalidCell(
          row, "num_gpus",
          absl::StrCat(gpus, " is not a multiple of tp x pp x cp (", model_parallel, ")"));
    }
    setup.parallel.dp = gpus / model_parallel;
    setup.step_column = "tokens_per_s_per_gpu";
    PT_ASSIGN_OR_RETURN(const double tokens_per_gpu, table.Double(row, setup.step_column));
    setup.step_seconds = static_cast<double>(setup.training.global_batch_size) *
                         static_cast<double>(setup.training.seq_len) /
                         (tokens_per_gpu * static_cast<double>(gpus));
    PT_ASSIGN_OR_RETURN(setup.software, table.String(row, "software"));
    // One series per configuration and dispatcher, whatever the release or precision: a
    // configuration measured in several releases (Qwen3-235B-A22B's five in
    // megatron_bridge_moe_h100.csv) or in bf16 and fp8 (nvidia_dgxc_moe_h100.csv) weighs as one
    // observation in the fit, as a weak-scaling series does, and the leave-one-series-out
    // error bar holds all its runs out at once (a release of it left in would predict it).
    const ParallelDims& p = setup.parallel;
    setup.group =
        absl::StrFormat("%s tp%d pp%d cp%d vp%d ep%d etp%d mbs%d %s", setup.model_name, p.tp, p.pp,
                        p.cp, p.virtual_pipeline, p.ep, p.etp, p.micro_batch, dispatcher_cell);
    PT_ASSIGN_OR_RETURN(MeasuredRun run, MakeRun(table, row, file, std::move(setup)));
    runs.push_back(std::move(run));
  }
  return runs;
}

}  // namespace

std::vector<MeasuredDataset> MoeDatasets() {
  return {
      {kMegatronBridgeMoeTable, true, true}, {kDgxcMoeTable, true, true}, {kDgxcMoeTable, true}};
}

absl::StatusOr<std::vector<SkippedRow>> SkippedMoeRows(const std::string& directory,
                                                       const MeasuredDataset& dataset) {
  if (!IsMoeTable(dataset.file)) {
    return absl::InvalidArgumentError(
        absl::StrCat(dataset.file, ": not a mixture-of-experts table (", kMegatronBridgeMoeTable,
                     ", ", kDgxcMoeTable, ")"));
  }
  PT_ASSIGN_OR_RETURN(const CsvTable table, CsvTable::Load(directory + "/" + dataset.file));
  std::vector<SkippedRow> skipped;
  PT_RETURN_IF_ERROR(LoadMoeTable(table, dataset.file, dataset.fp8, &skipped).status());
  return skipped;
}

MeasuredDataset Fp8Dataset() { return {"nvidia_h100_fp8.csv", false, true}; }

MeasuredDataset TorchTitanDataset() { return {kTorchTitanTable, true}; }

std::vector<MeasuredDataset> AllMeasuredDatasets() {
  std::vector<MeasuredDataset> all;
  const auto add = [&all](const MeasuredDataset& dataset) {
    const bool known = std::any_of(all.begin(), all.end(), [&](const MeasuredDataset& other) {
      return other.file == dataset.file && other.fp8 == dataset.fp8;
    });
    if (!known) all.push_back(dataset);
  };
  for (const MeasuredDataset& dataset : MeasuredDatasets()) add(dataset);
  for (const MeasuredDataset& dataset : Fp8Datasets()) add(dataset);
  for (const MeasuredDataset& dataset : MoeDatasets()) add(dataset);
  add(TorchTitanDataset());
  return all;
}

std::vector<MeasuredDataset> Fp8Datasets() {
  return {{"nvidia_dgxc_h100.csv", true, true}, Fp8Dataset()};
}

std::vector<MeasuredDataset> MeasuredDatasets() {
  return {{"nvidia_dgxc_h100.csv", true},
          {"megatron_core_h100_weak_scaling.csv", true},
          {"narayanan2021_table1_a100.csv", true},
          {"korthikanti2022_table5_a100.csv", true},
          {"llama31_8b_4d_abci_tsubame.csv", false}};
}

absl::StatusOr<std::vector<MeasuredRun>> LoadMeasuredRuns(const std::string& directory,
                                                          const MeasuredDataset& dataset) {
  PT_ASSIGN_OR_RETURN(const CsvTable table, CsvTable::Load(directory + "/" + dataset.file));
  if (dataset.file == "nvidia_dgxc_h100.csv") {
    return LoadNvidiaDgxc(table, dataset.file, dataset.fp8);
  }
  if (dataset.file == "megatron_core_h100_weak_scaling.csv") {
    return LoadMegatronCore(table, dataset.file);
  }
  if (dataset.file == "narayanan2021_table1_a100.csv") return LoadNarayanan(table, dataset.file);
  if (dataset.file == "korthikanti2022_table5_a100.csv") {
    return LoadKorthikanti(table, dataset.file);
  }
  if (dataset.file == "llama31_8b_4d_abci_tsubame.csv") return LoadFujii(table, dataset.file);
  if (dataset.file == "nvidia_h100_fp8.csv") return LoadNvidiaFp8(table, dataset.file);
  if (IsMoeTable(dataset.file)) return LoadMoeTable(table, dataset.file, dataset.fp8, nullptr);
  if (dataset.file == kTorchTitanTable) return LoadTorchTitan(table, dataset.file);
  return absl::InvalidArgumentError(absl::StrCat(dataset.file, ": not a known measured table"));
}

absl::StatusOr<Recompute> RecomputeCell(const CsvTable& table, size_t row) {
  PT_ASSIGN_OR_RETURN(const std::string text, table.String(row, "recompute"));
  if (text == "none") return Recompute::kNone;
  if (text == "selective") return Recompute::kSelective;
  if (text == "full") return Recompute::kFull;
  return table.InvalidCell(row, "recompute",
                           absl::StrCat("\"", text, "\" is not none, selective or full"));
}

double MeasuredTflopsPerGpu(const MeasuredRun& run) {
  return ModelFlopsPerStep(run.model, run.training) /
         (run.step_seconds * static_cast<double>(run.cluster.world_size())) / 1e12;
}

double LogResidual(const MeasuredRun& run, const PerformanceParameters& params) {
  return std::log(PredictPerformance(run.model, run.training, run.cluster, run.config, params)
                      .step_time_seconds /
                  run.step_seconds);
}

std::vector<PerformanceObservation> FitObservations(const std::vector<MeasuredRun>& runs) {
  std::map<std::pair<std::string, std::string>, int> series_sizes;
  for (const MeasuredRun& run : runs) {
    if (run.completed) ++series_sizes[{run.dataset, run.group}];
  }
  std::vector<PerformanceObservation> observations;
  for (const MeasuredRun& run : runs) {
    if (!run.completed) continue;
    observations.push_back({run.model, run.training, run.cluster, run.config, run.step_seconds,
                            1.0 / series_sizes[{run.dataset, run.group}]});
  }
  return observations;
}

}  // namespace paratune
