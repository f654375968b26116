#include "cli/command_table.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "cli/autotuner_client.h"
#include "cli/commands.h"
#include "cli/export.h"
#include "cli/output.h"
#include "cli/terminal.h"
#include "common/client_credentials.h"
#include "common/status_macros.h"
#include "convert/search_request.h"
#include "proto/autotuner_service.pb.h"
#include "proto/probe.pb.h"

namespace paratune {
namespace {

using Choices = absl::Span<const FlagChoice>;

// The words of the choice flags and what each stands for.
constexpr FlagChoice kPrecisionChoices[] = {{"false", v1::BF16}, {"true", v1::FP8}};
constexpr FlagChoice kCpCommTypeChoices[] = {{"p2p", v1::CP_COMM_TYPE_P2P},
                                             {"all_gather", v1::CP_COMM_TYPE_ALL_GATHER}};
constexpr FlagChoice kMoeTokenDispatcherChoices[] = {
    {"alltoall", v1::MOE_TOKEN_DISPATCHER_ALLTOALL},
    {"allgather", v1::MOE_TOKEN_DISPATCHER_ALLGATHER},
    {"flex_deepep", v1::MOE_TOKEN_DISPATCHER_FLEX_DEEPEP},
    {"flex_hybridep", v1::MOE_TOKEN_DISPATCHER_FLEX_HYBRIDEP}};
constexpr FlagChoice kRecomputeChoices[] = {{"none", v1::RECOMPUTE_NONE},
                                            {"selective", v1::RECOMPUTE_SELECTIVE},
                                            {"full", v1::RECOMPUTE_FULL}};
// default leaves ParallelConfig.dp_sharding unset: the training's default.
constexpr FlagChoice kDpShardingChoices[] = {{"default", v1::DP_SHARDING_UNSPECIFIED},
                                             {"none", v1::DP_SHARDING_NONE},
                                             {"optimizer", v1::DP_SHARDING_OPTIMIZER},
                                             {"gradients", v1::DP_SHARDING_GRADIENTS},
                                             {"full", v1::DP_SHARDING_FULL}};
constexpr FlagChoice kFrameworkChoices[] = {{"megatron", v1::FRAMEWORK_MEGATRON},
                                            {"torchtitan", v1::FRAMEWORK_TORCHTITAN}};
constexpr FlagChoice kMemoryPolicyChoices[] = {{"measure_risky", v1::MEASURE_RISKY},
                                               {"safe_only", v1::SAFE_ONLY}};
constexpr FlagChoice kPolicyChoices[] = {
    {"adaptive", v1::ADAPTIVE}, {"top_k", v1::TOP_K}, {"exhaustive", v1::EXHAUSTIVE}};
// auto leaves ProbeSettings.scope unset, for the server to choose.
constexpr FlagChoice kScopeChoices[] = {{"auto", v1::PROBE_SCOPE_UNSPECIFIED},
                                        {"full", v1::PROBE_SCOPE_FULL},
                                        {"replica", v1::PROBE_SCOPE_REPLICA}};
constexpr FlagChoice kColorChoices[] = {{"auto", static_cast<int>(ColorMode::kAuto)},
                                        {"always", static_cast<int>(ColorMode::kAlways)},
                                        {"never", static_cast<int>(ColorMode::kNever)}};
constexpr FlagChoice kFormatChoices[] = {
    {"megatron", static_cast<int>(ExportFormat::kMegatron)},
    {"nemo", static_cast<int>(ExportFormat::kNemo)},
    {"json", static_cast<int>(ExportFormat::kJson)},
    {"sbatch", static_cast<int>(ExportFormat::kSbatch)},
    {"megatron-bridge", static_cast<int>(ExportFormat::kMegatronBridge)},
    {"torchtitan", static_cast<int>(ExportFormat::kTorchTitan)},
    {"torchtitan-toml", static_cast<int>(ExportFormat::kTorchTitanToml)}};

// The model.
constexpr Flag kModel = {
    "model", FlagType::kString, "llama3.1-8b",
    "Model preset: llama2-7b, llama2-13b, llama2-70b, llama3.1-8b, llama3.1-70b, "
    "llama3.1-405b, llama3.2-1b, llama3.2-3b; the mixture-of-experts mixtral-8x7b, "
    "mixtral-8x22b, qwen3-30b-a3b, qwen3-235b-a22b, llama4-scout, llama4-maverick "
    "(docs/models.md). Empty to give --hidden_size and the other dimensions below."};
constexpr Flag kHiddenSize = {"hidden_size", FlagType::kInt, "0",
                              "Explicit model (with --model=): hidden size h."};
constexpr Flag kFfnHiddenSize = {"ffn_hidden_size", FlagType::kInt, "0",
                                 "Explicit model: SwiGLU inner width f."};
constexpr Flag kNumLayers = {"num_layers", FlagType::kInt, "0", "Explicit model: layers L."};
constexpr Flag kNumHeads = {"num_heads", FlagType::kInt, "0", "Explicit model: attention heads a."};
constexpr Flag kNumKvHeads = {"num_kv_heads", FlagType::kInt, "0",
                              "Explicit model: key/value heads k."};
constexpr Flag kVocabSize = {"vocab_size", FlagType::kInt, "0",
                             "Explicit model: vocabulary size V."};
constexpr Flag kTiedEmbeddings = {"tied_embeddings", FlagType::kBool, "false",
                                  "Explicit model: LM head tied to the embedding."};
constexpr Flag kHeadDim = {"head_dim", FlagType::kInt, "0",
                           "Explicit model: attention head width d; 0 is hidden_size / "
                           "num_heads (Qwen3's heads are wider)."};
// The mixture-of-experts part of an explicit model: a model with --num_experts > 0.
constexpr FlagChoice kMoeRouterScoreChoices[] = {{"softmax", v1::MOE_ROUTER_SCORE_SOFTMAX},
                                                 {"sigmoid", v1::MOE_ROUTER_SCORE_SIGMOID}};
constexpr Flag kNumExperts = {"num_experts", FlagType::kInt, "0",
                              "Explicit model: routed experts per MoE layer; 0 is a dense "
                              "model."};
constexpr Flag kMoeRouterTopK = {"moe_router_top_k", FlagType::kInt, "0",
                                 "Explicit MoE model: experts each token is routed to."};
constexpr Flag kMoeFfnHiddenSize = {"moe_ffn_hidden_size", FlagType::kInt, "0",
                                    "Explicit MoE model: SwiGLU inner width of one routed "
                                    "expert."};
constexpr Flag kNumSharedExperts = {"num_shared_experts", FlagType::kInt, "0",
                                    "Explicit MoE model: shared experts every token passes "
                                    "through."};
constexpr Flag kSharedExpertFfnHiddenSize = {"shared_expert_ffn_hidden_size", FlagType::kInt, "0",
                                             "Explicit MoE model: SwiGLU inner width of one "
                                             "shared expert."};
constexpr Flag kMoeLayerStep = {"moe_layer_step", FlagType::kInt, "0",
                                "Explicit MoE model: every N-th layer holds experts (layers "
                                "N-1, 2N-1, ...); 0 is every layer."};
constexpr Flag kMoeFirstDenseLayers = {"moe_first_dense_layers", FlagType::kInt, "0",
                                       "Explicit MoE model: the first layers that stay dense."};
constexpr Flag kMoeRouterScore = {"moe_router_score", FlagType::kString, "",
                                  "Explicit MoE model: how the router scores the experts; "
                                  "empty is softmax.",
                                  Choices(kMoeRouterScoreChoices)};

// The cluster.
constexpr Flag kGpu = {"gpu", FlagType::kString, "h100-80gb",
                       "GPU type: a100-40gb, a100-80gb, h100-80gb, h100-94gb, h200-141gb."};
constexpr Flag kNodes = {"nodes", FlagType::kInt, "1", "Number of nodes."};
constexpr Flag kGpusPerNode = {"gpus_per_node", FlagType::kInt, "8", "GPUs per node."};

// The training run.
constexpr Flag kGlobalBatch = {"global_batch", FlagType::kInt, "1024",
                               "Global batch size, sequences per optimizer step."};
constexpr Flag kSeqLen = {"seq_len", FlagType::kInt, "8192", "Sequence length, tokens."};
constexpr Flag kFp8 = {"fp8", FlagType::kBool, "false",
                       "fp8 GEMMs (bf16 otherwise); needs Hopper-class GPUs.",
                       Choices(kPrecisionChoices)};
constexpr Flag kDistributedOptimizer = {
    "distributed_optimizer", FlagType::kBool, "true",
    "The data-parallel sharding of a configuration or search that names none: true the "
    "framework's own (Megatron's distributed optimizer, TorchTitan's FSDP), false none."};
constexpr Flag kFramework = {
    "framework", FlagType::kString, "megatron",
    "The training framework: megatron (Megatron-LM, NeMo, Megatron-Bridge) or torchtitan. It "
    "selects the framework's memory accounting, throughput, sharding modes and default "
    "sharding; probes run the launch template and exports follow --format.",
    Choices(kFrameworkChoices)};
constexpr Flag kTorchCompile = {
    "torch_compile", FlagType::kBool, "false",
    "With --framework=torchtitan: compile each transformer block with torch.compile "
    "(TorchTitan --compile.enable), which changes the predicted compute time; TorchTitan's "
    "async TP (--tp_comm_overlap) needs it."};
constexpr Flag kFp32Grads = {"fp32_grads", FlagType::kBool, "true",
                             "fp32 gradients (bf16 when false)."};
constexpr Flag kFlashAttention = {"flash_attention", FlagType::kBool, "true", "FlashAttention."};
constexpr Flag kFp8ParamGather = {
    "fp8_param_gather", FlagType::kBool, "false",
    "With --fp8: keep the linear weights in fp8 and gather them in fp8 (Megatron-LM "
    "--fp8-param-gather); needs --distributed_optimizer and a data-parallel sharding that "
    "gathers weights."};
constexpr Flag kTpCommOverlap = {
    "tp_comm_overlap", FlagType::kBool, "false",
    "Overlap tensor-parallel communication with the GEMMs (Megatron-LM --tp-comm-overlap, "
    "Transformer Engine userbuffers) where tp > 1, which then needs sequence parallelism; "
    "under --framework=torchtitan its async TP, which needs --torch_compile. Not exportable as "
    "NeMo recipe overrides."};
constexpr Flag kCpCommType = {
    "cp_comm_type", FlagType::kString, "p2p",
    "How context-parallel ranks exchange keys and values where cp > 1 (Megatron-LM "
    "--cp-comm-type): p2p (the ring, overlapped with attention) or all_gather (one all-gather "
    "before attention, not overlapped).",
    Choices(kCpCommTypeChoices)};
constexpr Flag kMoeCapacityFactor = {
    "moe_capacity_factor", FlagType::kDouble, "0",
    "Mixture-of-experts models: 0 routes dropless (Megatron-LM's default); above 0 each expert "
    "takes at most this many times its even share of tokens and drops the rest (Megatron-LM "
    "--moe-expert-capacity-factor)."};
constexpr Flag kMoeTokenDispatcher = {
    "moe_token_dispatcher", FlagType::kString, "alltoall",
    "Mixture-of-experts models: how routed tokens reach their experts (Megatron-LM "
    "--moe-token-dispatcher-type): alltoall over the expert-parallel group, allgather, or "
    "flex with DeepEP's or HybridEP's fused kernels (flex_deepep, flex_hybridep: "
    "--moe-flex-dispatcher-backend).",
    Choices(kMoeTokenDispatcherChoices)};
constexpr Flag kMoeExpertParallelOverlap = {
    "moe_expert_parallel_overlap", FlagType::kBool, "false",
    "Mixture-of-experts models: overlap one micro-batch's all-to-all with another's compute "
    "(Megatron-LM --overlap-moe-expert-parallel-comm) where ep > 1 and recompute is not full; "
    "needs a --moe_token_dispatcher other than allgather."};
constexpr Flag kMoeSharedExpertOverlap = {
    "moe_shared_expert_overlap", FlagType::kBool, "false",
    "Mixture-of-experts models with shared experts: run them beside the dispatcher's "
    "communication (Megatron-LM --moe-shared-expert-overlap); needs a --moe_token_dispatcher "
    "other than allgather, not with --moe_expert_parallel_overlap."};
constexpr Flag kMoeGroupedGemm = {
    "moe_grouped_gemm", FlagType::kBool, "true",
    "Mixture-of-experts models: one grouped GEMM per expert linear (Megatron-LM "
    "--moe-grouped-gemm) rather than one GEMM per local expert."};

// One configuration.
constexpr Flag kTp = {"tp", FlagType::kInt, "1", "Tensor-parallel size."};
constexpr Flag kPp = {"pp", FlagType::kInt, "1", "Pipeline-parallel size."};
constexpr Flag kCp = {"cp", FlagType::kInt, "1", "Context-parallel size."};
constexpr Flag kDp = {"dp", FlagType::kInt, "0",
                      "Data-parallel size; 0 derives it as GPUs / (tp x pp x cp)."};
constexpr Flag kMbs = {"mbs", FlagType::kInt, "1", "Micro-batch size."};
constexpr Flag kVp = {"vp", FlagType::kInt, "1",
                      "Virtual pipeline stages per rank (interleaving)."};
constexpr Flag kRecompute = {"recompute", FlagType::kString, "none", "Activation recompute.",
                             Choices(kRecomputeChoices)};
constexpr Flag kSequenceParallel = {"sequence_parallel", FlagType::kBool, "true",
                                    "Sequence parallelism with TP (ignored when tp is 1)."};
constexpr Flag kEp = {"ep", FlagType::kInt, "1",
                      "Expert-parallel size of a mixture-of-experts model: its routed experts "
                      "split over ep ranks; must divide the experts. 1 for a dense model."};
constexpr Flag kEtp = {"etp", FlagType::kInt, "0",
                       "Expert tensor-parallel size of a mixture-of-experts model: each expert "
                       "split over etp ranks; 0 means --tp (Megatron-LM's default). etp x ep x "
                       "pp must divide the GPUs."};
constexpr Flag kDpSharding = {
    "dp_sharding", FlagType::kString, "default",
    "Data-parallel sharding: none (DDP), optimizer (ZeRO-1, Megatron's distributed "
    "optimizer), gradients (ZeRO-2), full (ZeRO-3 / FSDP); default is the framework's own "
    "(see --distributed_optimizer).",
    Choices(kDpShardingChoices)};
constexpr Flag kDpShardGroup = {
    "dp_shard_group", FlagType::kInt, "0",
    "Hybrid sharding (HSDP): shard within groups of this many data-parallel ranks, replicate "
    "across groups; 0 shards over all of them."};

// The search space.
constexpr Flag kSafeFraction = {"safe_fraction", FlagType::kDouble, "0.80",
                                "Memory fraction of capacity below which a configuration is "
                                "SAFE."};
constexpr Flag kMicroBatches = {"micro_batches", FlagType::kIntList, "",
                                "Micro-batch sizes to try; the server's default 1,2,4,8,16."};
constexpr Flag kVirtualPipelineSizes = {
    "virtual_pipeline_sizes", FlagType::kIntList, "",
    "Virtual pipeline sizes to try, v > 1 where pp > 1; the server's default 1."};
constexpr Flag kExpertParallelSizes = {
    "expert_parallel_sizes", FlagType::kIntList, "",
    "Expert-parallel sizes to try for a mixture-of-experts model; the server's default every "
    "divisor of the model's experts. Refused for a dense model."};
constexpr Flag kExpertTensorParallelSizes = {
    "expert_tensor_parallel_sizes", FlagType::kIntList, "",
    "Expert tensor-parallel sizes to try for a mixture-of-experts model; the server's default "
    "each configuration's tp. Refused for a dense model."};
constexpr Flag kDpShardingModes = {
    "dp_sharding_modes", FlagType::kStringList, "",
    "Data-parallel sharding modes to try (none, optimizer, gradients, full); the server's "
    "default the framework's own (see --distributed_optimizer).",
    Choices(kDpShardingChoices).subspan(1)};  // the modes, without "default"
constexpr Flag kDpShardGroups = {
    "dp_shard_groups", FlagType::kIntList, "",
    "Hybrid-sharding groups to try, each with the configurations whose data-parallel size it "
    "divides properly; 0 shards over all data-parallel ranks (the server's default)."};
constexpr Flag kRecomputeModes = {
    "recompute_modes", FlagType::kStringList, "",
    "Recompute modes to try; the server's default none, or none, selective and full when "
    "nothing fits without recompute.",
    Choices(kRecomputeChoices)};
constexpr Flag kAllowTpCpAcrossNodes = {"allow_tp_cp_across_nodes", FlagType::kBool, "false",
                                        "Let tp x cp span nodes."};
constexpr Flag kAllowUnevenPipeline = {
    "allow_uneven_pipeline", FlagType::kBool, "false",
    "Allow pp x vp not dividing the layers (first and last stage one layer short, as "
    "Megatron-LM's account-for-embedding/loss split)."};
constexpr Flag kMemoryPolicy = {
    "memory_policy", FlagType::kString, "",
    "Which configurations the memory estimate lets a search probe: measure_risky (the "
    "server's default: RISKY ones too, above --safe_fraction of GPU memory; a probe measures "
    "whether they fit) or safe_only (the 80% rule: SAFE ones only).",
    Choices(kMemoryPolicyChoices)};

// The plan.
constexpr Flag kLimit = {"limit", FlagType::kInt, "20",
                         "Candidates and memory-map rows shown (the rows holding the best "
                         "predicted candidates); 0 shows all."};
constexpr Flag kExplain = {"explain", FlagType::kBool, "false",
                           "Instead of the plan, say why the configuration of --tp, --pp, --cp, "
                           "--dp, --mbs, --vp, --recompute, --sequence_parallel, --ep, --etp, "
                           "--dp_sharding and --dp_shard_group is or is not a candidate."};

// The search's policy and budget.
constexpr Flag kPolicy = {
    "policy", FlagType::kString, "adaptive",
    "Search policy: adaptive (probe in order of the search's refitted model, stop when nothing "
    "left can beat the best measured), top_k or exhaustive.",
    Choices(kPolicyChoices)};
constexpr Flag kTopK = {"top_k", FlagType::kInt, "8", "top_k: candidates the policy probes."};
constexpr Flag kTolerance = {"tolerance", FlagType::kDouble, "0.02",
                             "adaptive: stop when no unprobed candidate's optimistic prediction "
                             "beats the best measured by more than this fraction."};
constexpr Flag kMaxInFlight = {"max_in_flight", FlagType::kInt, "2",
                               "adaptive: probes of the search running at once."};
constexpr Flag kConfidenceSigmas = {
    "confidence_sigmas", FlagType::kDouble, "2",
    "adaptive: width of the optimistic prediction, predicted x exp(sigmas x the model's "
    "relative error), that an unprobed candidate must beat the best measured with; in (0, 10]."};
constexpr Flag kMaxConfirmations = {
    "max_confirmations", FlagType::kInt, "2",
    "adaptive: leaders re-probed longer when their short probes cannot be told apart; 0 turns "
    "confirmation off. At most 16."};
constexpr Flag kConfirmationStepsFactor = {
    "confirmation_steps_factor", FlagType::kInt, "4",
    "adaptive: a confirmation runs this many times --timed_steps; 2 .. 100."};
constexpr Flag kMaxProbes = {"max_probes", FlagType::kInt, "0",
                             "Budget of probes started; 0 means no limit."};
constexpr Flag kMaxGpuHours = {
    "max_gpu_hours", FlagType::kDouble, "0",
    "Budget of GPU-hours (wall time x GPUs of finished probes); 0 means no limit."};
constexpr Flag kDeadline = {"deadline", FlagType::kDuration, "0",
                            "Wall-clock limit of the search from its creation, e.g. 2h; running "
                            "probes are stopped then. 0 means no limit."};

// The probes.
constexpr Flag kBackend = {"backend", FlagType::kString, "sim",
                           "Probe backend the workers use: sim, replay, command or cuda."};
constexpr Flag kCommandTemplate = {"command_template", FlagType::kString, "",
                                   "With --backend=command, the name of a launch template the "
                                   "workers define in their config files."};
constexpr Flag kScope = {
    "scope", FlagType::kString, "auto",
    "Probe scope: full (every rank), replica (one data-parallel replica, DP traffic modelled) "
    "or auto (full when live workers of the search's GPU type can host every node of the "
    "cluster at once, one worker per node). With --backend=command a configuration that "
    "shards its states is probed at full scope whatever this says.",
    Choices(kScopeChoices)};
constexpr Flag kWarmupSteps = {"warmup_steps", FlagType::kInt, "2", "Untimed steps per probe."};
constexpr Flag kTimedSteps = {
    "timed_steps", FlagType::kInt, "5",
    "Timed steps per probe (at each micro-batch count of a short probe)."};
constexpr Flag kProbeDeadline = {
    "probe_deadline", FlagType::kDouble, "0",
    "Wall-clock limit of each probe, seconds; 0 lets the server derive each probe's from its "
    "predicted duration (docs/short_probes.md). At most 86,400."};
constexpr Flag kProbeStartup = {
    "probe_startup", FlagType::kDouble, "0",
    "Seconds one launch of a probe spends before its first step, for its predicted duration, "
    "derived deadline and projected cost; 0 means the backend's (120 for command templates, "
    "which launch once per short-step count; 30 otherwise). At most 3,600. Results report the "
    "start-up they measured."};
constexpr Flag kMaxAttempts = {
    "max_attempts", FlagType::kInt, "2",
    "Attempts a probe gets when it fails with an infrastructure error or loses its worker; 0 "
    "means the server's default, 2. At most 100."};
constexpr Flag kMaxLaunchFailures = {
    "max_launch_failures", FlagType::kInt, "0",
    "Stop the search FAILED once this many launches in a row (Slurm jobs for its probes, on a "
    "server with --launcher=slurm) were refused with the same message; 0 means the server's "
    "default, 3. At most 1,000."};
constexpr Flag kSeed = {"seed", FlagType::kUint, "1", "Seed of the sim backend's noise."};

// Submitting.
constexpr Flag kName = {"name", FlagType::kString, "", "Display name of the search."};
constexpr Flag kWatch = {"watch", FlagType::kBool, "false",
                         "Follow the search until it ends, then print the result."};
constexpr Flag kRequireWorkers = {
    "require_workers", FlagType::kBool, "false",
    "Refuse to submit when no live worker has the search's GPU type, backend and GPUs per "
    "node (submit warns otherwise, naming what the fleet has, and the probes wait)."};
constexpr Flag kDryRun = {"dry_run", FlagType::kBool, "false",
                          "Plan the search offline, as plan does, and print what it would cost "
                          "with its policy; contacts no server."};

// The server.
constexpr Flag kServer = {"server", FlagType::kString, "127.0.0.1:50051",
                          "Address of paratune-server, host:port."};
// A file the server's credentials come from; the variable stands in when it is not given.
constexpr Flag CredentialFile(const char* name, const char* help, const char* variable) {
  return {name, FlagType::kString, "", help, {}, variable};
}
constexpr Flag kTlsCa = CredentialFile(
    "tls_ca",
    "PEM file of the CA that signed paratune-server's certificate; talks TLS to the server when "
    "set (required by --tls_cert and --token_file).",
    "PARATUNE_TLS_CA");
constexpr Flag kTlsCert = CredentialFile("tls_cert",
                                         "PEM file of your client certificate, for a server that "
                                         "requires one (mutual TLS). With --tls_key.",
                                         "PARATUNE_TLS_CERT");
constexpr Flag kTlsKey =
    CredentialFile("tls_key", "PEM file of the private key of --tls_cert.", "PARATUNE_TLS_KEY");
constexpr Flag kTokenFile = CredentialFile(
    "token_file",
    "File holding your bearer token (a client or admin token of the server's --token_file) "
    "alone on one line, sent with every call; a file, so that the token never shows in `ps` or "
    "the shell's history.",
    "PARATUNE_TOKEN_FILE");
constexpr Flag kRpcTimeout = {"rpc_timeout", FlagType::kDuration, "30s", "Deadline of each RPC."};
constexpr Flag kWatchTimeout = {"watch_timeout", FlagType::kDuration, "24h",
                                "Longest time to watch a search."};
constexpr Flag kPageSize = {"page_size", FlagType::kInt, "0",
                            "Entries per page; 0 means the server's default (50 searches, 100 "
                            "events)."};
constexpr Flag kPageToken = {"page_token", FlagType::kString, "",
                             "Page token from a previous page."};

// Output.
constexpr Flag kJson = {"json", FlagType::kBool, "false",
                        "Print the result as the API proto's canonical JSON."};
constexpr Flag kColor = {
    "color", FlagType::kString, "auto",
    "Colour the memory map: auto (when stdout is a terminal, $NO_COLOR is unset or empty and "
    "$TERM is not dumb), always or never.",
    Choices(kColorChoices)};
constexpr Flag kFormat = {"format", FlagType::kString, "megatron",
                          "What to print: Megatron-LM arguments, NeMo 2 overrides, JSON, an "
                          "sbatch script running Megatron-LM, Megatron-Bridge recipe "
                          "overrides (NeMo 25.11 containers on), TorchTitan options "
                          "(torchtitan), or the same options as a TorchTitan TOML job file for "
                          "--job.config_file (torchtitan-toml).",
                          Choices(kFormatChoices)};
constexpr Flag kCandidate = {"candidate", FlagType::kString, "",
                             "The candidate to export, n or searches/ID/candidates/n; the best "
                             "measured when empty."};

// Where the flags go: the model, cluster and training run below EstimateRequest and
// SearchSpec alike.
constexpr FlagField kModelFields[] = {
    {&kModel, "model.preset"},
    {&kHiddenSize, "model.hidden_size"},
    {&kFfnHiddenSize, "model.ffn_hidden_size"},
    {&kNumLayers, "model.num_layers"},
    {&kNumHeads, "model.num_attention_heads"},
    {&kNumKvHeads, "model.num_kv_heads"},
    {&kVocabSize, "model.vocab_size"},
    {&kTiedEmbeddings, "model.tied_embeddings"},
    {&kHeadDim, "model.head_dim"},
    {&kNumExperts, "model.num_experts"},
    {&kMoeRouterTopK, "model.moe_router_top_k"},
    {&kMoeFfnHiddenSize, "model.moe_ffn_hidden_size"},
    {&kNumSharedExperts, "model.num_shared_experts"},
    {&kSharedExpertFfnHiddenSize, "model.shared_expert_ffn_hidden_size"},
    {&kMoeLayerStep, "model.moe_layer_step"},
    {&kMoeFirstDenseLayers, "model.moe_first_dense_layers"},
    {&kMoeRouterScore, "model.moe_router_score"},
};
constexpr FlagField kClusterFields[] = {
    {&kGpu, "cluster.gpu.type"},
    {&kNodes, "cluster.num_nodes"},
    {&kGpusPerNode, "cluster.gpus_per_node"},
};
constexpr FlagField kTrainingFields[] = {
    {&kGlobalBatch, "training.global_batch_size"},
    {&kSeqLen, "training.seq_len"},
    {&kFp8, "training.precision"},
    {&kDistributedOptimizer, "training.distributed_optimizer"},
    {&kFp32Grads, "training.fp32_gradients"},
    {&kFlashAttention, "training.flash_attention"},
    {&kFp8ParamGather, "training.fp8_param_gather"},
    {&kTpCommOverlap, "training.tp_comm_overlap"},
    {&kCpCommType, "training.cp_comm_type"},
    {&kMoeCapacityFactor, "training.moe_capacity_factor"},
    {&kMoeTokenDispatcher, "training.moe_token_dispatcher"},
    {&kMoeGroupedGemm, "training.moe_grouped_gemm"},
    {&kMoeExpertParallelOverlap, "training.moe_expert_parallel_overlap"},
    {&kMoeSharedExpertOverlap, "training.moe_shared_expert_overlap"},
    {&kFramework, "training.framework"},
    {&kTorchCompile, "training.torch_compile"},
};
// Below ParallelConfig.
constexpr FlagField kConfigurationFields[] = {
    {&kTp, "tensor_parallel"},     {&kPp, "pipeline_parallel"},
    {&kCp, "context_parallel"},    {&kDp, "data_parallel"},
    {&kMbs, "micro_batch_size"},   {&kVp, "virtual_pipeline"},
    {&kRecompute, "recompute"},    {&kSequenceParallel, "sequence_parallel"},
    {&kEp, "expert_parallel"},     {&kEtp, "expert_tensor_parallel"},
    {&kDpSharding, "dp_sharding"}, {&kDpShardGroup, "dp_shard_group"},
};
// Below EstimateRequest.
constexpr FlagField kEstimateMemoryFields[] = {{&kSafeFraction, "safe_memory_fraction"}};
// Below SearchSpec.
constexpr FlagField kSearchSpaceFields[] = {
    {&kMicroBatches, "space.micro_batch_sizes"},
    {&kVirtualPipelineSizes, "space.virtual_pipeline_sizes"},
    {&kExpertParallelSizes, "space.expert_parallel_sizes"},
    {&kExpertTensorParallelSizes, "space.expert_tensor_parallel_sizes"},
    {&kRecomputeModes, "space.recompute_modes"},
    {&kDpShardingModes, "space.dp_sharding_modes"},
    {&kDpShardGroups, "space.dp_shard_groups"},
    {&kAllowTpCpAcrossNodes, "space.allow_tp_cp_across_nodes"},
    {&kAllowUnevenPipeline, "space.allow_uneven_pipeline_stages"},
    {&kMemoryPolicy, "space.memory_policy"},
    {&kSafeFraction, "space.safe_memory_fraction"},
};
constexpr FlagField kPolicyFields[] = {{&kPolicy, "policy"}};
// The settings a search's projected cost depends on besides its policy
// (convert/cost_projection.h).
constexpr FlagField kPolicySettingFields[] = {
    {&kTopK, "top_k"},
    {&kTolerance, "adaptive.tolerance"},
    {&kMaxInFlight, "adaptive.max_in_flight"},
    {&kConfidenceSigmas, "adaptive.confidence_sigmas"},
    {&kMaxConfirmations, "adaptive.max_confirmations"},
    {&kConfirmationStepsFactor, "adaptive.confirmation_steps_factor"},
};
constexpr FlagField kProbeStepFields[] = {
    {&kBackend, "probe.backend"},
    {&kCommandTemplate, "probe.command_template"},
    {&kWarmupSteps, "probe.warmup_steps"},
    {&kTimedSteps, "probe.timed_steps"},
    {&kProbeStartup, "probe.startup_seconds"},
};
constexpr FlagField kBudgetFields[] = {
    {&kMaxProbes, "budget.max_probes"},
    {&kMaxGpuHours, "budget.max_gpu_seconds", 3600, "GPU-seconds"},
    {&kDeadline, "budget.deadline_seconds", 1, "seconds"},
};
constexpr FlagField kProbeRunFields[] = {
    {&kScope, "probe.scope"},
    {&kProbeDeadline, "probe.deadline_seconds"},
    {&kMaxAttempts, "probe.max_attempts"},
    {&kMaxLaunchFailures, "probe.max_launch_failures"},
    {&kSeed, "seed"},
};
// Below PlanRequest.
constexpr FlagField kPlanFields[] = {{&kLimit, "limit"}, {&kExplain}};
// Below CreateSearchRequest.
constexpr FlagField kSubmitFields[] = {
    {&kName, "display_name"}, {&kDryRun}, {&kWatch}, {&kWatchTimeout}, {&kRequireWorkers}};
// Below ListSearchesRequest and ListSearchEventsRequest alike.
constexpr FlagField kPageFields[] = {{&kPageSize, "page_size"}, {&kPageToken, "page_token"}};
constexpr FlagField kServerFields[] = {{&kServer}, {&kTlsCa},     {&kTlsCert},
                                       {&kTlsKey}, {&kTokenFile}, {&kRpcTimeout}};
constexpr FlagField kWatchFields[] = {{&kWatchTimeout}};
constexpr FlagField kExportFields[] = {{&kFormat}, {&kCandidate}};
constexpr FlagField kJsonFields[] = {{&kJson}};
constexpr FlagField kPlanOutputFields[] = {{&kJson}, {&kColor}};

using MessageOf = const google::protobuf::Descriptor* (*)();
constexpr MessageOf kNoMessage = nullptr;
constexpr MessageOf kEstimateRequest = &v1::EstimateRequest::descriptor;
constexpr MessageOf kPlanRequest = &v1::PlanRequest::descriptor;
constexpr MessageOf kCreateSearchRequest = &v1::CreateSearchRequest::descriptor;
constexpr MessageOf kParallelConfig = &v1::ParallelConfig::descriptor;

constexpr FlagGroup kServerGroup = {"Server", kNoMessage, "", kServerFields};
constexpr FlagGroup kJsonGroup = {"Output", kNoMessage, "", kJsonFields};

constexpr FlagGroup kEstimateGroups[] = {
    {"Model", kEstimateRequest, "", kModelFields},
    {"Cluster", kEstimateRequest, "", kClusterFields},
    {"Training", kEstimateRequest, "", kTrainingFields},
    {"Configuration", kEstimateRequest, "config.", kConfigurationFields},
    {"Memory", kEstimateRequest, "", kEstimateMemoryFields},
    kJsonGroup,
};
constexpr FlagGroup kPlanGroups[] = {
    {"Model", kPlanRequest, "spec.", kModelFields},
    {"Cluster", kPlanRequest, "spec.", kClusterFields},
    {"Training", kPlanRequest, "spec.", kTrainingFields},
    {"Search space", kPlanRequest, "spec.", kSearchSpaceFields},
    {"Search settings the projected cost assumes", kPlanRequest, "spec.", kPolicySettingFields},
    {"Search settings the projected cost assumes", kPlanRequest, "spec.", kProbeStepFields},
    {"Plan", kPlanRequest, "", kPlanFields},
    {"Configuration (with --explain)", kParallelConfig, "", kConfigurationFields},
    {"Output", kNoMessage, "", kPlanOutputFields},
};
constexpr FlagGroup kSubmitGroups[] = {
    {"Model", kCreateSearchRequest, "spec.", kModelFields},
    {"Cluster", kCreateSearchRequest, "spec.", kClusterFields},
    {"Training", kCreateSearchRequest, "spec.", kTrainingFields},
    {"Search space", kCreateSearchRequest, "spec.", kSearchSpaceFields},
    {"Search policy", kCreateSearchRequest, "spec.", kPolicyFields},
    {"Search policy", kCreateSearchRequest, "spec.", kPolicySettingFields},
    {"Budget", kCreateSearchRequest, "spec.", kBudgetFields},
    {"Probes", kCreateSearchRequest, "spec.", kProbeStepFields},
    {"Probes", kCreateSearchRequest, "spec.", kProbeRunFields},
    {"Search", kCreateSearchRequest, "", kSubmitFields},
    kServerGroup,
    kJsonGroup,
};
constexpr FlagGroup kWatchGroups[] = {
    {"Watch", kNoMessage, "", kWatchFields}, kServerGroup, kJsonGroup};
constexpr FlagGroup kServerOnlyGroups[] = {kServerGroup, kJsonGroup};
constexpr FlagGroup kListGroups[] = {
    {"Pages", &v1::ListSearchesRequest::descriptor, "", kPageFields}, kServerGroup, kJsonGroup};
constexpr FlagGroup kEventsGroups[] = {
    {"Pages", &v1::ListSearchEventsRequest::descriptor, "", kPageFields}, kServerGroup, kJsonGroup};
constexpr FlagGroup kExportGroups[] = {{"Export", kNoMessage, "", kExportFields}, kServerGroup};

OutputOptions OutputOf(const Invocation& invocation) {
  OutputOptions output;
  output.json = invocation.flags.Bool(kJson);
  output.terminal = invocation.surroundings.stdout_is_terminal;
  output.terminal_columns = invocation.surroundings.terminal_columns;
  return output;
}

// Completes a configuration given by flags: dp derived from the cluster's GPUs when 0, and
// sequence parallelism only where tp > 1 (it shards nothing without TP; the estimator treats
// both the same).
absl::Status CompleteConfiguration(const v1::ClusterSpec& cluster, v1::ParallelConfig& config) {
  const int64_t tp = config.tensor_parallel();
  const int64_t pp = config.pipeline_parallel();
  const int64_t cp = config.context_parallel();
  const int64_t world = cluster.num_nodes() * cluster.gpus_per_node();
  if (config.data_parallel() == 0 && tp > 0 && pp > 0 && cp > 0) {
    if (world % (tp * pp * cp) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          Dashed(kTp), " x ", Dashed(kPp), " x ", Dashed(kCp), " (", tp * pp * cp,
          ") does not divide the GPU count ", Dashed(kNodes), " x ", Dashed(kGpusPerNode), " (",
          world, "), so ", Dashed(kDp), " cannot be derived"));
    }
    config.set_data_parallel(world / (tp * pp * cp));
  }
  config.set_sequence_parallel(config.sequence_parallel() && tp > 1);
  return absl::OkStatus();
}

