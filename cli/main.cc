// paratune: the command-line client of paratune-server, and an offline estimator.
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "cli/autotuner_client.h"
#include "cli/build_stamp.h"
#include "cli/commands.h"
#include "cli/flag_names.h"
#include "cli/output.h"
#include "cli/terminal.h"
#include "cli/version.h"
#include "common/client_credentials.h"
#include "common/command_line.h"

ABSL_FLAG(std::string, model, "llama3.1-8b",
          "Model preset: llama2-7b, llama2-13b, llama2-70b, llama3.1-8b, llama3.1-70b, "
          "llama3.1-405b, llama3.2-1b, llama3.2-3b. Empty to give --hidden_size etc.");
ABSL_FLAG(int64_t, hidden_size, 0, "Explicit model: hidden size h (with --model=).");
ABSL_FLAG(int64_t, ffn_hidden_size, 0, "Explicit model: SwiGLU inner width f.");
ABSL_FLAG(int64_t, num_layers, 0, "Explicit model: layers L.");
ABSL_FLAG(int64_t, num_heads, 0, "Explicit model: attention heads a.");
ABSL_FLAG(int64_t, num_kv_heads, 0, "Explicit model: key/value heads k.");
ABSL_FLAG(int64_t, vocab_size, 0, "Explicit model: vocabulary size V.");
ABSL_FLAG(bool, tied_embeddings, false, "Explicit model: LM head tied to the embedding.");

ABSL_FLAG(std::string, gpu, "h100-80gb",
          "GPU type: a100-40gb, a100-80gb, h100-80gb, h100-94gb, h200-141gb.");
ABSL_FLAG(int64_t, nodes, 1, "Number of nodes.");
ABSL_FLAG(int64_t, gpus_per_node, 8, "GPUs per node.");

ABSL_FLAG(int64_t, global_batch, 1024, "Global batch size, sequences per optimizer step.");
ABSL_FLAG(int64_t, seq_len, 8192, "Sequence length, tokens.");
ABSL_FLAG(bool, fp8, false, "fp8 GEMMs (bf16 otherwise).");
ABSL_FLAG(bool, distributed_optimizer, true,
          "Megatron distributed optimizer: optimizer states sharded over dp x cp.");
ABSL_FLAG(bool, fp32_grads, true, "fp32 gradients (bf16 when false).");
ABSL_FLAG(bool, flash_attention, true, "FlashAttention.");
ABSL_FLAG(bool, fp8_param_gather, false,
          "With --fp8: keep the linear weights in fp8 and gather them in fp8 (Megatron-LM "
          "--fp8-param-gather); needs --distributed_optimizer.");
ABSL_FLAG(bool, tp_comm_overlap, false,
          "Overlap tensor-parallel communication with the GEMMs (Megatron-LM "
          "--tp-comm-overlap, Transformer Engine userbuffers) where tp > 1, which then needs "
          "sequence parallelism. Not exportable as NeMo recipe overrides.");
ABSL_FLAG(std::string, cp_comm_type, "p2p",
          "How context-parallel ranks exchange keys and values where cp > 1 (Megatron-LM "
          "--cp-comm-type): p2p (the ring, overlapped with attention) or all_gather (one "
          "all-gather before attention, not overlapped).");

ABSL_FLAG(int64_t, tp, 1, "estimate, plan --explain: tensor-parallel size.");
ABSL_FLAG(int64_t, pp, 1, "estimate, plan --explain: pipeline-parallel size.");
ABSL_FLAG(int64_t, cp, 1, "estimate, plan --explain: context-parallel size.");
ABSL_FLAG(int64_t, dp, 0,
          "estimate, plan --explain: data-parallel size; 0 derives it as GPUs / (tp x pp x cp).");
ABSL_FLAG(int64_t, mbs, 1, "estimate, plan --explain: micro-batch size.");
ABSL_FLAG(int64_t, vp, 1,
          "estimate, plan --explain: virtual pipeline stages per rank (interleaving).");
ABSL_FLAG(std::string, recompute, "none",
          "estimate, plan --explain: activation recompute: none, selective, full.");
