#include "convert/search_text.h"

#include <cstring>
#include <functional>
#include <map>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace paratune {
namespace {

// Hosts of a probe that DescribeRanOn names one by one; a larger gang ends with a summary.
constexpr int kMaxHostsNamed = 4;

// "workers/3 (sim-node-1, 8 x h100-80gb, ranks 0-7)".
std::string DescribeHost(const v1::ProbeHost& host) {
  std::vector<std::string> parts;
  if (!host.hostname().empty()) parts.push_back(host.hostname());
  parts.push_back(DescribeGpus(host.num_ranks(), host.gpu_type(), host.gpu_name()));
  parts.push_back(DescribeRanks(host.first_rank(), host.num_ranks()));
  return absl::StrCat(host.worker(), " (", absl::StrJoin(parts, ", "), ")");
}

}  // namespace

std::string DescribeRanks(int64_t first, int64_t count) {
  if (count == 1) return absl::StrCat("rank ", first);
  return absl::StrCat("ranks ", first, "-", first + count - 1);
}

namespace {

// Which parts of a configuration DescribeConfigParts writes; vp, sp and recompute only where
// they are not the default, as DescribeConfig says.
struct ConfigParts {
  bool data_parallel = true;
  bool micro_batch = true;
  bool virtual_pipeline = true;
  bool recompute = true;
};

std::string DescribeConfigParts(const v1::ParallelConfig& config, const ConfigParts& parts) {
  std::vector<std::string> text;
  if (parts.data_parallel) text.push_back(absl::StrCat("dp", config.data_parallel()));
  text.push_back(absl::StrCat("tp", config.tensor_parallel()));
  text.push_back(absl::StrCat("pp", config.pipeline_parallel()));
  text.push_back(absl::StrCat("cp", config.context_parallel()));
  if (parts.micro_batch) text.push_back(absl::StrCat("mbs", config.micro_batch_size()));
  if (parts.virtual_pipeline && config.virtual_pipeline() > 1) {
    text.push_back(absl::StrCat("vp", config.virtual_pipeline()));
  }
  // Expert parallelism where not the default, which only a mixture-of-experts model's
  // configurations leave (the rules refuse it for a dense model).
  if (config.expert_parallel() > 1) text.push_back(absl::StrCat("ep", config.expert_parallel()));
  if (config.expert_tensor_parallel() != 0 &&
      config.expert_tensor_parallel() != config.tensor_parallel()) {
    text.push_back(absl::StrCat("etp", config.expert_tensor_parallel()));
  }
  // Sequence parallelism only means something alongside TP.
  if (config.tensor_parallel() > 1 && config.has_sequence_parallel() &&
      !config.sequence_parallel()) {
    text.push_back("sp=off");
  }
  if (parts.recompute && config.recompute() == v1::RECOMPUTE_SELECTIVE) {
    text.push_back("recompute=selective");
  } else if (parts.recompute && config.recompute() == v1::RECOMPUTE_FULL) {
    text.push_back("recompute=full");
  }
  // Data-parallel sharding where not Megatron-LM's distributed optimizer (or unset, stored
  // before sharding was a dimension), as ParallelConfig::ToString writes it.
  if (config.dp_sharding() != v1::DP_SHARDING_UNSPECIFIED &&
      config.dp_sharding() != v1::DP_SHARDING_OPTIMIZER) {
    text.push_back(absl::StrCat(
        "dp_sharding=", absl::AsciiStrToLower(absl::StripPrefix(
                            v1::DataParallelSharding_Name(config.dp_sharding()), "DP_SHARDING_"))));
  }
  if (config.dp_shard_group() > 0) {
    text.push_back(absl::StrCat("dp_shard_group=", config.dp_shard_group()));
  }
  return absl::StrJoin(text, " ");
}

}  // namespace

std::string DescribeConfig(const v1::ParallelConfig& config) {
  return DescribeConfigParts(config, ConfigParts());
}

std::string DescribeConfigApart(const v1::ParallelConfig& config, const v1::SearchSpace& space) {
  ConfigParts parts;
  // The search's GPUs over tp x pp x cp: the other parts fix it.
  parts.data_parallel = false;
  // An empty list tries several micro-batch sizes (proto/search.proto, SearchSpace).
  parts.micro_batch = space.micro_batch_sizes_size() != 1;
  parts.virtual_pipeline = space.virtual_pipeline_sizes_size() > 1;
  parts.recompute = space.recompute_modes_size() > 1;
  return DescribeConfigParts(config, parts);
}

std::string RecomputeModeName(v1::Recompute mode) {
  // RECOMPUTE_NONE -> "none".
  return absl::AsciiStrToLower(v1::Recompute_Name(mode).substr(strlen("RECOMPUTE_")));
}

std::string DescribeFleet(const std::vector<const v1::Worker*>& workers) {
  if (workers.empty()) return "none";
  // (GPUs, type, backends) -> workers; largest first.
  std::map<std::tuple<int64_t, std::string, std::string>, int64_t, std::greater<>> groups;
  for (const v1::Worker* worker : workers) {
    const std::string type =
        DescribeGpuType(worker->gpu_type(), worker->gpus().empty() ? "" : worker->gpus(0).name());
    ++groups[{worker->gpus_size(), type, absl::StrJoin(worker->backends(), ", ")}];
  }
  std::vector<std::string> parts;
  for (const auto& [what, count] : groups) {
    const auto& [gpus, type, backends] = what;
    parts.push_back(absl::StrCat(count, " x ", gpus, " ", type, " (", backends, ")"));
  }
  return absl::StrJoin(parts, ", ");
}