// A client of the server the flags name, with their credentials.
absl::StatusOr<AutotunerClient> ClientOf(const FlagValues& flags) {
  ClientCredentialsOptions files;
  files.tls_ca = flags.String(kTlsCa);
  files.tls_cert = flags.String(kTlsCert);
  files.tls_key = flags.String(kTlsKey);
  files.token_file = flags.String(kTokenFile);
  PT_ASSIGN_OR_RETURN(auto credentials, LoadClientCredentials(files));
  return AutotunerClient(flags.String(kServer), std::move(credentials),
                         flags.Duration(kRpcTimeout));
}

absl::Status Estimate(const Invocation& invocation, std::ostream& out) {
  v1::EstimateRequest request;
  PT_RETURN_IF_ERROR(SetFlagFields(kEstimateGroups, invocation.flags, request));
  PT_RETURN_IF_ERROR(CompleteConfiguration(request.cluster(), *request.mutable_config()));
  return RunEstimate(request, OutputOf(invocation), out);
}

absl::Status Plan(const Invocation& invocation, std::ostream& out) {
  const Surroundings& surroundings = invocation.surroundings;
  OutputOptions output = OutputOf(invocation);
  output.color = UseColor(static_cast<ColorMode>(invocation.flags.Choice(kColor)),
                          surroundings.stdout_is_terminal, surroundings.environment("NO_COLOR"),
                          surroundings.environment("TERM"));
  v1::PlanRequest request;
  PT_RETURN_IF_ERROR(SetFlagFields(kPlanGroups, invocation.flags, request));
  if (!invocation.flags.Bool(kExplain)) return RunPlan(request, output, out);
  v1::ParallelConfig config;
  PT_RETURN_IF_ERROR(SetFlagFields(kPlanGroups, invocation.flags, config));
  PT_RETURN_IF_ERROR(CompleteConfiguration(request.spec().cluster(), config));
  return RunExplain(request, config, output, out);
}