ABSL_FLAG(bool, sequence_parallel, true,
          "estimate, plan --explain: sequence parallelism with TP (ignored when tp is 1).");

ABSL_FLAG(double, safe_fraction, 0.80,
          "Memory fraction of capacity below which a configuration is SAFE.");
ABSL_FLAG(std::vector<std::string>, micro_batches, {},
          "plan/submit: micro-batch sizes to try (comma list); default 1,2,4,8,16.");
ABSL_FLAG(std::vector<std::string>, virtual_pipeline_sizes, {},
          "plan/submit: virtual pipeline sizes to try (comma list), v > 1 where pp > 1; "
          "default 1.");
ABSL_FLAG(std::vector<std::string>, recompute_modes, {},
          "plan/submit: recompute modes to try (comma list of none, selective, full); "
          "default none.");
ABSL_FLAG(bool, allow_tp_cp_across_nodes, false, "plan/submit: let tp x cp span nodes.");
ABSL_FLAG(bool, allow_uneven_pipeline, false,
          "plan/submit: allow pp x vp not dividing the layers (first and last stage one layer "
          "short, as Megatron-LM's account-for-embedding/loss split).");
ABSL_FLAG(std::string, memory_policy, "",
          "plan/submit: which configurations the memory estimate lets a search probe: "
          "measure_risky (the default: RISKY ones too, above --safe_fraction of GPU memory; "
          "a probe measures whether they fit) or safe_only (the 80% rule: SAFE ones only).");
ABSL_FLAG(int64_t, limit, 20,
          "plan: candidates and memory-map rows shown (the rows holding the best predicted "
          "candidates); 0 shows all.");
ABSL_FLAG(bool, explain, false,
          "plan: instead of the plan, say why the configuration of --tp, --pp, --cp, --dp, "
          "--mbs, --vp, --recompute and --sequence_parallel is or is not a candidate.");

ABSL_FLAG(std::string, policy, "adaptive",
          "submit: search policy: adaptive (probe in order of the search's refitted model, "
          "stop when nothing left can beat the best measured), top_k or exhaustive.");
ABSL_FLAG(int64_t, top_k, 8, "submit: candidates probed by the top_k policy.");
ABSL_FLAG(double, tolerance, 0.02,
          "submit (adaptive): stop when no unprobed candidate's optimistic prediction beats the "
          "best measured by more than this fraction.");
ABSL_FLAG(int64_t, max_in_flight, 2, "submit (adaptive): probes of the search running at once.");
ABSL_FLAG(double, confidence_sigmas, 2,
          "submit (adaptive): width of the optimistic prediction, predicted x exp(sigmas x the "
          "model's relative error), that an unprobed candidate must beat the best measured "
          "with; in (0, 10].");
ABSL_FLAG(int64_t, max_confirmations, 2,
          "submit (adaptive): leaders re-probed longer when their short probes cannot be told "
          "apart; 0 turns confirmation off. At most 16.");
ABSL_FLAG(int64_t, confirmation_steps_factor, 4,
          "submit (adaptive): a confirmation runs this many times --timed_steps; 2 .. 100.");
ABSL_FLAG(int64_t, max_probes, 0, "submit: budget of probes started; 0 means no limit.");
ABSL_FLAG(double, max_gpu_hours, 0,
          "submit: budget of GPU-hours (wall time x GPUs of finished probes); 0 means no "
          "limit.");
ABSL_FLAG(absl::Duration, deadline, absl::ZeroDuration(),
          "submit: wall-clock limit of the search from its creation, e.g. 2h; running probes "
          "are stopped then. 0 means no limit.");
ABSL_FLAG(std::string, backend, "sim",
          "submit: probe backend the workers use: sim, replay, command or cuda.");
ABSL_FLAG(std::string, command_template, "",
          "submit: with --backend=command, the name of a launch template the workers define "
          "in their config files.");
ABSL_FLAG(std::string, scope, "auto",
          "submit: probe scope: full (every rank), replica (one data-parallel replica, DP "
          "traffic modelled) or auto (full when live workers of the search's GPU type can "
          "host every node of the cluster at once, one worker per node).");
