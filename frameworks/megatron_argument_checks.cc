#include "frameworks/megatron_argument_checks.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"

namespace paratune {
namespace {

enum class Kind {
  kSwitch,  // store_true / store_false: no value
  kInt,     // type=int
  kFloat,   // type=float
  kText,    // type=str, with choices when `choices` is not empty
  kInts,    // nargs='+', type=int
  kFloats,  // nargs='+', type=float
  kTexts,   // nargs='+', type=str
  // moe_freq_type (arguments.py:326-348): an int, or a Python list expression of the
  // characters , 0-9 [ ] ( ) + * (_eval_pattern, arguments.py:244-252).
  kLayerFreq,
};

struct FlagSpec {
  const char* name;  // without the leading "--"
  Kind kind;
  const char* source;  // where core_v0.19.0 defines it
  std::vector<absl::string_view> choices;
};

// The flags whose values the replayed rules read, or whose form argparse checks and the
// templates write. Fields of the config dataclasses become flags through
// megatron/training/argument_utils.py:120-212 (Literal types as choices, bools as switches).
const std::vector<FlagSpec>& Flags() {
  static const std::vector<FlagSpec>* const flags = new std::vector<FlagSpec>{
      // Parallel layout.
      {"tensor-model-parallel-size", Kind::kInt, "megatron/core/model_parallel_config.py:55"},
      {"pipeline-model-parallel-size", Kind::kInt, "megatron/core/model_parallel_config.py:83"},
      {"context-parallel-size", Kind::kInt, "megatron/core/model_parallel_config.py:100"},
      {"hierarchical-context-parallel-sizes", Kind::kInts,
       "megatron/core/model_parallel_config.py:103"},
      {"cp-comm-type", Kind::kTexts, "megatron/training/arguments.py:3054"},
      {"sequence-parallel", Kind::kSwitch, "megatron/core/model_parallel_config.py:94"},
      {"tp-comm-overlap", Kind::kSwitch, "megatron/core/model_parallel_config.py:265"},
      {"num-layers-per-virtual-pipeline-stage", Kind::kInt, "megatron/training/arguments.py:2961"},
      {"num-virtual-stages-per-pipeline-rank", Kind::kInt, "megatron/training/arguments.py:2963"},
      {"no-overlap-p2p-communication", Kind::kSwitch, "megatron/training/arguments.py:2965"},
      {"microbatch-group-size-per-virtual-pipeline-stage", Kind::kInt,
       "megatron/core/model_parallel_config.py:431"},
      {"account-for-embedding-in-pipeline-split", Kind::kSwitch,
       "megatron/core/transformer/transformer_config.py:130"},
      {"account-for-loss-in-pipeline-split", Kind::kSwitch,
       "megatron/core/transformer/transformer_config.py:134"},
      {"expert-model-parallel-size", Kind::kInt, "megatron/core/model_parallel_config.py:127"},
      {"expert-tensor-parallel-size", Kind::kInt, "megatron/core/model_parallel_config.py:130"},
      // The model.
      {"num-layers", Kind::kInt, "megatron/core/transformer/transformer_config.py:65"},
      {"encoder-num-layers", Kind::kInt, "megatron/training/arguments.py:2295"},
      {"hidden-size", Kind::kInt, "megatron/core/transformer/transformer_config.py:138"},
      {"ffn-hidden-size", Kind::kInt, "megatron/core/transformer/transformer_config.py:173"},
      {"num-attention-heads", Kind::kInt, "megatron/core/transformer/transformer_config.py:141"},
      {"kv-channels", Kind::kInt, "megatron/core/transformer/transformer_config.py:177"},
      {"group-query-attention", Kind::kSwitch, "megatron/training/arguments.py:2299"},
      {"num-query-groups", Kind::kInt, "megatron/core/transformer/transformer_config.py:168"},
      {"seq-length", Kind::kInt, "megatron/training/arguments.py:3138"},
      {"encoder-seq-length", Kind::kInt, "megatron/training/arguments.py:3140"},
      {"max-position-embeddings", Kind::kInt, "megatron/training/arguments.py:2311"},
      {"vocab-size", Kind::kInt, "megatron/training/config/training_config.py:654"},
      {"position-embedding-type",
       Kind::kText,
       "megatron/training/arguments.py:2314",
       {"learned_absolute", "rope", "yarn", "mrope", "relative", "none"}},
      {"rotary-base", Kind::kInt, "megatron/training/arguments.py:2335"},
      {"normalization",
       Kind::kText,
       "megatron/core/transformer/transformer_config.py:249",
       {"LayerNorm", "RMSNorm"}},
      {"norm-epsilon", Kind::kFloat, "megatron/core/transformer/transformer_config.py:194"},
      {"swiglu", Kind::kSwitch, "megatron/training/arguments.py:2367"},
      {"disable-bias-linear", Kind::kSwitch, "megatron/core/transformer/transformer_config.py:205"},
      {"untie-embeddings-and-output-weights", Kind::kSwitch, "megatron/training/arguments.py:2377"},
      {"attention-dropout", Kind::kFloat, "megatron/core/transformer/transformer_config.py:184"},
      // Mixture of experts.
      {"num-experts", Kind::kInt, "megatron/training/arguments.py:3351"},
      {"moe-layer-freq", Kind::kLayerFreq, "megatron/training/arguments.py:3353"},
      {"moe-ffn-hidden-size", Kind::kInt, "megatron/core/transformer/transformer_config.py:719"},
      {"moe-shared-expert-intermediate-size", Kind::kInt,
       "megatron/core/transformer/transformer_config.py:680"},
      {"moe-shared-expert-overlap", Kind::kSwitch,
       "megatron/core/transformer/transformer_config.py:696"},
      {"moe-router-topk", Kind::kInt, "megatron/core/transformer/transformer_config.py:739"},
      {"moe-router-score-function",
       Kind::kText,
       "megatron/core/transformer/transformer_config.py:787",
       {"softmax", "sigmoid", "sqrtsoftplus"}},
      {"moe-router-pre-softmax", Kind::kSwitch,
       "megatron/core/transformer/transformer_config.py:778"},
      {"moe-router-dtype",
       Kind::kText,
       "megatron/core/transformer/transformer_config.py:790",
       {"fp32", "fp64"}},
      {"moe-router-load-balancing-type",
       Kind::kTexts,
       "megatron/training/arguments.py:3365",
       {"aux_loss", "seq_aux_loss", "global_aux_loss", "sinkhorn", "quantile_balancing", "none"}},
      {"moe-aux-loss-coeff", Kind::kFloats, "megatron/training/arguments.py:3369"},
      {"moe-grouped-gemm", Kind::kSwitch, "megatron/core/transformer/transformer_config.py:829"},
      {"overlap-moe-expert-parallel-comm", Kind::kSwitch,
       "megatron/core/model_parallel_config.py:343"},
      {"delay-wgrad-compute", Kind::kSwitch, "megatron/core/model_parallel_config.py:348"},
      {"moe-token-dispatcher-type",
       Kind::kText,
       "megatron/core/transformer/transformer_config.py:862",
       {"allgather", "alltoall", "flex"}},
      {"moe-flex-dispatcher-backend",
       Kind::kText,
       "megatron/core/transformer/transformer_config.py:869",
       {"deepep", "hybridep", "ncclep"}},
      {"moe-expert-capacity-factor", Kind::kFloat,
       "megatron/core/transformer/transformer_config.py:888"},
      {"moe-pad-expert-input-to-capacity", Kind::kSwitch,
       "megatron/core/transformer/transformer_config.py:892"},
      {"moe-token-drop-policy",
       Kind::kText,
       "megatron/core/transformer/transformer_config.py:903",
       {"probs", "position"}},
      {"hidden-dropout", Kind::kFloat, "megatron/core/transformer/transformer_config.py:181"},
      {"transformer-impl",
       Kind::kText,
       "megatron/core/transformer/transformer_config.py:1220",
       {"local", "transformer_engine", "inference_optimized"}},
      {"attention-backend",
       Kind::kText,
       "megatron/core/transformer/transformer_config.py:144, enums.py:51",
       {"flash", "fused", "unfused", "local", "auto"}},
      // Recompute.
      {"recompute-granularity",
       Kind::kText,
       "megatron/core/transformer/transformer_config.py:518",
       {"full", "selective"}},
      {"recompute-method",
       Kind::kText,
       "megatron/core/transformer/transformer_config.py:529",
       {"uniform", "block"}},
      {"recompute-num-layers", Kind::kInt, "megatron/core/transformer/transformer_config.py:537"},
      {"distribute-saved-activations", Kind::kSwitch,
       "megatron/core/transformer/transformer_config.py:543"},
      // Batch.
      {"micro-batch-size", Kind::kInt, "megatron/training/config/training_config.py:11"},
      {"global-batch-size", Kind::kInt, "megatron/training/config/training_config.py:15"},
      {"eval-micro-batch-size", Kind::kInt, "megatron/training/config/training_config.py:135"},
      {"eval-global-batch-size", Kind::kInt, "megatron/training/config/training_config.py:130"},
      {"train-iters", Kind::kInt, "megatron/training/config/training_config.py:64"},
      // Numerics.
      {"bf16", Kind::kSwitch, "megatron/core/model_parallel_config.py:180"},
      {"fp16", Kind::kSwitch, "megatron/core/model_parallel_config.py:177"},
      {"fp8-format",
       Kind::kText,
       "megatron/core/transformer/transformer_config.py:566",
       {"e4m3", "hybrid"}},
      {"fp8-recipe",
       Kind::kText,
       "megatron/core/transformer/transformer_config.py:573",
       {"tensorwise", "delayed", "mxfp8", "blockwise", "custom"}},
      {"fp8-param-gather", Kind::kSwitch, "megatron/training/arguments.py:1935"},
      {"fp4-format", Kind::kText, "megatron/core/transformer/transformer_config.py:652", {"e2m1"}},
      {"grad-reduce-in-bf16", Kind::kSwitch, "megatron/training/arguments.py:2905"},
      {"accumulate-allreduce-grads-in-fp32", Kind::kSwitch, "megatron/training/arguments.py:2921"},
      {"main-grads-dtype", Kind::kText, "megatron/training/arguments.py:3504", {"fp32", "bf16"}},
      // Optimizer and data parallelism.
      {"optimizer", Kind::kText, "megatron/training/arguments.py:2776"},
      {"use-distributed-optimizer", Kind::kSwitch, "megatron/training/arguments.py:2997"},
      {"use-megatron-fsdp", Kind::kSwitch, "megatron/training/config/common_config.py:92"},
      {"data-parallel-sharding-strategy",
       Kind::kText,
       "megatron/training/arguments.py:3023",
       {"no_shard", "optim", "optim_grads", "optim_grads_params"}},
      {"num-distributed-optimizer-instances", Kind::kInt, "megatron/training/arguments.py:3049"},
      {"check-weight-hash-across-dp-replicas-interval", Kind::kInt,
       "megatron/training/config/training_config.py:53"},
      {"overlap-grad-reduce", Kind::kSwitch, "megatron/training/arguments.py:2968"},
      {"overlap-param-gather", Kind::kSwitch, "megatron/training/arguments.py:2989"},
      {"overlap-param-gather-with-optimizer-step", Kind::kSwitch,
       "megatron/training/arguments.py:2991"},
      {"disable-gloo-process-groups", Kind::kSwitch,
       "megatron/training/config/common_config.py:109"},
      {"ckpt-format",
       Kind::kText,
       "megatron/training/config/training_config.py:486",
       {"torch", "torch_dist", "torch_dcp", "fsdp_dtensor"}},
      {"lr", Kind::kFloat, "megatron/training/arguments.py:2847"},
      {"min-lr", Kind::kFloat, "megatron/training/arguments.py:2854"},
      {"lr-decay-style",
       Kind::kText,
       "megatron/training/config/training_config.py:169",
       {"constant", "linear", "cosine", "inverse-square-root", "WSD"}},
      {"weight-decay", Kind::kFloat, "megatron/training/arguments.py:2501"},
      {"clip-grad", Kind::kFloat, "megatron/training/arguments.py:2505"},
      {"adam-beta1", Kind::kFloat, "megatron/training/arguments.py:2507"},
      {"adam-beta2", Kind::kFloat, "megatron/training/arguments.py:2510"},
      {"mock-data", Kind::kSwitch, "megatron/training/arguments.py:3135"},
  };
  return *flags;
}

const FlagSpec* FindFlag(absl::string_view name) {
  for (const FlagSpec& flag : Flags()) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

// Flags whose rules this replay does not model (the header says why they are left out).
constexpr const char* kUnreplayedFlags[] = {
    "pipeline-model-parallel-layout",     // transformer_config.py:1935-1986
    "decoder-first-pipeline-num-layers",  // arguments.py:921, transformer_config.py:1988-2062
    "decoder-last-pipeline-num-layers",   // same
    "hybrid-layer-pattern",               // arguments.py:717-891
    "hybrid-override-pattern",            // same
    // MoE switches beyond what an export writes: each adds rules of its own.
    "moe-router-padding-for-quantization",  // transformer_config.py:2316-2326
    "moe-router-padding-for-fp8",           // transformer_config.py:2308-2314
    "moe-expert-rank-capacity-factor",      // transformer_config.py:1692-1706
    "moe-router-group-topk",                // transformer_config.py:2338-2360
    "moe-router-topk-limited-devices",      // same
    "moe-enable-deepep",                    // transformer_config.py:1589-1598
    "moe-single-grouped-weight",            // transformer_config.py:1556-1587
    "moe-single-grouped-bias",              // same
    "moe-latent-size",                      // arguments.py:1899-1901
    "moe-use-upcycling",                    // arguments.py:1782
    "moe-layer-recompute",                  // transformer_config.py:1835-1839
    "moe-paged-stash",                      // transformer_config.py:1904-1921
    "multi-latent-attention",               // MLATransformerConfig
    "tensor-parallel-num-weight-shards",    // GTP: arguments.py:411-427, 1451-1547
    // Megatron-FSDP's switches beyond its sharding strategy and HSDP replicas.
    "use-nccl-ub",                       // arguments.py:1148-1153, 1166-1168
    "fsdp-manual-registration",          // arguments.py:1166-1168
    "init-model-with-meta-device",       // arguments.py:1160-1164
    "outer-dp-sharding-strategy",        // arguments.py:3026-3032
    "enable-full-sharding-in-hsdp",      // arguments.py:3047-3048
    "use-torch-fsdp2",                   // arguments.py:997-1030
    "perform-rl-step",                   // arguments.py:448-547
    "rampup-batch-size",                 // num_microbatches_calculator.py rampup calculator
    "step-batch-size-schedule",          // arguments.py:680-683 and its calculator
    "decrease-batch-size-if-needed",     // num_microbatches_calculator.py:368-379
    "yaml-cfg",                          // arguments.py:102-105
    "use-checkpoint-args",               // arguments.py:90-100
    "heterogeneous-layers-config-path",  // arguments.py:171-243, argument_utils.py:295-297
};

constexpr char kArguments[] = "megatron/training/arguments.py";

// The context-parallel communication types Transformer Engine's attention runs.
constexpr const char* kTransformerEngineCpCommTypes[] = {"p2p", "all_gather", "a2a", "a2a+p2p"};
constexpr char kTransformerEngineContextParallel[] =
    "Transformer Engine transformer_engine/pytorch/attention/dot_product_attention/"
    "context_parallel.py, attn_forward_func_with_cp";

// The values given, by flag name, last occurrence winning as argparse does.
class ParsedArguments {
 public:
  void Set(std::string name, std::vector<std::string> values) {
    values_[std::move(name)] = std::move(values);
  }
  bool Has(absl::string_view name) const { return values_.contains(name); }
  const std::vector<std::string>* Values(absl::string_view name) const {
    auto it = values_.find(name);
    return it == values_.end() ? nullptr : &it->second;
  }
  // The flag's value; only for flags of the table, whose values Parse checked.
  int64_t Int(absl::string_view name, int64_t fallback) const {
    const std::vector<std::string>* values = Values(name);
    int64_t value = fallback;
    if (values != nullptr && !values->empty()) (void)absl::SimpleAtoi(values->front(), &value);
    return value;
  }
  double Float(absl::string_view name, double fallback) const {
    const std::vector<std::string>* values = Values(name);
    double value = fallback;
    if (values != nullptr && !values->empty()) (void)absl::SimpleAtod(values->front(), &value);
    return value;
  }
  std::string Text(absl::string_view name) const {
    const std::vector<std::string>* values = Values(name);
    return values != nullptr && !values->empty() ? values->front() : std::string();
  }

 private:
  absl::flat_hash_map<std::string, std::vector<std::string>> values_;
};

absl::Status Violation(absl::string_view rule, absl::string_view source, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("Megatron-LM ", kMegatronChecksRelease,
                                                 " rejects the arguments: rule \"", rule, "\" (",
                                                 source, "): ", what));
}

// The elements of `value`, a --moe-layer-freq list written out ("[1,0,1]", a trailing comma
// allowed as in Python); nullopt for any other form, an integer or an expression such as
// "([1]*3+[0])*2".
std::optional<std::vector<int64_t>> FlatLayerList(absl::string_view value) {
  if (!absl::ConsumePrefix(&value, "[") || !absl::ConsumeSuffix(&value, "]")) return std::nullopt;
  std::vector<int64_t> elements;
  if (value.empty()) return elements;
  std::vector<absl::string_view> pieces = absl::StrSplit(value, ',');
  if (pieces.back().empty()) pieces.pop_back();
  for (absl::string_view piece : pieces) {
    int64_t element = 0;
    if (!absl::SimpleAtoi(piece, &element)) return std::nullopt;
    elements.push_back(element);
  }
  return elements;
}

absl::Status ArgparseError(const FlagSpec& flag, absl::string_view what) {
  return Violation("argparse", absl::StrCat(kArguments, ":131, --", flag.name, " at ", flag.source),
                   absl::StrCat("argument --", flag.name, ": ", what));
}

// OK when `value` is one argparse takes for `flag`, a flag that takes values.
absl::Status CheckValue(const FlagSpec& flag, const std::string& value) {
  switch (flag.kind) {
    case Kind::kInt:
    case Kind::kInts: {
      int64_t parsed = 0;
      if (!absl::SimpleAtoi(value, &parsed)) {
        return ArgparseError(flag, absl::StrCat("invalid int value: '", value, "'"));
      }
      return absl::OkStatus();
    }
    case Kind::kLayerFreq: {
      // int(value), or _eval_pattern's character check where the value holds a '['.
      int64_t parsed = 0;
      const bool valid = absl::StrContains(value, '[')
                             ? value.find_first_not_of(",0123456789[]()+*") == std::string::npos
                             : absl::SimpleAtoi(value, &parsed);
      if (!valid) {
        return ArgparseError(flag, absl::StrCat("invalid moe_freq_type value: '", value, "'"));
      }
      return absl::OkStatus();
    }
    case Kind::kFloat:
    case Kind::kFloats: {
      double parsed = 0;
      if (!absl::SimpleAtod(value, &parsed)) {
        return ArgparseError(flag, absl::StrCat("invalid float value: '", value, "'"));
      }
      return absl::OkStatus();
    }
    case Kind::kText:
    case Kind::kTexts:
      if (!flag.choices.empty() &&
          std::find(flag.choices.begin(), flag.choices.end(), value) == flag.choices.end()) {
        return ArgparseError(flag, absl::StrCat("invalid choice: '", value, "' (choose from ",
                                                absl::StrJoin(flag.choices, ", "), ")"));
      }
      return absl::OkStatus();
    case Kind::kSwitch:
      break;
  }
  return absl::OkStatus();
}

// An element that is an option rather than a value: "--name", or "-" and a non-digit.
bool IsOption(absl::string_view element) {
  return absl::StartsWith(element, "--") ||
         (element.size() > 1 && element[0] == '-' && !(element[1] >= '0' && element[1] <= '9') &&
          element[1] != '.');
}

// argparse's reading of `arguments` (parse_args, arguments.py:118-131).
absl::StatusOr<ParsedArguments> Parse(const std::vector<std::string>& arguments) {
  ParsedArguments parsed;
  for (size_t i = 0; i < arguments.size(); ++i) {
    const std::string& element = arguments[i];
    if (!absl::StartsWith(element, "--") || element.size() == 2) {
      return Violation("argparse", absl::StrCat(kArguments, ":131"),
                       absl::StrCat("unrecognized arguments: ", element));
    }
    const size_t equals = element.find('=');
    std::string name = element.substr(2, equals == std::string::npos ? equals : equals - 2);
    std::vector<std::string> values;
    if (equals != std::string::npos) values.push_back(element.substr(equals + 1));
    const FlagSpec* flag = FindFlag(name);
    const bool takes_many = flag == nullptr || flag->kind == Kind::kInts ||
                            flag->kind == Kind::kFloats || flag->kind == Kind::kTexts;
    const bool takes_one = flag != nullptr && !takes_many && flag->kind != Kind::kSwitch;
    if (equals == std::string::npos) {
      while (i + 1 < arguments.size() && !IsOption(arguments[i + 1]) &&
             (takes_many || (takes_one && values.empty()))) {
        values.push_back(arguments[++i]);
      }
    }
    if (flag != nullptr) {
      if (flag->kind == Kind::kSwitch) {
        if (!values.empty()) {
          return ArgparseError(*flag,
                               absl::StrCat("ignored explicit argument '", values.front(), "'"));
        }
      } else if (values.empty()) {
        return ArgparseError(
            *flag, takes_one ? "expected one argument" : "expected at least one argument");
      }
      for (const std::string& value : values) PT_RETURN_IF_ERROR(CheckValue(*flag, value));
    }
    parsed.Set(std::move(name), std::move(values));
  }
  return parsed;
}

absl::Status RejectUnreplayed(const ParsedArguments& args) {
  for (const char* name : kUnreplayedFlags) {
    if (args.Has(name)) {
      return absl::UnimplementedError(absl::StrCat(
          "--", name, " brings Megatron-LM ", kMegatronChecksRelease,
          " rules this replay does not model (frameworks/megatron_argument_checks.h)"));
    }
  }
  const std::string layer_freq = args.Text("moe-layer-freq");
  if (absl::StrContains(layer_freq, '[') && !FlatLayerList(layer_freq).has_value()) {
    return absl::UnimplementedError(absl::StrCat(
        "--moe-layer-freq=", layer_freq, ": this replay of Megatron-LM ", kMegatronChecksRelease,
        " reads an integer or a list written out ([1,0,1]), not other Python expressions"));
  }
  const std::string optimizer = args.Text("optimizer");
  if (!optimizer.empty() && optimizer != "adam" && optimizer != "sgd") {
    return absl::UnimplementedError(
        absl::StrCat("--optimizer=", optimizer, " brings Megatron-LM ", kMegatronChecksRelease,
                     " rules this replay does not model (arguments.py:1669-1686)"));
  }
  return absl::OkStatus();
}

// --ffn-hidden-size, or its default (arguments.py:1280-1289).
int64_t FfnHiddenSize(const ParsedArguments& args) {
  const int64_t hidden = args.Int("hidden-size", 0);
  if (args.Has("ffn-hidden-size")) return args.Int("ffn-hidden-size", 0);
  return args.Has("swiglu") ? static_cast<int64_t>(4 * hidden * 2 / 3.0 / 64) * 64 : 4 * hidden;
}

// validate_args' rules of expert parallelism and its MoE defaults (arguments.py:569-570,
// 1592-1603); fills the MoE fields of `launch` that they decide. `launch` holds tp.
absl::Status CheckExpertParallelism(const ParsedArguments& args, MegatronLaunch* launch) {
  const int64_t ep = args.Int("expert-model-parallel-size", 1);
  launch->expert_parallel = ep;
  launch->expert_tensor_parallel = args.Int("expert-tensor-parallel-size", launch->tensor_parallel);
  // arguments.py:1593-1594: 0 experts is no MoE.
  const int64_t experts = args.Int("num-experts", 0);
  launch->num_experts = experts;
  if (experts != 0) {
    launch->moe_ffn_hidden_size = args.Int("moe-ffn-hidden-size", FfnHiddenSize(args));
  }
  if (ep > 1 && experts == 0) {
    return Violation("expert-model-parallel", "megatron/training/arguments.py:1600-1601",
                     absl::StrCat("num_experts must be non None to use expert model parallelism "
                                  "(--expert-model-parallel-size ",
                                  ep, " without --num-experts)"));
  }
  if (ep > 1 && experts % ep != 0) {
    return Violation("expert-model-parallel", "megatron/training/arguments.py:1602-1603",
                     absl::StrCat("Number of experts should be a multiple of expert model "
                                  "parallel_size (--num-experts ",
                                  experts, ", --expert-model-parallel-size ", ep, ")"));
  }
  return absl::OkStatus();
}

// initialize_model_parallel's expert grid, etp x ep x expert-dp x pp over the same world,
// built whether or not the model has experts; fills launch->expert_data_parallel.
absl::Status CheckExpertGrid(MegatronLaunch* launch) {
  const int64_t ep = launch->expert_parallel;
  const int64_t etp = launch->expert_tensor_parallel;
  // A size below 1 makes no group (and the product below divides by zero).
  if (ep < 1 || etp < 1) {
    return Violation("expert-world-size", "megatron/core/parallel_state.py:874-883",
                     absl::StrCat("expert model (", ep, ") and expert tensor (", etp,
                                  ") parallel sizes must be >= 1"));
  }
  const int64_t expert_model = etp * ep * launch->pipeline_parallel;
  if (launch->world_size % expert_model != 0) {
    return Violation(
        "expert-world-size", "megatron/core/parallel_state.py:874-883",
        absl::StrCat("world_size (", launch->world_size,
                     ") is not divisible by expert_tensor_model_pipeline_parallel size (", etp,
                     " x ", ep, " x ", launch->pipeline_parallel, " = ", expert_model, ")"));
  }
  launch->expert_data_parallel = launch->world_size / expert_model;
  return absl::OkStatus();
}

// validate_args' rules of Megatron-FSDP (arguments.py:1100-1147); fills its fields of
// `launch`. `one_connection`: the launch's CUDA_DEVICE_MAX_CONNECTIONS is 1.
absl::Status CheckMegatronFsdp(const ParsedArguments& args, bool one_connection,
                               const std::string& ckpt_format, MegatronLaunch* launch) {
  // The parser's default (arguments.py:3023).
  launch->data_parallel_sharding_strategy = args.Has("data-parallel-sharding-strategy")
                                                ? args.Text("data-parallel-sharding-strategy")
                                                : std::string("optim_grads_params");
  if (launch->data_parallel_sharding_strategy == "optim_grads_params" &&
      args.Has("check-weight-hash-across-dp-replicas-interval")) {
    return Violation("megatron-fsdp-weight-hash", "megatron/training/arguments.py:1139-1141",
                     "--check-weight-hash-across-dp-replicas-interval is not supported with "
                     "--data-parallel-sharding-strategy=optim_grads_params");
  }
  if (one_connection) {
    return Violation("megatron-fsdp-connections", "megatron/training/arguments.py:1143-1144",
                     "Megatron-FSDP (--use-megatron-fsdp) requires the environment variable "
                     "CUDA_DEVICE_MAX_CONNECTIONS > 1 or unset, not 1");
  }
  if (ckpt_format != "fsdp_dtensor") {
    return Violation("megatron-fsdp-ckpt-format", "megatron/training/arguments.py:1146-1147",
                     absl::StrCat("Megatron-FSDP (--use-megatron-fsdp) requires "
                                  "--ckpt-format=fsdp_dtensor, not ",
                                  ckpt_format));
  }
  return absl::OkStatus();
}

// initialize_model_parallel's partial distributed optimizer, Megatron-FSDP's hybrid sharding
// (parallel_state.py:922-929, 1447-1451). `launch` holds the layout and the instances.
absl::Status CheckDistributedOptimizerInstances(const MegatronLaunch& launch) {
  const int64_t instances = launch.distributed_optimizer_instances;
  const int64_t dp_cp = launch.data_parallel * launch.context_parallel;
  if (instances < 1 || dp_cp % instances != 0) {
    return Violation("distributed-optimizer-instances", "megatron/core/parallel_state.py:922-929",
                     absl::StrCat("data parallel x context parallel size (", dp_cp,
                                  ") is not divisible by --num-distributed-optimizer-instances (",
                                  instances, ")"));
  }
  if (launch.expert_data_parallel % instances != 0) {
    return Violation("distributed-optimizer-instances", "megatron/core/parallel_state.py:1447-1451",
                     absl::StrCat("expert data parallel size (", launch.expert_data_parallel,
                                  ") is not divisible by --num-distributed-optimizer-instances (",
                                  instances, ")"));
  }
  return absl::OkStatus();
}

// TransformerConfig.__post_init__'s MoE rules up to the capacity factor
// (transformer_config.py:1531-1690); fills the routing fields of `launch`.
absl::Status CheckMoeConfig(const ParsedArguments& args, MegatronLaunch* launch) {
  const int64_t experts = launch->num_experts;
  if (experts < 0) {
    return Violation(
        "num-experts", "megatron/core/transformer/transformer_config.py:1531-1532",
        absl::StrCat("num_moe_experts must be non-negative (--num-experts ", experts, ")"));
  }
  if (experts == 0 && args.Has("moe-ffn-hidden-size")) {
    // Ignored with a warning when --moe-layer-freq leaves some layer dense.
    const std::string freq = args.Text("moe-layer-freq");
    const std::optional<std::vector<int64_t>> list = FlatLayerList(freq);
    const bool mixed = list.has_value() ? std::find(list->begin(), list->end(), 0) != list->end()
                                        : args.Int("moe-layer-freq", 1) > 1;
    if (!mixed) {
      return Violation("moe-ffn-hidden-size",
                       "megatron/core/transformer/transformer_config.py:1538-1554",
                       "moe_ffn_hidden_size is set but num_moe_experts is None. Please set "
                       "num_moe_experts (--num-experts) or remove moe_ffn_hidden_size");
    }
  }
  if (args.Has("moe-shared-expert-intermediate-size")) {
    const int64_t shared = args.Int("moe-shared-expert-intermediate-size", 0);
    launch->moe_shared_expert_intermediate_size = shared;
    if (shared <= 0) {
      return Violation("moe-shared-expert-intermediate-size",
                       "megatron/core/transformer/transformer_config.py:1637-1643",
                       absl::StrCat("moe_shared_expert_intermediate_size must be "
                                    "num_shared_experts * ffn_size_of_each_shared_expert, but got ",
                                    shared));
    }
  }
  launch->moe_router_topk = args.Int("moe-router-topk", 2);
  launch->moe_router_score_function =
      args.Has("moe-router-score-function") ? args.Text("moe-router-score-function") : "softmax";
  launch->moe_router_pre_softmax = args.Has("moe-router-pre-softmax");
  launch->moe_router_dtype = args.Text("moe-router-dtype");
  launch->moe_grouped_gemm = args.Has("moe-grouped-gemm");
  launch->moe_token_dispatcher_type =
      args.Has("moe-token-dispatcher-type") ? args.Text("moe-token-dispatcher-type") : "allgather";
  launch->moe_shared_expert_overlap =
      launch->moe_shared_expert_intermediate_size > 0 && args.Has("moe-shared-expert-overlap");
  if (launch->moe_shared_expert_overlap && launch->moe_token_dispatcher_type != "alltoall" &&
      launch->moe_token_dispatcher_type != "flex") {
    return Violation("moe-shared-expert-overlap",
                     "megatron/core/transformer/transformer_config.py:1644-1650",
                     "moe_shared_expert_overlap only works with alltoall or flex token "
                     "dispatcher.");
  }
  // --recompute-modules, which no export writes, is read only for this rule.
  const std::vector<std::string>* modules = args.Values("recompute-modules");
  if (launch->moe_shared_expert_overlap && args.Text("recompute-granularity") == "selective" &&
      modules != nullptr &&
      std::find(modules->begin(), modules->end(), "shared_experts") != modules->end()) {
    return Violation("moe-shared-expert-overlap",
                     "megatron/core/transformer/transformer_config.py:1812-1819",
                     "shared_experts recompute cannot work with --moe-shared-expert-overlap.");
  }
  if (args.Has("moe-expert-capacity-factor")) {
    // A negative factor is None: dropless (transformer_config.py:1661-1662).
    launch->moe_expert_capacity_factor =
        std::max(0.0, args.Float("moe-expert-capacity-factor", 0.0));
    // The balancing types capacity works with (transformer_config.py:1663-1684); aux_loss
    // unless given (arguments.py:3365-3367).
    const std::vector<std::string>* types = args.Values("moe-router-load-balancing-type");
    for (const std::string& type :
         types != nullptr ? *types : std::vector<std::string>{"aux_loss"}) {
      if (type != "aux_loss" && type != "seq_aux_loss" && type != "global_aux_loss" &&
          type != "none") {
        return Violation("moe-expert-capacity-factor",
                         "megatron/core/transformer/transformer_config.py:1660-1684",
                         absl::StrCat("moe_expert_capacity_factor only works with aux_loss, "
                                      "seq_aux_loss, global_aux_loss or none load balancing, not ",
                                      type, " (--moe-router-load-balancing-type)"));
      }
    }
  }
  launch->moe_pad_expert_input_to_capacity = args.Has("moe-pad-expert-input-to-capacity");
  launch->moe_flex_dispatcher_backend =
      args.Has("moe-flex-dispatcher-backend") ? args.Text("moe-flex-dispatcher-backend") : "deepep";
  const bool flex = launch->moe_token_dispatcher_type == "flex";
  const std::string& backend = launch->moe_flex_dispatcher_backend;
  if (backend == "ncclep" && !flex) {
    return Violation("moe-flex-ncclep", "megatron/core/transformer/transformer_config.py:1609-1615",
                     "moe_flex_dispatcher_backend='ncclep' requires "
                     "moe_token_dispatcher_type='flex'.");
  }
  if (flex && backend == "deepep" && launch->moe_pad_expert_input_to_capacity) {
    return Violation("moe-flex-deepep", "megatron/core/transformer/transformer_config.py:1600-1607",
                     "Flex token dispatcher with deepep backend does not support "
                     "moe_pad_expert_input_to_capacity");
  }
  // MoEFlexTokenDispatcher.__init__ asserts the same of both backends' tp_ep groups.
  if (flex && (backend == "deepep" || backend == "ncclep") && launch->num_experts != 0 &&
      launch->expert_tensor_parallel * launch->expert_parallel == 1) {
    const bool deepep = backend == "deepep";
    return Violation(deepep ? "moe-flex-deepep" : "moe-flex-ncclep",
                     deepep ? "megatron/core/transformer/moe/token_dispatcher.py:1770"
                            : "megatron/core/transformer/moe/token_dispatcher.py:1788",
                     absl::StrCat(deepep ? "DeepEP" : "NCCL EP",
                                  " dispatcher requires TPxEP > 1 (--expert-tensor-parallel-size "
                                  "x --expert-model-parallel-size = 1)"));
  }
  // A launch that sets the factor stops earlier: --moe-expert-rank-capacity-factor is among
  // kUnreplayedFlags.
  if (flex && backend == "ncclep") {
    return Violation("moe-flex-ncclep",
                     "megatron/core/transformer/moe/token_dispatcher.py:1563-1567",
                     "The 'ncclep' backend requires moe_expert_rank_capacity_factor to be set "
                     "(--moe-expert-rank-capacity-factor)");
  }
  // A negative --moe-expert-capacity-factor is None here too.
  if (launch->moe_pad_expert_input_to_capacity && launch->moe_expert_capacity_factor == 0) {
    return Violation("moe-pad-expert-input-to-capacity",
                     "megatron/core/transformer/transformer_config.py:1686-1690",
                     "moe_expert_capacity_factor must be set to use "
                     "moe_pad_expert_input_to_capacity (--moe-expert-capacity-factor > 0)");
  }
  return absl::OkStatus();
}

// TransformerConfig.__post_init__'s later MoE rules, in its order: with experts, linear biases
// and top-1 routing (transformer_config.py:2279-2336); then the all-to-all overlap, whatever
// the model (2669-2690, 2706-2708, 2748-2752). Fills launch->moe_expert_parallel_overlap.
absl::Status CheckMoeRouting(const ParsedArguments& args, MegatronLaunch* launch) {
  if (launch->num_experts != 0) {
    // add_bias_linear is true unless --disable-bias-linear (transformer_config.py:205).
    if (!args.Has("disable-bias-linear") && launch->expert_tensor_parallel != 1) {
      return Violation(
          "moe-bias", "megatron/core/transformer/transformer_config.py:2279-2282",
          absl::StrCat("Bias in Moe is only supported when ETP==1 "
                       "(--expert-tensor-parallel-size ",
                       launch->expert_tensor_parallel, " without --disable-bias-linear)"));
    }
    const std::vector<std::string>* types = args.Values("moe-router-load-balancing-type");
    const bool sinkhorn = types != nullptr && types->size() == 1 && types->front() == "sinkhorn";
    if (launch->moe_router_topk == 1 && launch->moe_router_score_function == "softmax" &&
        !launch->moe_router_pre_softmax && !sinkhorn) {
      return Violation("moe-router-pre-softmax",
                       "megatron/core/transformer/transformer_config.py:2328-2336",
                       "Please use --moe-router-pre-softmax when topk is 1 (softmax scores)");
    }
  }
  launch->moe_expert_parallel_overlap = args.Has("overlap-moe-expert-parallel-comm");
  if (launch->moe_expert_parallel_overlap) {
    const char* source = "megatron/core/transformer/transformer_config.py:2669-2690";
    if (launch->pipeline_parallel > 1 && launch->virtual_pipeline == 1) {
      return Violation("moe-a2a-overlap", source,
                       "If enabling EP A2A overlap, virtual_pipeline_model_parallel_size must be "
                       "specified when pipeline_model_parallel_size > 1");
    }
    if (launch->expert_parallel <= 1) {
      return Violation("moe-a2a-overlap", source,
                       "overlap_moe_expert_parallel_comm is only supported with expert model "
                       "parallelism (--expert-model-parallel-size > 1)");
    }
    if (launch->moe_token_dispatcher_type == "allgather") {
      return Violation("moe-a2a-overlap", source,
                       absl::StrCat("overlap_moe_expert_parallel_comm is supported with "
                                    "alltoall/flex token dispatcher, not ",
                                    launch->moe_token_dispatcher_type));
    }
    if (launch->recompute_granularity == "full") {
      return Violation("moe-a2a-overlap", source,
                       "disable full recomputation when enabling overlap_moe_expert_parallel_comm");
    }
    // Asserted whatever the model, shared experts or not.
    if (args.Has("moe-shared-expert-overlap")) {
      return Violation(
          "moe-a2a-overlap", "megatron/core/transformer/transformer_config.py:2706-2708",
          "disable moe_shared_expert_overlap when enabling overlap_moe_expert_parallel_comm");
    }
  }
  if (args.Has("delay-wgrad-compute") && !launch->moe_expert_parallel_overlap) {
    return Violation("moe-a2a-overlap", "megatron/core/transformer/transformer_config.py:2748-2752",
                     "overlap_moe_expert_parallel_comm must be enabled when enabling "
                     "delay_wgrad_compute (--delay-wgrad-compute without "
                     "--overlap-moe-expert-parallel-comm)");
  }
  return absl::OkStatus();
}

// The model build's MoE rules: the layer pattern (gpt_layer_specs.py:647-671) and the expert
// GEMMs' split over the expert tensor-parallel group (TEGroupedLinear); fills
// launch->moe_layers.
absl::Status CheckMoeModel(const ParsedArguments& args, int64_t layers, MegatronLaunch* launch) {
  if (launch->num_experts == 0) return absl::OkStatus();
  const std::string freq = args.Has("moe-layer-freq") ? args.Text("moe-layer-freq") : "1";
  std::vector<int64_t> pattern;
  if (std::optional<std::vector<int64_t>> list = FlatLayerList(freq)) {
    pattern = *std::move(list);
    if (static_cast<int64_t>(pattern.size()) != layers) {
      return Violation("moe-layer-freq", "megatron/core/models/gpt/gpt_layer_specs.py:651-657",
                       absl::StrCat("Invalid length of moe_layer_pattern: ", pattern.size(),
                                    ", expected ", layers, " (--num-layers)"));
    }
  } else {
    const int64_t every = args.Int("moe-layer-freq", 1);
    if (every == 0) {
      return Violation("moe-layer-freq", "megatron/core/models/gpt/gpt_layer_specs.py:647-650",
                       "--moe-layer-freq=0: integer modulo by zero");
    }
    for (int64_t layer = 0; layer < layers; ++layer) pattern.push_back(layer % every == 0);
  }
  for (int64_t element : pattern) {
    if (element != 0 && element != 1) {
      return Violation(
          "moe-layer-freq", "megatron/core/models/gpt/gpt_layer_specs.py:665-671",
          absl::StrCat("Invalid layer pattern: element ", element, " of --moe-layer-freq=", freq,
                       " is neither 0 (dense) nor 1 (experts)"));
    }
    launch->moe_layers.push_back(element == 1);
  }
  // Both expert GEMMs split the expert FFN width over the expert tensor-parallel group with
  // divide(), which asserts divisibility (megatron/core/extensions/transformer_engine.py:
  // 2192-2195, megatron/core/utils.py divide).
  if (launch->moe_ffn_hidden_size % launch->expert_tensor_parallel != 0) {
    return Violation("expert-tensor-parallel-ffn",
                     "megatron/core/extensions/transformer_engine.py:2192-2195",
                     absl::StrCat("--moe-ffn-hidden-size (", launch->moe_ffn_hidden_size,
                                  ") is not divisible by --expert-tensor-parallel-size (",
                                  launch->expert_tensor_parallel, ")"));
  }
  return absl::OkStatus();
}

// The first step's MoE rules: sequence parallelism with tensor parallelism
// (MoELayer.forward), then the router's top-k.
absl::Status CheckMoeStep(const MegatronLaunch& launch) {
  if (launch.num_experts == 0) return absl::OkStatus();
  if (launch.tensor_parallel > 1 && !launch.sequence_parallel) {
    return Violation("moe-sequence-parallel", "megatron/core/transformer/moe/moe_layer.py:629-633",
                     absl::StrCat("During training, performance may degrade if MoE and tensor "
                                  "parallelism are enabled without also enabling sequence "
                                  "parallelism (--tensor-model-parallel-size ",
                                  launch.tensor_parallel, " without --sequence-parallel)"));
  }
  // torch.topk over the experts' scores raises "selected index k out of range".
  if (launch.moe_router_topk < 1 || launch.moe_router_topk > launch.num_experts) {
    return Violation("moe-router-topk", "megatron/core/transformer/moe/moe_utils.py:823",
                     absl::StrCat("--moe-router-topk (", launch.moe_router_topk,
                                  ") must be in [1, --num-experts (", launch.num_experts, ")]"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<MegatronLaunch> CheckMegatronArguments(
    const std::vector<std::string>& arguments, int64_t world_size,
    const std::map<std::string, std::string>& environment) {
  if (world_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat("world_size (", world_size, ") must be >= 1"));
  }
  PT_ASSIGN_OR_RETURN(const ParsedArguments args, Parse(arguments));
  PT_RETURN_IF_ERROR(RejectUnreplayed(args));

  MegatronLaunch launch;
  launch.world_size = world_size;
  const int64_t tp = args.Int("tensor-model-parallel-size", 1);
  const int64_t pp = args.Int("pipeline-model-parallel-size", 1);
  const int64_t cp = args.Int("context-parallel-size", 1);
  launch.tensor_parallel = tp;
  launch.pipeline_parallel = pp;
  launch.context_parallel = cp;
  // A size below 1 divides by zero or makes a negative group before any message.
  if (tp < 1 || pp < 1 || cp < 1) {
    return Violation("world-size", "megatron/training/arguments.py:422-432",
                     absl::StrCat("tensor (", tp, "), pipeline (", pp, ") and context (", cp,
                                  ") parallel sizes must be >= 1"));
  }
  const int64_t model_size = tp * pp * cp;
  if (world_size % model_size != 0) {
    return Violation("world-size",
                     "megatron/training/arguments.py:430, megatron/core/parallel_state.py:822",
                     absl::StrCat("world size (", world_size,
                                  ") is not divisible by tensor x pipeline x context parallel (",
                                  tp, " x ", pp, " x ", cp, " = ", model_size, ")"));
  }
  const int64_t dp = world_size / model_size;
  launch.data_parallel = dp;

  const std::vector<std::string>* cp_comm_types = args.Values("cp-comm-type");
  // The default, arguments.py:3054.
  launch.cp_comm_types =
      cp_comm_types != nullptr ? *cp_comm_types : std::vector<std::string>{"p2p"};
  if (const std::vector<std::string>* sizes = args.Values("hierarchical-context-parallel-sizes")) {
    int64_t product = 1;
    for (const std::string& size : *sizes) {
      int64_t value = 0;
      (void)absl::SimpleAtoi(size, &value);
      product *= value;
    }
    if (product != cp) {
      return Violation("hierarchical-context-parallel", "megatron/training/arguments.py:562-564",
                       absl::StrCat("the product of --hierarchical-context-parallel-sizes (",
                                    product, ") is not --context-parallel-size (", cp, ")"));
    }
  } else if (cp_comm_types != nullptr &&
             std::any_of(cp_comm_types->begin(), cp_comm_types->end(),
                         [](const std::string& t) { return absl::StrContains(t, "a2a+p2p"); })) {
    return Violation("hierarchical-context-parallel", "megatron/training/arguments.py:565-567",
                     "--cp-comm-type a2a+p2p needs --hierarchical-context-parallel-sizes");
  }

  if (!args.Has("micro-batch-size")) {
    return Violation("micro-batch-size", "megatron/training/arguments.py:675",
                     "--micro-batch-size is required");
  }
  const int64_t micro_batch = args.Int("micro-batch-size", 0);
  if (micro_batch <= 0) {
    return Violation("micro-batch-size", "megatron/training/arguments.py:676",
                     absl::StrCat("--micro-batch-size (", micro_batch, ") must be > 0"));
  }
  const int64_t global_batch = args.Int("global-batch-size", micro_batch * dp);
  if (global_batch <= 0) {
    return Violation("global-batch-size", "megatron/training/arguments.py:687",
                     absl::StrCat("--global-batch-size (", global_batch, ") must be > 0"));
  }
  launch.micro_batch_size = micro_batch;
  launch.global_batch_size = global_batch;
  const int64_t eval_global = args.Int("eval-global-batch-size", global_batch);
  const int64_t eval_micro = args.Int("eval-micro-batch-size", micro_batch);
  if (eval_micro <= 0 || eval_global % (eval_micro * dp) != 0) {
    return Violation(
        "batch-divisibility", "megatron/training/arguments.py:689-696",
        absl::StrCat("eval global batch (", eval_global,
                     ", --global-batch-size by default) is not "
                     "divisible by eval micro-batch (",
                     eval_micro, ", --micro-batch-size by default) x data parallel (", dp, ")"));
  }

  // validate_args reads --num-layers for the pipeline split before it checks that it is set.
  const int64_t layers = args.Int("num-layers", args.Int("encoder-num-layers", 0));
  for (const char* required : {"hidden-size", "num-attention-heads", "max-position-embeddings"}) {
    if (!args.Has(required)) {
      return Violation("required", "megatron/training/arguments.py:1274-1277",
                       absl::StrCat("--", required, " is required"));
    }
  }
  if (!args.Has("num-layers") && !args.Has("encoder-num-layers")) {
    return Violation("required", "megatron/training/arguments.py:1264-1277",
                     "--num-layers is required");
  }

  const bool by_layers = args.Has("num-layers-per-virtual-pipeline-stage");
  const bool by_stages = args.Has("num-virtual-stages-per-pipeline-rank");
  if (by_layers && by_stages) {
    return Violation("virtual-pipeline-flags", "megatron/training/arguments.py:894-905",
                     "no more than one of --num-layers-per-virtual-pipeline-stage, "
                     "--num-virtual-stages-per-pipeline-rank, --pipeline-model-parallel-layout "
                     "can be set");
  }
  const bool account_embedding = args.Has("account-for-embedding-in-pipeline-split");
  const bool account_loss = args.Has("account-for-loss-in-pipeline-split");
  launch.uneven_pipeline = account_embedding || account_loss;
  const int64_t split_layers = layers + (account_embedding ? 1 : 0) + (account_loss ? 1 : 0);
  const std::string split_what =
      absl::StrCat("--num-layers (", layers, ")",
                   account_embedding ? " + 1 (--account-for-embedding-in-pipeline-split)" : "",
                   account_loss ? " + 1 (--account-for-loss-in-pipeline-split)" : "");
  int64_t vp = 0;  // 0: no interleaving (None in the release)
  if (by_layers) {
    if (split_layers % pp != 0) {
      return Violation(
          "pipeline-split", "megatron/training/arguments.py:934-935",
          absl::StrCat(split_what, " = ", split_layers,
                       " is not divisible by --pipeline-model-parallel-size (", pp, ")"));
    }
    const int64_t per_stage = split_layers / pp;
    const int64_t per_virtual_stage = args.Int("num-layers-per-virtual-pipeline-stage", 0);
    if (per_virtual_stage < 1 || per_stage % per_virtual_stage != 0) {
      return Violation(
          "layers-per-virtual-stage", "megatron/training/arguments.py:936-941",
          absl::StrCat("the layers per pipeline stage (", split_what, " = ", split_layers, " / ",
                       pp, " = ", per_stage,
                       ") are not divisible by --num-layers-per-virtual-pipeline-stage (",
                       per_virtual_stage, ")"));
    }
    vp = per_stage / per_virtual_stage;
  } else if (by_stages) {
    vp = args.Int("num-virtual-stages-per-pipeline-rank", 0);
    if (vp < 1) {
      return Violation(
          "virtual-stages",
          "megatron/training/arguments.py:943, "
          "megatron/core/transformer/transformer_block.py:170",
          absl::StrCat("--num-virtual-stages-per-pipeline-rank (", vp, ") must be >= 1"));
    }
  } else if (split_layers % pp != 0) {
    return Violation(
        "pipeline-split", "megatron/training/arguments.py:951-964",
        absl::StrCat(split_what, " = ", split_layers,
                     " is not divisible by --pipeline-model-parallel-size (", pp, ")"));
  }
  if (vp == 1) vp = 0;  // arguments.py:944-945
  launch.virtual_pipeline = vp == 0 ? 1 : vp;
  if (vp != 0) {
    if (!args.Has("no-overlap-p2p-communication") && pp <= 1) {
      return Violation("interleaving-pipeline-size",
                       "megatron/training/arguments.py:966-970, "
                       "megatron/core/parallel_state.py:827-831",
                       absl::StrCat(vp,
                                    " virtual stages per pipeline rank need "
                                    "--pipeline-model-parallel-size > 1, not ",
                                    pp));
    }
    if (args.Has("no-overlap-p2p-communication") && pp <= 2) {
      return Violation("interleaving-pipeline-size", "megatron/training/arguments.py:971-975",
                       absl::StrCat(vp,
                                    " virtual stages per pipeline rank with "
                                    "--no-overlap-p2p-communication need "
                                    "--pipeline-model-parallel-size > 2, not ",
                                    pp));
    }
  }

  const bool megatron_fsdp = args.Has("use-megatron-fsdp");
  // Megatron-FSDP turns the distributed optimizer on (arguments.py:1106-1112), after the
  // checks below, which accept either.
  const bool distributed_optimizer = args.Has("use-distributed-optimizer") || megatron_fsdp;
  const bool overlap_grad_reduce = args.Has("overlap-grad-reduce");
  const bool overlap_param_gather = args.Has("overlap-param-gather");
  launch.distributed_optimizer = distributed_optimizer;
  launch.megatron_fsdp = megatron_fsdp;
  launch.overlap_grad_reduce = overlap_grad_reduce;
  launch.overlap_param_gather = overlap_param_gather;
  if (overlap_param_gather && !distributed_optimizer) {
    return Violation("overlap-param-gather", "megatron/training/arguments.py:990-993",
                     "--overlap-param-gather is only supported with the distributed optimizer "
                     "(--use-distributed-optimizer) or Megatron-FSDP (--use-megatron-fsdp)");
  }
  if (overlap_param_gather && !overlap_grad_reduce) {
    return Violation("overlap-param-gather", "megatron/training/arguments.py:994-995",
                     "--overlap-param-gather needs --overlap-grad-reduce");
  }
  // update_use_dist_ckpt (megatron/training/utils/common_utils.py:555-556).
  const std::string ckpt_format =
      args.Has("ckpt-format") ? args.Text("ckpt-format") : std::string("torch_dist");
  const bool dist_ckpt = ckpt_format != "torch";
  if (args.Has("overlap-param-gather-with-optimizer-step")) {
    const char* missing = !distributed_optimizer  ? "--use-distributed-optimizer"
                          : !overlap_param_gather ? "--overlap-param-gather"
                          : vp == 0               ? "interleaving (a virtual pipeline)"
                          : dist_ckpt             ? "--ckpt-format=torch"
                                                  : nullptr;
    if (missing != nullptr) {
      return Violation("overlap-param-gather-with-optimizer-step",
                       "megatron/training/arguments.py:1032-1040",
                       absl::StrCat("--overlap-param-gather-with-optimizer-step needs ", missing));
    }
  }
  const bool fp8_param_gather = args.Has("fp8-param-gather");
  launch.fp8_param_gather = fp8_param_gather;
  if (fp8_param_gather && !distributed_optimizer) {
    return Violation("fp8-param-gather", "megatron/training/arguments.py:1060-1062",
                     "--fp8-param-gather is only supported with the distributed optimizer or "
                     "Megatron-FSDP");
  }
  const std::string fp8 = args.Text("fp8-format");
  if (!fp8.empty() && args.Has("fp4-format")) {
    return Violation("fp4-fp8", "megatron/training/arguments.py:1064-1066",
                     "--fp4-format and --fp8-format cannot be used together");
  }
  const auto connections = environment.find("CUDA_DEVICE_MAX_CONNECTIONS");
  const bool one_connection = connections != environment.end() && connections->second == "1";
  if (megatron_fsdp) {
    PT_RETURN_IF_ERROR(CheckMegatronFsdp(args, one_connection, ckpt_format, &launch));
  }
  launch.fp8_format = fp8;
  const bool bf16 = args.Has("bf16");
  if (bf16 && args.Has("fp16")) {
    return Violation("fp16-bf16", "megatron/training/arguments.py:1172-1182",
                     "--fp16 and --bf16 cannot be used together");
  }
  launch.bf16 = bf16;
  bool fp32_gradients = args.Has("accumulate-allreduce-grads-in-fp32");
  if (bf16) {
    const bool fp32_main_grads = args.Text("main-grads-dtype") != "bf16";
    if (fp32_gradients && !fp32_main_grads) {
      return Violation("main-grads-dtype", "megatron/training/arguments.py:1186-1188",
                       "--main-grads-dtype can only be fp32 when "
                       "--accumulate-allreduce-grads-in-fp32 is set");
    }
    if (args.Has("grad-reduce-in-bf16")) {
      fp32_gradients = false;
    } else if (fp32_main_grads) {
      fp32_gradients = true;
    }
  }
  launch.fp32_gradients = fp32_gradients;

  const int64_t hidden = args.Int("hidden-size", 0);
  const int64_t heads = args.Int("num-attention-heads", 0);
  if (!args.Has("kv-channels") && (heads == 0 || hidden % heads != 0)) {
    return Violation("kv-channels", "megatron/training/arguments.py:1291-1293",
                     absl::StrCat("--hidden-size (", hidden,
                                  ") is not divisible by --num-attention-heads (", heads, ")"));
  }
  launch.kv_channels = args.Int("kv-channels", heads != 0 ? hidden / heads : 0);

  if (!args.Has("seq-length") && !args.Has("encoder-seq-length")) {
    return Violation("seq-length", "megatron/training/arguments.py:1306-1311",
                     "--seq-length (or --encoder-seq-length) is required");
  }
  const int64_t seq = args.Int("seq-length", args.Int("encoder-seq-length", 0));
  if (args.Has("seq-length") && cp > 1 && seq % (2 * cp) != 0) {
    return Violation("context-parallel-sequence", "megatron/training/arguments.py:1295-1298",
                     absl::StrCat("--seq-length (", seq,
                                  ") is not a multiple of 2 x --context-parallel-size (", cp, ")"));
  }
  const int64_t max_positions = args.Int("max-position-embeddings", 0);
  if (max_positions < seq) {
    return Violation("max-position-embeddings", "megatron/training/arguments.py:1313-1316",
                     absl::StrCat("--max-position-embeddings (", max_positions,
                                  ") must be at least --seq-length (", seq, ")"));
  }
  if (args.Has("lr") && args.Float("min-lr", 0.0) > args.Float("lr", 0.0)) {
    return Violation("min-lr", "megatron/training/arguments.py:1319-1320",
                     absl::StrCat("--min-lr (", args.Text("min-lr"), ") must be at most --lr (",
                                  args.Text("lr"), ")"));
  }

  const std::string granularity = args.Text("recompute-granularity");
  const bool has_method = args.Has("recompute-method");
  launch.recompute_granularity = granularity;
  if (args.Has("distribute-saved-activations")) {
    const char* missing = tp <= 1                 ? "--tensor-model-parallel-size > 1"
                          : granularity != "full" ? "--recompute-granularity=full"
                          : !has_method           ? "--recompute-method"
                                                  : nullptr;
    if (missing != nullptr) {
      return Violation("distribute-saved-activations", "megatron/training/arguments.py:1370-1379",
                       absl::StrCat("--distribute-saved-activations needs ", missing));
    }
  }
  if (granularity == "selective" && has_method) {
    return Violation("selective-recompute-method", "megatron/training/arguments.py:1385-1388",
                     "--recompute-method is not supported with --recompute-granularity=selective");
  }
  // arguments.py:1390-1399: sequence parallelism is off with tp = 1.
  const bool sequence_parallel = args.Has("sequence-parallel") && tp > 1;
  launch.sequence_parallel = sequence_parallel;
  launch.tp_comm_overlap = args.Has("tp-comm-overlap");
  if (launch.tp_comm_overlap && !sequence_parallel) {
    return Violation("tp-comm-overlap", "megatron/training/arguments.py:1401-1402",
                     "--tp-comm-overlap needs sequence parallelism (--sequence-parallel with "
                     "--tensor-model-parallel-size > 1)");
  }
  if ((tp > 1 || cp > 1) && !megatron_fsdp && !args.Has("overlap-moe-expert-parallel-comm") &&
      !one_connection) {
    return Violation("cuda-device-max-connections", "megatron/training/arguments.py:1413-1439",
                     absl::StrCat("tensor (", tp, ") or context (", cp,
                                  ") parallelism needs the environment variable "
                                  "CUDA_DEVICE_MAX_CONNECTIONS=1 on GPUs before Blackwell"));
  }
  if (ckpt_format == "fsdp_dtensor" && !megatron_fsdp) {
    return Violation("fsdp-dtensor", "megatron/training/arguments.py:1620-1621",
                     "--ckpt-format=fsdp_dtensor is only supported with Megatron-FSDP "
                     "(--use-megatron-fsdp)");
  }
  PT_RETURN_IF_ERROR(CheckExpertParallelism(args, &launch));
  if (args.Has("disable-gloo-process-groups") && distributed_optimizer && !dist_ckpt) {
    return Violation("gloo-process-groups", "megatron/training/arguments.py:1689-1695",
                     "--disable-gloo-process-groups with the distributed optimizer needs a "
                     "distributed checkpoint format, not --ckpt-format=torch");
  }
  // initialize_model_parallel, once the arguments are validated.
  PT_RETURN_IF_ERROR(CheckExpertGrid(&launch));
  launch.distributed_optimizer_instances = args.Int("num-distributed-optimizer-instances", 1);
  PT_RETURN_IF_ERROR(CheckDistributedOptimizerInstances(launch));

  // TransformerConfig.__post_init__ (core_transformer_config_from_args builds it).
  if (heads % tp != 0) {
    return Violation(
        "attention-heads", "megatron/core/transformer/transformer_config.py:1323-1327",
        absl::StrCat("--num-attention-heads (", heads,
                     ") must be a multiple of --tensor-model-parallel-size (", tp, ")"));
  }
  const int64_t groups =
      args.Has("group-query-attention") ? args.Int("num-query-groups", 1) : heads;
  launch.query_groups = groups;
  if (groups < 1 || (groups % tp != 0 && tp % groups != 0)) {
    return Violation(
        "query-groups",
        "megatron/core/transformer/transformer_config.py:1335-1345, "
        "megatron/training/argument_utils.py:330-333",
        absl::StrCat(
            "the query groups (", groups,
            args.Has("group-query-attention") ? ", --num-query-groups with --group-query-attention"
                                              : ", the heads without --group-query-attention",
            ") must be a multiple or a divisor of --tensor-model-parallel-size (", tp, ")"));
  }
  // argument_utils.py:312 hands --fp8-param-gather to the config as fp8_param.
  if (fp8_param_gather && fp8.empty()) {
    return Violation("fp8-param", "megatron/core/transformer/transformer_config.py:1439-1440",
                     "--fp8-param-gather (fp8_param) must be used together with fp8 mode "
                     "(--fp8-format)");
  }
  PT_RETURN_IF_ERROR(CheckMoeConfig(args, &launch));
  if (!granularity.empty()) {
    if (!has_method && granularity != "selective") {
      return Violation("recompute", "megatron/core/transformer/transformer_config.py:1731-1740",
                       absl::StrCat("--recompute-granularity=", granularity,
                                    " needs --recompute-method (block or uniform)"));
    }
    if (granularity != "selective" && !args.Has("recompute-num-layers")) {
      return Violation(
          "recompute", "megatron/core/transformer/transformer_config.py:1742-1748",
          absl::StrCat("--recompute-granularity=", granularity, " needs --recompute-num-layers"));
    }
    if (granularity == "selective" && args.Has("recompute-num-layers")) {
      return Violation("recompute", "megatron/core/transformer/transformer_config.py:1749-1755",
                       "--recompute-num-layers must be unset with "
                       "--recompute-granularity=selective");
    }
  }
  if (args.Has("distribute-saved-activations") && sequence_parallel) {
    return Violation("distribute-saved-activations",
                     "megatron/core/transformer/transformer_config.py:1757-1761",
                     "--distribute-saved-activations must be off with sequence parallelism");
  }
  if (account_embedding || account_loss) {
    if (split_layers % pp != 0) {
      return Violation(
          "account-for-pipeline-split",
          vp == 0 ? "megatron/core/transformer/transformer_config.py:2067-2080"
                  : "megatron/core/transformer/transformer_config.py:2081-2096",
          absl::StrCat(split_what, " = ", split_layers,
                       " is not divisible by --pipeline-model-parallel-size (", pp, ")"));
    }
    if (vp != 0 && (split_layers / pp) % vp != 0) {
      return Violation("account-for-pipeline-split",
                       "megatron/core/transformer/transformer_config.py:2098-2109",
                       absl::StrCat("the layers per pipeline rank (", split_layers / pp,
                                    ") are not divisible by the virtual pipeline size (", vp, ")"));
    }
  }
  PT_RETURN_IF_ERROR(CheckMoeRouting(args, &launch));
  if (cp > 1 && cp_comm_types != nullptr && cp_comm_types->size() > 1 &&
      static_cast<int64_t>(cp_comm_types->size()) != layers) {
    return Violation("cp-comm-type", "megatron/core/transformer/transformer_config.py:2778-2783",
                     absl::StrCat("--cp-comm-type names ", cp_comm_types->size(),
                                  " types, not one per layer (", layers, ")"));
  }

  // The model build: its MoE layers, then its chunks.
  PT_RETURN_IF_ERROR(CheckMoeModel(args, layers, &launch));
  // The first step: the model's chunks (the build), the micro-batch count and the schedule, the
  // embedding's sequence-parallel scatter.
  if (split_layers % pp != 0) {
    return Violation(
        "chunk-layers", "megatron/core/transformer/transformer_block.py:150-152",
        absl::StrCat(split_what, " = ", split_layers,
                     " is not divisible by --pipeline-model-parallel-size (", pp, ")"));
  }
  if (vp != 0 && pp > 1 && (split_layers / pp) % vp != 0) {
    return Violation("chunk-layers", "megatron/core/transformer/transformer_block.py:169-172",
                     absl::StrCat("the layers per pipeline rank (", split_layers / pp,
                                  ") are not divisible by the virtual pipeline size (", vp, ")"));
  }
  if (global_batch % (micro_batch * dp) != 0) {
    return Violation("batch-divisibility", "megatron/core/num_microbatches_calculator.py:381-386",
                     absl::StrCat("--global-batch-size (", global_batch,
                                  ") is not divisible by --micro-batch-size (", micro_batch,
                                  ") x data parallel (", dp, ")"));
  }
  const int64_t micro_batches = global_batch / (micro_batch * dp);
  launch.micro_batches = micro_batches;
  if (vp != 0 && pp > 1) {
    // ModelParallelConfig.__post_init__ defaults the group to pp (model_parallel_config.py:567).
    const int64_t group = args.Int("microbatch-group-size-per-virtual-pipeline-stage", pp);
    if (group > micro_batches || group < pp) {
      return Violation(
          "interleaved-micro-batches", "megatron/core/pipeline_parallel/schedules.py:1133-1141",
          absl::StrCat("the interleaved schedule's micro-batch group (", group,
                       ", --microbatch-group-size-per-virtual-pipeline-stage, default pp) must "
                       "range in [pp = ",
                       pp, ", micro-batches = ", micro_batches, "]"));
    }
    const int64_t last_group = micro_batches % group;
    if (last_group > 0 && last_group < pp) {
      return Violation(
          "interleaved-micro-batches", "megatron/core/pipeline_parallel/schedules.py:1143-1153",
          absl::StrCat("the micro-batches (", micro_batches, ") leave a last group of ", last_group,
                       " of the interleaved schedule's groups of ", group, ", fewer than pp (", pp,
                       ")"));
    }
  }
  if (sequence_parallel && (seq / cp) % tp != 0) {
    return Violation("sequence-parallel-split",
                     "megatron/core/tensor_parallel/mappings.py:72-74, from "
                     "megatron/core/models/common/embeddings/language_model_embedding.py:141",
                     absl::StrCat("each context-parallel rank's sequence (--seq-length ", seq,
                                  " / cp ", cp, " = ", seq / cp,
                                  ") is not divisible by --tensor-model-parallel-size (", tp, ")"));
  }
  PT_RETURN_IF_ERROR(CheckMoeStep(launch));
  // Megatron-LM hands each layer's type to Transformer Engine's DotProductAttention only with
  // cp > 1 (megatron/core/extensions/transformer_engine.py:1858-1882), whose
  // attn_forward_func_with_cp raises on any other.
  if (cp > 1) {
    for (const std::string& type : launch.cp_comm_types) {
      if (std::find(std::begin(kTransformerEngineCpCommTypes),
                    std::end(kTransformerEngineCpCommTypes),
                    type) == std::end(kTransformerEngineCpCommTypes)) {
        return Violation("cp-comm-type-value", kTransformerEngineContextParallel,
                         absl::StrCat("Unsupported communication type: ", type,
                                      " (--cp-comm-type; Transformer Engine takes ",
                                      absl::StrJoin(kTransformerEngineCpCommTypes, ", "), ")"));
      }
    }
  }
  return launch;
}

}  // namespace paratune