absl::Status Submit(const Invocation& invocation, std::ostream& out) {
  const FlagValues& flags = invocation.flags;
  v1::CreateSearchRequest request;
  PT_RETURN_IF_ERROR(SetFlagFields(kSubmitGroups, flags, request));
  // The adaptive flags' defaults are the settings of an ADAPTIVE search, which the server
  // refuses with another policy.
  if (request.spec().policy() != v1::ADAPTIVE) request.mutable_spec()->clear_adaptive();
  if (flags.Bool(kDryRun)) return RunDryRun(request, OutputOf(invocation), out);
  // Refused here as the server would refuse it, so that the error names the flag.
  PT_RETURN_IF_ERROR(ValidateCreateSearchRequest(request).status());
  PT_ASSIGN_OR_RETURN(AutotunerClient client, ClientOf(flags));
  SubmitOptions options;
  options.watch = flags.Bool(kWatch);
  options.watch_timeout = flags.Duration(kWatchTimeout);
  options.require_workers = flags.Bool(kRequireWorkers);
  return RunSubmit(client, request, options, OutputOf(invocation), out);
}

absl::Status Watch(const Invocation& invocation, std::ostream& out) {
  PT_ASSIGN_OR_RETURN(AutotunerClient client, ClientOf(invocation.flags));
  return RunWatch(client, invocation.operand, invocation.flags.Duration(kWatchTimeout),
                  OutputOf(invocation), out);
}