ABSL_FLAG(int64_t, warmup_steps, 2, "submit: untimed steps per probe.");
ABSL_FLAG(int64_t, timed_steps, 5,
          "submit: timed steps per probe (at each micro-batch count of a short probe).");
ABSL_FLAG(double, probe_deadline, 0,
          "submit: wall-clock limit of each probe, seconds; 0 lets the server derive each "
          "probe's from its predicted duration (docs/short_probes.md). At most 86,400.");
ABSL_FLAG(double, probe_startup, 0,
          "submit: seconds one launch of a probe spends before its first step, for its "
          "predicted duration, derived deadline and projected cost; 0 means the backend's "
          "(120 for command templates, which launch once per short-step count; 30 otherwise). "
          "At most 3,600. Results report the start-up they measured.");
ABSL_FLAG(int64_t, max_attempts, 2,
          "submit: attempts a probe gets when it fails with an infrastructure error or loses "
          "its worker; 0 means the server's default, 2. At most 100.");
ABSL_FLAG(int64_t, max_launch_failures, 0,
          "submit: stop the search FAILED once this many launches in a row (Slurm jobs for its "
          "probes, on a server with --launcher=slurm) were refused with the same message; 0 "
          "means the server's default, 3. At most 1,000.");
ABSL_FLAG(uint64_t, seed, 1, "submit: seed of the sim backend's noise.");
ABSL_FLAG(std::string, name, "", "submit: display name of the search.");
ABSL_FLAG(bool, watch, false, "submit: follow the search until it ends, then print the result.");
ABSL_FLAG(bool, dry_run, false,
          "submit: plan the search offline, as plan does, and print what it would cost with "
          "its policy; contacts no server.");

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "Address of paratune-server, host:port.");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM file of the CA that signed paratune-server's certificate; talks TLS to the "
          "server when set (required by --tls_cert and --token_file). Default: "
          "$PARATUNE_TLS_CA.");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM file of your client certificate, for a server that requires one (mutual TLS). "
          "With --tls_key. Default: $PARATUNE_TLS_CERT.");
ABSL_FLAG(std::string, tls_key, "",
          "PEM file of the private key of --tls_cert. Default: $PARATUNE_TLS_KEY.");
ABSL_FLAG(std::string, token_file, "",
          "File holding your bearer token (a client or admin token of the server's "
          "--token_file) alone on one line, sent with every call; a file, so that the token "
          "never shows in `ps` or the shell's history. Default: $PARATUNE_TOKEN_FILE.");
ABSL_FLAG(absl::Duration, rpc_timeout, absl::Seconds(30), "Deadline of each RPC.");
ABSL_FLAG(absl::Duration, watch_timeout, absl::Hours(24), "Longest time to watch a search.");
ABSL_FLAG(int64_t, page_size, 0,
          "list/events: searches or events per page; 0 means the server's default (50 "
          "searches, 100 events).");
ABSL_FLAG(std::string, page_token, "", "list/events: page token from a previous page.");
ABSL_FLAG(bool, json, false, "Print the result as the proto's canonical JSON.");
ABSL_FLAG(std::string, color, "auto",
          "Colour the output (the memory map of plan): auto (when stdout is a terminal, "
          "$NO_COLOR is unset or empty and $TERM is not dumb), always or never.");
ABSL_FLAG(std::string, format, "megatron", "export: megatron, nemo, json or sbatch.");
ABSL_FLAG(std::string, candidate, "",
          "export: the candidate to export, n or searches/ID/candidates/n; the best measured "
          "when empty.");

