#include "convert/search_text.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace paratune {

std::string DescribeConfig(const v1::ParallelConfig& config) {
  std::string text = absl::StrCat("dp", config.data_parallel(), " tp", config.tensor_parallel(),
                                  " pp", config.pipeline_parallel(), " cp",
                                  config.context_parallel(), " mbs", config.micro_batch_size());
  if (config.virtual_pipeline() > 1) absl::StrAppend(&text, " vp", config.virtual_pipeline());
  // Sequence parallelism only means something alongside TP.
  if (config.tensor_parallel() > 1 && config.has_sequence_parallel() &&
      !config.sequence_parallel()) {
    absl::StrAppend(&text, " sp=off");
  }
  if (config.recompute() == v1::RECOMPUTE_SELECTIVE) {
    absl::StrAppend(&text, " recompute=selective");
  } else if (config.recompute() == v1::RECOMPUTE_FULL) {
    absl::StrAppend(&text, " recompute=full");
  }
  return text;
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

}  // namespace paratune