absl::Status Get(const Invocation& invocation, std::ostream& out) {
  PT_ASSIGN_OR_RETURN(AutotunerClient client, ClientOf(invocation.flags));
  return RunGet(client, invocation.operand, OutputOf(invocation), out);
}

absl::Status List(const Invocation& invocation, std::ostream& out) {
  v1::ListSearchesRequest request;
  PT_RETURN_IF_ERROR(SetFlagFields(kListGroups, invocation.flags, request));
  PT_ASSIGN_OR_RETURN(AutotunerClient client, ClientOf(invocation.flags));
  return RunList(client, request, OutputOf(invocation), out);
}

absl::Status Cancel(const Invocation& invocation, std::ostream& out) {
  PT_ASSIGN_OR_RETURN(AutotunerClient client, ClientOf(invocation.flags));
  return RunCancel(client, invocation.operand, OutputOf(invocation), out);
}

absl::Status Events(const Invocation& invocation, std::ostream& out) {
  v1::ListSearchEventsRequest request;
  request.set_name(invocation.operand);
  PT_RETURN_IF_ERROR(SetFlagFields(kEventsGroups, invocation.flags, request));
  PT_ASSIGN_OR_RETURN(AutotunerClient client, ClientOf(invocation.flags));
  return RunEvents(client, request, OutputOf(invocation), out);
}