namespace {

constexpr char kUsage[] = R"(find the fastest 4D-parallel configuration for Llama training.

Usage: paratune COMMAND [flags]

Offline (the estimator alone, no server):
  estimate   memory breakdown, verdict and predicted speed of one configuration
               paratune estimate --model=llama3.1-8b --gpu=h100-94gb --nodes=1 \
                 --gpus_per_node=4 --tp=2 --cp=1 --pp=1 --mbs=1 --seq_len=8192
  plan       the memory map of the valid configurations (micro-batch sizes per tp, cp, pp
             marked SAFE / RISKY / OOM, coloured on a terminal; --limit bounds its rows and
             the candidates), the memory-safe ones in predicted order, and what
             an ADAPTIVE, TOP_K and EXHAUSTIVE search of them would cost in probes, GPU-hours
             and wall time next to one full training job per candidate
               paratune plan --model=llama3.1-70b --gpu=h100-80gb --nodes=8
             --explain says why one configuration is or is not a candidate
               paratune plan --model=llama3.1-70b --gpu=h100-80gb --nodes=8 --explain \
                 --tp=4 --pp=2 --cp=1 --mbs=2

Against paratune-server (--server=host:port):
  submit     create a search from the same flags as plan (--watch to follow it);
             --dry_run plans it offline and prints what it would cost, sending nothing
  watch NAME follow a search (e.g. searches/1) until it ends: its event log so far, then
             every change (on a terminal a live view of progress, recent events and the
             leading candidates, fitted to its width); print the ranked result
  get NAME   print a search and its ranked candidates
  list       list searches, newest first, with progress, best configuration and TFLOP/s
  cancel NAME
  events NAME
             the search's event log, oldest first (kept across server restarts)
  export NAME
             the best measured configuration (or --candidate=N) as launch arguments:
             --format=megatron (default), nemo, json or sbatch
  workers    list registered workers

A server with TLS and tokens (docs/operations.md, "Security") needs --tls_ca, --token_file
(unless it binds your client certificate to a principal) and, where it requires client
certificates, --tls_cert and --tls_key, on every command that talks to it; the environment
variables PARATUNE_TLS_CA, PARATUNE_TOKEN_FILE, PARATUNE_TLS_CERT and PARATUNE_TLS_KEY stand
in for flags not given.

Every command takes --json to print the API's proto as canonical JSON. On a terminal, output
fits its width (docs/cli.md) and plan's memory map is coloured (--color, $NO_COLOR).
Exit status: 0 success, 1 error (the message names the flag or field at fault), 2 bad usage.
--version prints the version and the git commit the binary was built from.
The flags of every command follow; 'paratune --helpfull' adds Abseil's own.)";

// A credentials flag's value; when it is empty, the environment variable's (or empty).
std::string FlagOrEnvironment(const absl::Flag<std::string>& flag, const char* variable) {
  std::string value = absl::GetFlag(flag);
  if (value.empty()) {
    const char* from_environment = std::getenv(variable);
    if (from_environment != nullptr) value = from_environment;
  }
  return value;
}

paratune::v1::ModelSpec ModelFromFlags() {
  paratune::v1::ModelSpec model;
  model.set_preset(absl::GetFlag(FLAGS_model));
  model.set_hidden_size(absl::GetFlag(FLAGS_hidden_size));
  model.set_ffn_hidden_size(absl::GetFlag(FLAGS_ffn_hidden_size));
  model.set_num_layers(absl::GetFlag(FLAGS_num_layers));
  model.set_num_attention_heads(absl::GetFlag(FLAGS_num_heads));
  model.set_num_kv_heads(absl::GetFlag(FLAGS_num_kv_heads));
  model.set_vocab_size(absl::GetFlag(FLAGS_vocab_size));
  model.set_tied_embeddings(absl::GetFlag(FLAGS_tied_embeddings));
  return model;
}

// `text` of the flag called `flag` as a context-parallel communication type.
absl::StatusOr<paratune::v1::CpCommType> ParseCpCommType(const char* flag,
                                                         const std::string& text) {
  const std::string value = absl::AsciiStrToLower(text);
  if (value == "p2p") return paratune::v1::CP_COMM_TYPE_P2P;
  if (value == "all_gather") return paratune::v1::CP_COMM_TYPE_ALL_GATHER;
  return absl::InvalidArgumentError(
      absl::StrCat(flag, " (\"", text, "\") must be p2p or all_gather"));
}

absl::StatusOr<paratune::v1::TrainingSpec> TrainingFromFlags() {
  paratune::v1::TrainingSpec training;
  training.set_global_batch_size(absl::GetFlag(FLAGS_global_batch));
  training.set_seq_len(absl::GetFlag(FLAGS_seq_len));
  training.set_precision(absl::GetFlag(FLAGS_fp8) ? paratune::v1::FP8 : paratune::v1::BF16);
  training.set_distributed_optimizer(absl::GetFlag(FLAGS_distributed_optimizer));
  training.set_fp32_gradients(absl::GetFlag(FLAGS_fp32_grads));
  training.set_flash_attention(absl::GetFlag(FLAGS_flash_attention));
  training.set_fp8_param_gather(absl::GetFlag(FLAGS_fp8_param_gather));
  training.set_tp_comm_overlap(absl::GetFlag(FLAGS_tp_comm_overlap));
  auto cp_comm_type = ParseCpCommType("--cp_comm_type", absl::GetFlag(FLAGS_cp_comm_type));
  if (!cp_comm_type.ok()) return cp_comm_type.status();
  training.set_cp_comm_type(*cp_comm_type);
  return training;
}

paratune::v1::ClusterSpec ClusterFromFlags() {
  paratune::v1::ClusterSpec cluster;
  cluster.mutable_gpu()->set_type(absl::GetFlag(FLAGS_gpu));
  cluster.set_num_nodes(absl::GetFlag(FLAGS_nodes));
  cluster.set_gpus_per_node(absl::GetFlag(FLAGS_gpus_per_node));
  return cluster;
}

// `text` of the flag called `flag` as a recompute mode.
absl::StatusOr<paratune::v1::Recompute> ParseRecompute(const char* flag, const std::string& text) {
  const std::string value = absl::AsciiStrToLower(text);
  if (value == "none") return paratune::v1::RECOMPUTE_NONE;
  if (value == "selective") return paratune::v1::RECOMPUTE_SELECTIVE;
  if (value == "full") return paratune::v1::RECOMPUTE_FULL;
  return absl::InvalidArgumentError(
      absl::StrCat(flag, " (\"", text, "\") must be none, selective or full"));
}

// Each entry of the comma-list flag called `flag` as an integer.
absl::StatusOr<std::vector<int64_t>> ParseIntegers(const char* flag,
                                                   const std::vector<std::string>& texts) {
  std::vector<int64_t> values;
  for (const std::string& text : texts) {
    int64_t value = 0;
    if (!absl::SimpleAtoi(text, &value)) {
      return absl::InvalidArgumentError(absl::StrCat(flag, ": \"", text, "\" is not an integer"));
    }
    values.push_back(value);
  }
  return values;
}

absl::StatusOr<paratune::v1::ParallelConfig> ParallelConfigFromFlags() {
  paratune::v1::ParallelConfig config;
  const int64_t tp = absl::GetFlag(FLAGS_tp);
  const int64_t pp = absl::GetFlag(FLAGS_pp);
  const int64_t cp = absl::GetFlag(FLAGS_cp);
  int64_t dp = absl::GetFlag(FLAGS_dp);
  const int64_t world = absl::GetFlag(FLAGS_nodes) * absl::GetFlag(FLAGS_gpus_per_node);
  if (dp == 0 && tp > 0 && pp > 0 && cp > 0) {
    if (world % (tp * pp * cp) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--tp x --pp x --cp (", tp * pp * cp, ") does not divide the GPU count --nodes x ",
          "--gpus_per_node (", world, "), so --dp cannot be derived"));
    }
    dp = world / (tp * pp * cp);
  }
  config.set_data_parallel(dp);
  config.set_tensor_parallel(tp);
  config.set_pipeline_parallel(pp);
  config.set_context_parallel(cp);
  config.set_micro_batch_size(absl::GetFlag(FLAGS_mbs));
  config.set_virtual_pipeline(absl::GetFlag(FLAGS_vp));
  // Sequence parallelism shards nothing without TP; the estimator treats both the same.
  config.set_sequence_parallel(absl::GetFlag(FLAGS_sequence_parallel) && tp > 1);
  auto recompute = ParseRecompute("--recompute", absl::GetFlag(FLAGS_recompute));
  if (!recompute.ok()) return recompute.status();
  config.set_recompute(*recompute);
  return config;
}