std::string DescribePlanAdvice(const v1::PlanAdvice& advice) {
  std::string change;
  switch (advice.kind()) {
    case v1::ADVICE_RECOMPUTE: {
      std::vector<std::string> modes;
      for (int mode : advice.recompute_modes()) {
        modes.push_back(RecomputeModeName(static_cast<v1::Recompute>(mode)));
      }
      change = absl::StrCat("recompute modes ", absl::StrJoin(modes, ", "));
      break;
    }
    case v1::ADVICE_NODES:
      change = absl::StrCat(advice.num_nodes(), " nodes");
      break;
    case v1::ADVICE_GPU_TYPE:
      change = absl::StrCat(advice.gpu_type(), " GPUs");
      break;
    case v1::ADVICE_FP8_PARAMETERS:
      change = "fp8 with fp8 weights (fp8_param_gather)";
      break;
    case v1::ADVICE_SEQUENCE_LENGTH:
      change = absl::StrCat("sequence ", advice.seq_len());
      break;
    case v1::ADVICE_MICRO_BATCH_SIZES:
      change = absl::StrCat("micro-batch sizes ", absl::StrJoin(advice.micro_batch_sizes(), ", "));
      break;
    default:
      change = "an unknown change";
      break;
  }
  return absl::StrCat(change, ": ", advice.candidates(),
                      advice.candidates() == 1 ? " candidate" : " candidates");
}

std::string DescribeOutcome(v1::ProbeOutcome outcome) {
  switch (outcome) {
    case v1::PROBE_OK:
      return "ok";
    case v1::PROBE_OUT_OF_MEMORY:
      return "out of memory";
    case v1::PROBE_TIMEOUT:
      return "timeout";
    case v1::PROBE_CRASH:
      return "crash";
    case v1::PROBE_INFRA_ERROR:
      return "infrastructure error";
    case v1::PROBE_NOT_MEASURED:
      return "not measured";
    default:
      return "unknown outcome";
  }
}

std::string DescribeResult(const v1::ProbeResult& result) {
  const char* label = result.simulated() ? " (simulated)" : "";
  if (result.outcome() == v1::PROBE_OK) {
    return absl::StrFormat("%.1f TFLOP/s per GPU%s", result.model_tflops_per_gpu(), label);
  }
  std::string text = DescribeOutcome(result.outcome());
  if (!result.message().empty()) absl::StrAppend(&text, ": ", result.message());
  return absl::StrCat(text, label);
}

std::string DescribeGpuType(const std::string& gpu_type, const std::string& gpu_name) {
  if (!gpu_type.empty()) return gpu_type;
  if (gpu_name.empty()) return "unknown GPU";
  return absl::StrCat("unknown GPU ", gpu_name);
}

std::string DescribeGpus(int64_t count, const std::string& gpu_type, const std::string& gpu_name) {
  return absl::StrCat(count, " x ", DescribeGpuType(gpu_type, gpu_name));
}

std::string DescribeRanOn(const v1::ProbeResult& result) {
  const auto& hosts = result.ran_on();
  if (hosts.empty()) return "";
  const int named = hosts.size() <= kMaxHostsNamed ? hosts.size() : kMaxHostsNamed - 1;
  std::vector<std::string> parts;
  for (int i = 0; i < named; ++i) parts.push_back(DescribeHost(hosts[i]));
  if (named < hosts.size()) {
    const v1::ProbeHost& first = hosts[named];
    const v1::ProbeHost& last = hosts[hosts.size() - 1];
    parts.push_back(
        absl::StrCat(hosts.size() - named, " more workers (",
                     DescribeRanks(first.first_rank(),
                                   last.first_rank() + last.num_ranks() - first.first_rank()),
                     ")"));
  }
  return absl::StrCat("ran on ", absl::StrJoin(parts, " + "));
}

std::string DescribeMemoryEligible(const v1::SearchCounts& counts, bool probes_risky) {
  if (!probes_risky) return absl::StrCat(counts.memory_safe(), " memory-safe");
  return absl::StrCat(counts.memory_safe(), " SAFE or RISKY (", counts.memory_risky(), " RISKY)");
}

std::string DescribeMemoryHeadroom(const v1::MemoryEstimate& estimate,
                                   const v1::ProbeResult& result) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  const double capacity = static_cast<double>(estimate.capacity_bytes());
  const std::string estimated = absl::StrFormat(
      "estimated %.2f GiB, %.0f%% of capacity, %s", estimate.peak_bytes() / kGiB,
      100 * estimate.fraction_of_capacity(), v1::MemoryVerdict_Name(estimate.verdict()));
  if (result.peak_memory_bytes() <= 0 || !(capacity > 0)) {
    return absl::StrCat("peak memory not measured (", estimated, ")");
  }
  const double peak = static_cast<double>(result.peak_memory_bytes());
  const std::string spare = peak <= capacity
                                ? absl::StrFormat("%.2f GiB to spare", (capacity - peak) / kGiB)
                                : absl::StrFormat("%.2f GiB over", (peak - capacity) / kGiB);
  return absl::StrFormat("peak memory %.2f of %.2f GiB %s, %s (%s)", peak / kGiB, capacity / kGiB,
                         result.simulated() ? "modelled" : "measured", spare, estimated);
}

}  // namespace paratune