absl::Status Export(const Invocation& invocation, std::ostream& out) {
  PT_ASSIGN_OR_RETURN(AutotunerClient client, ClientOf(invocation.flags));
  return RunExport(client, invocation.operand, invocation.flags.String(kCandidate),
                   static_cast<ExportFormat>(invocation.flags.Choice(kFormat)), out);
}

absl::Status Workers(const Invocation& invocation, std::ostream& out) {
  PT_ASSIGN_OR_RETURN(AutotunerClient client, ClientOf(invocation.flags));
  return RunWorkers(client, OutputOf(invocation), out);
}

constexpr char kSearchName[] = "search name, e.g. searches/1";

constexpr Command kOfflineCommands[] = {
    {"estimate", nullptr, nullptr,
     "memory breakdown, verdict and predicted speed of one configuration\n"
     "  paratune estimate --model=llama3.1-8b --gpu=h100-94gb --nodes=1 \\\n"
     "    --gpus_per_node=4 --tp=2 --cp=1 --pp=1 --mbs=1 --seq_len=8192\n",
     kEstimateGroups, &Estimate},
    {"plan", nullptr, nullptr,
     "the memory map of the valid configurations (micro-batch sizes per tp, cp, pp\n"
     "marked SAFE / RISKY / OOM, coloured on a terminal; --limit bounds its rows and\n"
     "the candidates), the memory-safe ones in predicted order, and what\n"
     "an ADAPTIVE, TOP_K and EXHAUSTIVE search of them would cost in probes, GPU-hours\n"
     "and wall time next to one full training job per candidate; when nothing fits\n"
     "without recompute it searches selective and full recompute too, and when\n"
     "nothing fits at all it lists the changes that give candidates and their flags\n"
     "  paratune plan --model=llama3.1-70b --gpu=h100-80gb --nodes=8\n"
     "--explain says why one configuration is or is not a candidate\n"
     "  paratune plan --model=llama3.1-70b --gpu=h100-80gb --nodes=8 --explain \\\n"
     "    --tp=4 --pp=2 --cp=1 --mbs=2\n",
     kPlanGroups, &Plan},
};