absl::StatusOr<paratune::v1::EstimateRequest> EstimateRequestFromFlags() {
  paratune::v1::EstimateRequest request;
  *request.mutable_model() = ModelFromFlags();
  auto training = TrainingFromFlags();
  if (!training.ok()) return training.status();
  *request.mutable_training() = *training;
  *request.mutable_cluster() = ClusterFromFlags();
  auto config = ParallelConfigFromFlags();
  if (!config.ok()) return config.status();
  *request.mutable_config() = *config;
  request.set_safe_memory_fraction(absl::GetFlag(FLAGS_safe_fraction));
  return request;
}

absl::StatusOr<paratune::v1::SearchSpec> SearchSpecFromFlags() {
  paratune::v1::SearchSpec spec;
  *spec.mutable_model() = ModelFromFlags();
  auto training = TrainingFromFlags();
  if (!training.ok()) return training.status();
  *spec.mutable_training() = *training;
  *spec.mutable_cluster() = ClusterFromFlags();
  paratune::v1::SearchSpace& space = *spec.mutable_space();
  auto micro_batches = ParseIntegers("--micro_batches", absl::GetFlag(FLAGS_micro_batches));
  if (!micro_batches.ok()) return micro_batches.status();
  for (int64_t value : *micro_batches) space.add_micro_batch_sizes(value);
  auto virtual_sizes =
      ParseIntegers("--virtual_pipeline_sizes", absl::GetFlag(FLAGS_virtual_pipeline_sizes));
  if (!virtual_sizes.ok()) return virtual_sizes.status();
  for (int64_t value : *virtual_sizes) space.add_virtual_pipeline_sizes(value);
  for (const std::string& text : absl::GetFlag(FLAGS_recompute_modes)) {
    auto mode = ParseRecompute("--recompute_modes", text);
    if (!mode.ok()) return mode.status();
    space.add_recompute_modes(*mode);
  }
  space.set_allow_tp_cp_across_nodes(absl::GetFlag(FLAGS_allow_tp_cp_across_nodes));
  space.set_allow_uneven_pipeline_stages(absl::GetFlag(FLAGS_allow_uneven_pipeline));
  space.set_safe_memory_fraction(absl::GetFlag(FLAGS_safe_fraction));
  const std::string memory_policy = absl::AsciiStrToLower(absl::GetFlag(FLAGS_memory_policy));
  if (memory_policy == "safe_only") {
    space.set_memory_policy(paratune::v1::SAFE_ONLY);
  } else if (memory_policy == "measure_risky") {
    space.set_memory_policy(paratune::v1::MEASURE_RISKY);
  } else if (!memory_policy.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--memory_policy (\"", memory_policy,
                                                   "\") must be measure_risky or safe_only"));
  }
  const std::string policy = absl::AsciiStrToLower(absl::GetFlag(FLAGS_policy));
  if (policy == "top_k") {
    spec.set_policy(paratune::v1::TOP_K);
  } else if (policy == "exhaustive") {
    spec.set_policy(paratune::v1::EXHAUSTIVE);
  } else if (policy == "adaptive") {
    spec.set_policy(paratune::v1::ADAPTIVE);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--policy (\"", policy, "\") must be adaptive, top_k or exhaustive"));
  }
  spec.set_top_k(absl::GetFlag(FLAGS_top_k));
  if (spec.policy() == paratune::v1::ADAPTIVE) {
    paratune::v1::AdaptiveSettings& adaptive = *spec.mutable_adaptive();
    adaptive.set_tolerance(absl::GetFlag(FLAGS_tolerance));
    adaptive.set_max_in_flight(absl::GetFlag(FLAGS_max_in_flight));
    adaptive.set_confidence_sigmas(absl::GetFlag(FLAGS_confidence_sigmas));
    adaptive.set_max_confirmations(absl::GetFlag(FLAGS_max_confirmations));
    adaptive.set_confirmation_steps_factor(absl::GetFlag(FLAGS_confirmation_steps_factor));
  }
  paratune::v1::SearchBudget& budget = *spec.mutable_budget();
  budget.set_max_probes(absl::GetFlag(FLAGS_max_probes));
  budget.set_max_gpu_seconds(absl::GetFlag(FLAGS_max_gpu_hours) * 3600);
  budget.set_deadline_seconds(absl::ToDoubleSeconds(absl::GetFlag(FLAGS_deadline)));
  spec.mutable_probe()->set_backend(absl::GetFlag(FLAGS_backend));
  spec.mutable_probe()->set_command_template(absl::GetFlag(FLAGS_command_template));
  const std::string scope = absl::AsciiStrToLower(absl::GetFlag(FLAGS_scope));
  if (scope == "full") {
    spec.mutable_probe()->set_scope(paratune::v1::PROBE_SCOPE_FULL);
  } else if (scope == "replica") {
    spec.mutable_probe()->set_scope(paratune::v1::PROBE_SCOPE_REPLICA);
  } else if (scope != "auto") {
    return absl::InvalidArgumentError(
        absl::StrCat("--scope (\"", scope, "\") must be full, replica or auto"));
  }
  spec.mutable_probe()->set_warmup_steps(absl::GetFlag(FLAGS_warmup_steps));
  spec.mutable_probe()->set_timed_steps(absl::GetFlag(FLAGS_timed_steps));
  spec.mutable_probe()->set_deadline_seconds(absl::GetFlag(FLAGS_probe_deadline));
  spec.mutable_probe()->set_startup_seconds(absl::GetFlag(FLAGS_probe_startup));
  spec.mutable_probe()->set_max_attempts(absl::GetFlag(FLAGS_max_attempts));
  spec.mutable_probe()->set_max_launch_failures(absl::GetFlag(FLAGS_max_launch_failures));
  spec.set_seed(absl::GetFlag(FLAGS_seed));
  return spec;
}