constexpr Command kServerCommands[] = {
    {"submit", nullptr, nullptr,
     "create a search from the same flags as plan (--watch to follow it);\n"
     "--dry_run plans it offline and prints what it would cost, sending nothing.\n"
     "Warns when no live worker can host it (--require_workers refuses instead);\n"
     "exits 1 when the search fails at creation, naming the changes that give\n"
     "candidates (as plan lists them)\n",
     kSubmitGroups, &Submit},
    {"watch", "NAME", kSearchName,
     "follow a search (e.g. searches/1) until it ends: its event log so far, then\n"
     "every change (on a terminal a live view of progress, recent events and the\n"
     "leading candidates, fitted to its width); print the ranked result\n",
     kWatchGroups, &Watch},
    {"get", "NAME", kSearchName, "print a search and its ranked candidates\n", kServerOnlyGroups,
     &Get},
    {"list", nullptr, nullptr,
     "list searches, newest first, with progress, best configuration and TFLOP/s\n", kListGroups,
     &List},
    {"cancel", "NAME", kSearchName, "stop a search; it ends CANCELLED\n", kServerOnlyGroups,
     &Cancel},
    {"events", "NAME", kSearchName,
     "the search's event log, oldest first (kept across server restarts)\n", kEventsGroups,
     &Events},
    {"export", "NAME", kSearchName,
     "the best measured configuration (or --candidate=N) as launch arguments:\n"
     "--format=megatron (default), nemo, json, sbatch, megatron-bridge, torchtitan\n"
     "(command-line options) or torchtitan-toml (the same as a TOML job file);\n"
     "mixture-of-experts models included (nemo and megatron-bridge refuse one with\n"
     "dense layers between its MoE layers; torchtitan takes TorchTitan's llama3\n"
     "flavors only: Llama-3.1 8B, 70B, 405B, and refuses optimizer-only sharding\n"
     "(search with --framework=torchtitan), bf16 gradients, tp without sequence\n"
     "parallelism and unsharded data parallelism beside other parallelism)\n",
     kExportGroups, &Export},
    {"workers", nullptr, nullptr, "list registered workers\n", kServerOnlyGroups, &Workers},
};

constexpr CommandSection kSections[] = {
    {"Offline (the estimator alone, no server):", kOfflineCommands},
    {"Against paratune-server (--server=host:port):", kServerCommands},
};

constexpr char kNotes[] =
    R"(A server with TLS and tokens (docs/operations.md, "Security") needs --tls_ca, --token_file
(unless it binds your client certificate to a principal) and, where it requires client
certificates, --tls_cert and --tls_key, on every command that talks to it; the environment
variables PARATUNE_TLS_CA, PARATUNE_TOKEN_FILE, PARATUNE_TLS_CERT and PARATUNE_TLS_KEY stand
in for flags not given.

Every command but export (--format=json) takes --json to print the API's proto as canonical
JSON. On a terminal, output fits its width (docs/cli.md) and plan's memory map is coloured
(--color, $NO_COLOR). A command refuses the flags of other commands.
Exit status: 0 success, 1 error (the message names the flag or field at fault), 2 no command.
--version prints the version and the git commit the binary was built from.
'paratune help COMMAND' (or 'paratune COMMAND --help') lists the flags of a command.
)";

constexpr CommandSet kParatune = {"paratune",
                                  "find the fastest 4D-parallel configuration for Llama training.",
                                  kSections, kNotes};

}  // namespace

const CommandSet& ParatuneCommands() { return kParatune; }

}  // namespace paratune