absl::StatusOr<paratune::v1::CreateSearchRequest> CreateSearchRequestFromFlags() {
  auto spec = SearchSpecFromFlags();
  if (!spec.ok()) return spec.status();
  paratune::v1::CreateSearchRequest request;
  *request.mutable_spec() = *spec;
  request.set_display_name(absl::GetFlag(FLAGS_name));
  return request;
}

// The one positional argument of watch/get/cancel/events/export.
absl::StatusOr<std::string> SearchName(const std::vector<char*>& args) {
  if (args.size() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat(args[1], " takes one search name, e.g. searches/1"));
  }
  return std::string(args[2]);
}

absl::Status RunCommand(const std::vector<char*>& args, const paratune::OutputOptions& output) {
  const std::string command = args[1];
  if (command == "estimate" || command == "plan") {
    if (args.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat(command, " takes flags only, not \"", args[2], "\""));
    }
    if (command == "estimate") {
      auto request = EstimateRequestFromFlags();
      if (!request.ok()) return request.status();
      return paratune::RunEstimate(*request, output, std::cout);
    }
    auto spec = SearchSpecFromFlags();
    if (!spec.ok()) return spec.status();
    paratune::v1::PlanRequest request;
    *request.mutable_spec() = *spec;
    request.set_limit(absl::GetFlag(FLAGS_limit));
    if (absl::GetFlag(FLAGS_explain)) {
      auto config = ParallelConfigFromFlags();
      if (!config.ok()) return config.status();
      return paratune::RunExplain(request, *config, output, std::cout);
    }
    return paratune::RunPlan(request, output, std::cout);
  }
  if (command == "submit" && absl::GetFlag(FLAGS_dry_run)) {
    auto request = CreateSearchRequestFromFlags();
    if (!request.ok()) return request.status();
    return paratune::RunDryRun(*request, output, std::cout);
  }

  paratune::ClientCredentialsOptions credential_files;
  credential_files.tls_ca = FlagOrEnvironment(FLAGS_tls_ca, "PARATUNE_TLS_CA");
  credential_files.tls_cert = FlagOrEnvironment(FLAGS_tls_cert, "PARATUNE_TLS_CERT");
  credential_files.tls_key = FlagOrEnvironment(FLAGS_tls_key, "PARATUNE_TLS_KEY");
  credential_files.token_file = FlagOrEnvironment(FLAGS_token_file, "PARATUNE_TOKEN_FILE");
  auto credentials = paratune::LoadClientCredentials(credential_files);
  if (!credentials.ok()) return credentials.status();
  paratune::AutotunerClient client(absl::GetFlag(FLAGS_server), *std::move(credentials),
                                   absl::GetFlag(FLAGS_rpc_timeout));
  const absl::Duration watch_timeout = absl::GetFlag(FLAGS_watch_timeout);
  if (command == "submit") {
    auto request = CreateSearchRequestFromFlags();
    if (!request.ok()) return request.status();
    return paratune::RunSubmit(client, *request, absl::GetFlag(FLAGS_watch), watch_timeout, output,
                               std::cout);
  }
  if (command == "list") {
    paratune::v1::ListSearchesRequest request;
    request.set_page_size(absl::GetFlag(FLAGS_page_size));
    request.set_page_token(absl::GetFlag(FLAGS_page_token));
    return paratune::RunList(client, request, output, std::cout);
  }
  if (command == "workers") return paratune::RunWorkers(client, output, std::cout);
  if (command == "watch" || command == "get" || command == "cancel" || command == "events" ||
      command == "export") {
    auto name = SearchName(args);
    if (!name.ok()) return name.status();
    if (command == "export") {
      auto format = paratune::ParseExportFormat(absl::GetFlag(FLAGS_format));
      if (!format.ok()) return format.status();
      return paratune::RunExport(client, *name, absl::GetFlag(FLAGS_candidate), *format, std::cout);
    }
    if (command == "events") {
      paratune::v1::ListSearchEventsRequest request;
      request.set_name(*name);
      request.set_page_size(absl::GetFlag(FLAGS_page_size));
      request.set_page_token(absl::GetFlag(FLAGS_page_token));
      return paratune::RunEvents(client, request, output, std::cout);
    }
    if (command == "watch")
      return paratune::RunWatch(client, *name, watch_timeout, output, std::cout);
    if (command == "get") return paratune::RunGet(client, *name, output, std::cout);
    return paratune::RunCancel(client, *name, output, std::cout);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown command \"", command, "\"; run 'paratune --help'"));
}

// RunCommand, its errors naming the flags that set the request's fields where the request
// was built from flags (cli/flag_names.h).
absl::Status Run(const std::vector<char*>& args, const paratune::OutputOptions& output) {
  const std::string command = args[1];
  const absl::Status status = RunCommand(args, output);
  if (command != "estimate" && command != "plan" && command != "submit") return status;
  return paratune::NameFlags(status, /*explicit_model=*/absl::GetFlag(FLAGS_model).empty());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args = paratune::ParseFlags(argc, argv, kUsage, "cli/main.cc",
                                                 paratune::VersionLine(paratune::BuildCommit()));
  if (args.size() < 2) {
    std::cerr << "paratune: " << kUsage << "\n";
    return 2;
  }
  paratune::OutputOptions output;
  output.json = absl::GetFlag(FLAGS_json);
  output.terminal = isatty(STDOUT_FILENO) != 0;
  winsize size{};
  const int ioctl_columns =
      output.terminal && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 ? size.ws_col : 0;
  output.terminal_columns = paratune::TerminalColumns(ioctl_columns, std::getenv("COLUMNS"));
  absl::StatusOr<paratune::ColorMode> color = paratune::ParseColorMode(absl::GetFlag(FLAGS_color));
  absl::Status status = color.status();
  if (status.ok()) {
    output.color =
        paratune::UseColor(*color, output.terminal, std::getenv("NO_COLOR"), std::getenv("TERM"));
    status = Run(args, output);
  }
  if (!status.ok()) {
    std::cerr << "paratune: " << absl::StatusCodeToString(status.code()) << ": " << status.message()
              << "\n";
    return 1;
  }
  return 0;
}
