#include "server/core/worker_request.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/template_name.h"
#include "estimator/cluster_spec.h"
#include "estimator/training_spec.h"
#include "server/core/resource_names.h"

namespace paratune {
namespace {

constexpr int64_t kMaxNameBytes = 256;
// A worker stands for one node (docs/scheduler.md, "Placement").
constexpr int64_t kMaxGpus = kMaxGpusPerNode;
constexpr int kMaxLabels = 32;
constexpr int kMaxCommandTemplates = 64;
// A worker runs at most one probe per GPU it offers.
constexpr int kMaxRunningProbes = kMaxGpus;
// The longest AcquireProbe long poll (AcquireProbeRequest.wait_seconds).
constexpr double kMaxWaitSeconds = 60;
// An NCCL unique id is 128 bytes; the rest is room for other launchers' tokens.
constexpr size_t kMaxRendezvousTokenBytes = 4096;
constexpr size_t kMaxDeregisterReasonBytes = 1024;

// Bounds of a ProbeResult's figures (proto/probe.proto). Like GpuSpec's, they lie far beyond
// any probe, so that only a broken or hostile worker meets them: a probe's deadline is at most
// a day (ProbeSettings.deadline_seconds), so no time it reports comes near 10^6 s.
constexpr int kMaxStepTimes = 10'000;
constexpr size_t kMaxMessageBytes = 64 * 1024;
constexpr double kMaxResultSeconds = 1e6;
constexpr double kMaxTokensPerSecond = 1e12;
// Entries of each list of parts, phases, collectives, memory terms and short-step series.
constexpr int kMaxResultEntries = 64;
// The coefficient of variation (sample standard deviation / mean) of n positive values is
// below sqrt(n): 100 for kMaxStepTimes.
constexpr double kMaxStepTimeCv = 100;
constexpr int64_t kMaxRanks = kMaxNumNodes * kMaxGpusPerNode;
// How far mean_step_time_seconds may be from its step times' mean: rounding, not another run.
constexpr double kMeanStepTimeTolerance = 0.01;

std::string Shown(absl::string_view value) {
  return absl::StrCat("\"", absl::CHexEscape(value.substr(0, 64)), value.size() > 64 ? "..." : "",
                      "\"");
}

absl::Status CheckName(absl::string_view field, absl::string_view value, bool allow_empty) {
  if ((value.empty() && !allow_empty) || static_cast<int64_t>(value.size()) > kMaxNameBytes) {
    return absl::InvalidArgumentError(absl::StrCat(field, " (", Shown(value), ", ", value.size(),
                                                   " bytes) must be ", allow_empty ? 0 : 1, " to ",
                                                   kMaxNameBytes, " bytes"));
  }
  return absl::OkStatus();
}

// "<field> (<value>) must be in [<low>, <high>]"; NaN is never in range. The bounds take the
// value's type.
template <typename Number>
absl::Status CheckRange(absl::string_view field, Number value, std::common_type_t<Number> low,
                        std::common_type_t<Number> high) {
  if (value >= low && value <= high) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, " (", value, ") must be in [", low, ", ", high, "]"));
}

absl::Status CheckSeconds(absl::string_view field, double value) {
  return CheckRange(field, value, 0, kMaxResultSeconds);
}

absl::Status CheckBytes(absl::string_view field, int64_t value) {
  return CheckRange(field, value, 0, kMaxGpuMemoryBytes);
}

absl::Status CheckEntries(absl::string_view field, int entries, int most) {
  if (entries <= most) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, " (", entries, " entries) must have at most ", most));
}

absl::Status CheckPositiveSeconds(absl::string_view field, double value) {
  if (value > 0 && value <= kMaxResultSeconds) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, " (", value, ") must be in (0, ", kMaxResultSeconds, "]"));
}

absl::Status CheckStepTimes(absl::string_view field,
                            const google::protobuf::RepeatedField<double>& times) {
  PT_RETURN_IF_ERROR(CheckEntries(field, times.size(), kMaxStepTimes));
  for (int i = 0; i < times.size(); ++i) {
    PT_RETURN_IF_ERROR(CheckPositiveSeconds(absl::StrCat(field, "[", i, "]"), times[i]));
  }
  return absl::OkStatus();
}

// Names of parts ("gemm", "dp_collectives", ...): each 1 .. kMaxNameBytes bytes.
absl::Status CheckParts(absl::string_view field,
                        const google::protobuf::RepeatedPtrField<std::string>& parts) {
  PT_RETURN_IF_ERROR(CheckEntries(field, parts.size(), kMaxResultEntries));
  for (int i = 0; i < parts.size(); ++i) {
    PT_RETURN_IF_ERROR(CheckName(absl::StrCat(field, "[", i, "]"), parts[i], false));
  }
  return absl::OkStatus();
}

absl::Status CheckMeasurements(const v1::ProbeMeasurements& m) {
  const std::string field = "result.measurements";
  for (const auto& [name, value] : {
           std::pair{"median_step_time_seconds", m.median_step_time_seconds()},
           std::pair{"min_step_time_seconds", m.min_step_time_seconds()},
           std::pair{"max_step_time_seconds", m.max_step_time_seconds()},
           std::pair{"predicted_step_time_seconds", m.predicted_step_time_seconds()},
           std::pair{"modelled_dp_seconds_per_step", m.modelled_dp_seconds_per_step()},
       }) {
    PT_RETURN_IF_ERROR(CheckSeconds(absl::StrCat(field, ".", name), value));
  }
  PT_RETURN_IF_ERROR(CheckRange(field + ".step_time_cv", m.step_time_cv(), 0, kMaxStepTimeCv));
  PT_RETURN_IF_ERROR(CheckEntries(field + ".phases", m.phases_size(), kMaxResultEntries));
  for (int i = 0; i < m.phases_size(); ++i) {
    const std::string phase = absl::StrCat(field, ".phases[", i, "]");
    PT_RETURN_IF_ERROR(CheckName(phase + ".phase", m.phases(i).phase(), false));
    PT_RETURN_IF_ERROR(CheckSeconds(phase + ".seconds", m.phases(i).seconds()));
  }
  PT_RETURN_IF_ERROR(CheckEntries(field + ".collectives", m.collectives_size(), kMaxResultEntries));
  for (int i = 0; i < m.collectives_size(); ++i) {
    const v1::CollectiveBandwidth& c = m.collectives(i);
    const std::string collective = absl::StrCat(field, ".collectives[", i, "]");
    PT_RETURN_IF_ERROR(CheckName(collective + ".group", c.group(), false));
    PT_RETURN_IF_ERROR(CheckName(collective + ".operation", c.operation(), false));
    PT_RETURN_IF_ERROR(CheckRange(collective + ".ranks", c.ranks(), 1, kMaxRanks));
    PT_RETURN_IF_ERROR(CheckBytes(collective + ".bytes", c.bytes()));
    PT_RETURN_IF_ERROR(CheckSeconds(collective + ".seconds", c.seconds()));
    PT_RETURN_IF_ERROR(CheckRange(collective + ".algorithm_bandwidth_gbps",
                                  c.algorithm_bandwidth_gbps(), 0, kMaxGpuBandwidthGbps));
    PT_RETURN_IF_ERROR(CheckRange(collective + ".bus_bandwidth_gbps", c.bus_bandwidth_gbps(), 0,
                                  kMaxGpuBandwidthGbps));
  }
  PT_RETURN_IF_ERROR(
      CheckEntries(field + ".memory_terms", m.memory_terms_size(), kMaxResultEntries));
  for (int i = 0; i < m.memory_terms_size(); ++i) {
    const std::string term = absl::StrCat(field, ".memory_terms[", i, "]");
    PT_RETURN_IF_ERROR(CheckName(term + ".term", m.memory_terms(i).term(), false));
    PT_RETURN_IF_ERROR(CheckBytes(term + ".estimated_bytes", m.memory_terms(i).estimated_bytes()));
    PT_RETURN_IF_ERROR(CheckBytes(term + ".allocated_bytes", m.memory_terms(i).allocated_bytes()));
  }
  PT_RETURN_IF_ERROR(
      CheckBytes(field + ".estimated_peak_memory_bytes", m.estimated_peak_memory_bytes()));
  // The kernels paratune-probe names (proto/probe.proto); empty for backends without one.
  for (const auto& [name, kernel] : {
           std::pair{"attention_kernel", &m.attention_kernel()},
           std::pair{"attention_backward_kernel", &m.attention_backward_kernel()},
       }) {
    const std::string kernel_field = absl::StrCat(field, ".", name);
    PT_RETURN_IF_ERROR(CheckName(kernel_field, *kernel, true));
    if (!kernel->empty() && *kernel != "cudnn_fused" && *kernel != "chunked") {
      return absl::InvalidArgumentError(
          absl::StrCat(kernel_field, " (\"", absl::CHexEscape(*kernel),
                       "\") must be empty, \"cudnn_fused\" or \"chunked\""));
    }
  }
  // cuDNN's refusals are quoted whole, so the reasons are bounded like a result's message.
  for (const auto& [name, reason] : {
           std::pair{"attention_fallback_reason", &m.attention_fallback_reason()},
           std::pair{"attention_backward_fallback_reason", &m.attention_backward_fallback_reason()},
       }) {
    if (reason->size() > kMaxMessageBytes) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".", name, " (", reason->size(),
                                                     " bytes) must be at most ", kMaxMessageBytes,
                                                     " bytes"));
    }
  }
  for (const auto& [name, value] : {
           std::pair{"gpu_name", &m.gpu_name()},
           std::pair{"driver_version", &m.driver_version()},
           std::pair{"cuda_driver_version", &m.cuda_driver_version()},
           std::pair{"cuda_runtime_version", &m.cuda_runtime_version()},
           std::pair{"nccl_version", &m.nccl_version()},
       }) {
    PT_RETURN_IF_ERROR(CheckName(absl::StrCat(field, ".", name), *value, true));
  }
  return CheckRange(field + ".micro_batches_per_step", m.micro_batches_per_step(), 0,
                    kMaxGlobalBatchSize);
}

// Every figure of `result` within its range, whatever the outcome: a failed probe's figures
// are stored and shown too. ran_on is not checked: the server replaces it.
absl::Status CheckResultFigures(const v1::ProbeResult& result) {
  PT_RETURN_IF_ERROR(CheckName("result.backend", result.backend(), true));
  if (result.message().size() > kMaxMessageBytes) {
    return absl::InvalidArgumentError(absl::StrCat("result.message (", result.message().size(),
                                                   " bytes) must be at most ", kMaxMessageBytes,
                                                   " bytes"));
  }
  PT_RETURN_IF_ERROR(CheckStepTimes("result.step_times_seconds", result.step_times_seconds()));
  PT_RETURN_IF_ERROR(
      CheckSeconds("result.mean_step_time_seconds", result.mean_step_time_seconds()));
  PT_RETURN_IF_ERROR(
      CheckRange("result.tokens_per_second", result.tokens_per_second(), 0, kMaxTokensPerSecond));
  PT_RETURN_IF_ERROR(
      CheckRange("result.model_tflops_per_gpu", result.model_tflops_per_gpu(), 0, kMaxGpuTflops));
  PT_RETURN_IF_ERROR(CheckBytes("result.peak_memory_bytes", result.peak_memory_bytes()));
  PT_RETURN_IF_ERROR(CheckSeconds("result.wall_seconds", result.wall_seconds()));
  PT_RETURN_IF_ERROR(CheckSeconds("result.startup_seconds", result.startup_seconds()));
  PT_RETURN_IF_ERROR(CheckParts("result.measured", result.measured()));
  PT_RETURN_IF_ERROR(CheckParts("result.modelled", result.modelled()));
  PT_RETURN_IF_ERROR(CheckParts("result.extrapolated", result.extrapolated()));
  if (result.has_measurements()) PT_RETURN_IF_ERROR(CheckMeasurements(result.measurements()));
  PT_RETURN_IF_ERROR(
      CheckEntries("result.short_steps", result.short_steps_size(), kMaxResultEntries));
  for (int i = 0; i < result.short_steps_size(); ++i) {
    const std::string series = absl::StrCat("result.short_steps[", i, "]");
    PT_RETURN_IF_ERROR(CheckRange(series + ".micro_batches", result.short_steps(i).micro_batches(),
                                  1, kMaxGlobalBatchSize));
    PT_RETURN_IF_ERROR(
        CheckStepTimes(series + ".step_times_seconds", result.short_steps(i).step_times_seconds()));
  }
  if (!result.has_extrapolation()) return absl::OkStatus();
  // A fit whose slope is not positive is no extrapolation (estimator/short_probe.h); its
  // fixed costs are the intercept less the fill and drain, which may be negative.
  const v1::StepExtrapolation& how = result.extrapolation();
  PT_RETURN_IF_ERROR(CheckRange("result.extrapolation.full_micro_batches", how.full_micro_batches(),
                                1, kMaxGlobalBatchSize));
  PT_RETURN_IF_ERROR(CheckPositiveSeconds("result.extrapolation.slot_seconds", how.slot_seconds()));
  PT_RETURN_IF_ERROR(
      CheckSeconds("result.extrapolation.fill_drain_seconds", how.fill_drain_seconds()));
  return CheckRange("result.extrapolation.fixed_seconds", how.fixed_seconds(), -kMaxResultSeconds,
                    kMaxResultSeconds);
}

// What an OK result's figures must agree on (proto/probe.proto), once each is in range.
absl::Status CheckOkResult(const v1::ProbeResult& result, bool gang_member) {
  if (result.step_times_seconds_size() == 0 && gang_member) return absl::OkStatus();
  if (result.step_times_seconds_size() == 0) {
    return absl::InvalidArgumentError(
        "result.step_times_seconds (none) must have a value per timed step of an OK probe");
  }
  // Candidates are ranked by their TFLOP/s, and the adaptive policy divides by both (a 0 is
  // also its mark of a candidate not yet measured).
  for (const auto& [field, value] : {
           std::pair{"result.mean_step_time_seconds", result.mean_step_time_seconds()},
           std::pair{"result.model_tflops_per_gpu", result.model_tflops_per_gpu()},
       }) {
    if (value == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " (0) must be > 0 for an OK probe with step times"));
    }
  }
  if (result.short_steps().empty()) {
    if (result.has_extrapolation()) {
      return absl::InvalidArgumentError(
          "result.extrapolation is set, but result.short_steps (none) has nothing it was "
          "extrapolated from");
    }
    return absl::OkStatus();
  }
  // The full steps were extrapolated from the short ones, the i-th from the i-th step of
  // every series (ProbeResult.short_steps).
  if (result.short_steps_size() < 2) {
    return absl::InvalidArgumentError(
        "result.short_steps (1 series) must have at least two to extrapolate from");
  }
  if (!result.has_extrapolation()) {
    return absl::InvalidArgumentError(
        "result.extrapolation (unset) must say how result.short_steps were extrapolated");
  }
  const int64_t full = result.extrapolation().full_micro_batches();
  for (int i = 0; i < result.short_steps_size(); ++i) {
    const v1::ShortSteps& series = result.short_steps(i);
    const std::string field = absl::StrCat("result.short_steps[", i, "]");
    const int64_t low = i == 0 ? 1 : result.short_steps(i - 1).micro_batches() + 1;
    if (series.micro_batches() < low || series.micro_batches() >= full) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".micro_batches (", series.micro_batches(), ") must be in [", low, ", ", full - 1,
          "]: ascending, below result.extrapolation.full_micro_batches (", full, ")"));
    }
    if (series.step_times_seconds_size() != result.step_times_seconds_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".step_times_seconds (", series.step_times_seconds_size(),
                       " values) must have as many values as result.step_times_seconds (",
                       result.step_times_seconds_size(), ")"));
    }
  }
  return absl::OkStatus();
}

// An OK result's mean step time, from which its TFLOP/s and so its rank come, is the mean of
// its step times (none for a gang member that did not time its ranks).
absl::Status CheckMeanStepTime(const v1::ProbeResult& result) {
  if (result.step_times_seconds().empty()) return absl::OkStatus();
  double sum = 0;
  for (double seconds : result.step_times_seconds()) sum += seconds;
  const double mean = sum / result.step_times_seconds_size();
  if (std::abs(result.mean_step_time_seconds() - mean) <= kMeanStepTimeTolerance * mean) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "result.mean_step_time_seconds (", result.mean_step_time_seconds(), ") must be within ",
      kMeanStepTimeTolerance * 100, "% of the mean of result.step_times_seconds (", mean, ")"));
}

// Only the sim backend's results are simulated (convert/result_source.h tells them apart by
// the mark): a failed one may leave the mark unset (it has no figures to label), an OK one
// must set it.
absl::Status CheckSimulatedMark(const v1::ProbeResult& result) {
  const bool sim = result.backend() == "sim";
  if (result.simulated() == sim || (sim && result.outcome() != v1::PROBE_OK)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("result.simulated (", result.simulated() ? "true" : "false",
                   ") contradicts result.backend (", Shown(result.backend()), "): ",
                   sim ? "an OK result of the sim backend is simulated"
                       : "only the sim backend's results are simulated"));
}

}  // namespace

absl::Status ValidateRegisterWorkerRequest(const v1::RegisterWorkerRequest& request) {
  if (absl::Status s = CheckName("hostname", request.hostname(), false); !s.ok()) return s;
  if (request.gpus_size() < 1 || request.gpus_size() > kMaxGpus) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpus (", request.gpus_size(), " GPUs) must list 1 to ", kMaxGpus, " GPUs"));
  }
  absl::flat_hash_set<int64_t> indices;
  for (int i = 0; i < request.gpus_size(); ++i) {
    const v1::Gpu& gpu = request.gpus(i);
    const std::string field = absl::StrCat("gpus[", i, "]");
    PT_RETURN_IF_ERROR(
        CheckRange(field + ".memory_bytes", gpu.memory_bytes(), 1, kMaxGpuMemoryBytes));
    // CUDA numbers a host's devices from 0 and a worker lists at most kMaxGpus of them; the
    // indices reach the probes' processes as device ordinals, one GPU per rank.
    PT_RETURN_IF_ERROR(CheckRange(field + ".index", gpu.index(), 0, kMaxGpus - 1));
    if (!indices.insert(gpu.index()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".index (", gpu.index(), ") is listed twice"));
    }
    if (absl::Status s = CheckName(absl::StrCat("gpus[", i, "].name"), gpu.name(), true); !s.ok()) {
      return s;
    }
    // A worker stands for one node of one GPU type (docs/scheduler.md, "Placement").
    const v1::Gpu& first = request.gpus(0);
    if (gpu.name() != first.name() || gpu.memory_bytes() != first.memory_bytes()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gpus[", i, "] (", Shown(gpu.name()), ", ", gpu.memory_bytes(),
          " bytes) differs from gpus[0] (", Shown(first.name()), ", ", first.memory_bytes(),
          " bytes): a worker's GPUs must be of one type; run one worker per GPU type"));
    }
  }
  if (request.backends_size() < 1) {
    return absl::InvalidArgumentError("backends (none) must name at least one backend");
  }
  absl::flat_hash_set<std::string> seen;
  for (int i = 0; i < request.backends_size(); ++i) {
    const std::string& backend = request.backends(i);
    if (backend != "sim" && backend != "replay" && backend != "command" && backend != "cuda") {
      return absl::InvalidArgumentError(absl::StrCat(
          "backends[", i, "] (", Shown(backend), ") must be one of sim, replay, command, cuda"));
    }
    if (!seen.insert(backend).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("backends[", i, "] (", Shown(backend), ") is listed twice"));
    }
  }
  const bool offers_command = std::find(request.backends().begin(), request.backends().end(),
                                        "command") != request.backends().end();
  if (!offers_command && request.command_templates_size() > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("command_templates (", request.command_templates_size(),
                     " names) need the command backend among backends"));
  }
  if (request.command_templates_size() > kMaxCommandTemplates) {
    return absl::InvalidArgumentError(
        absl::StrCat("command_templates (", request.command_templates_size(),
                     " names) must have at most ", kMaxCommandTemplates));
  }
  absl::flat_hash_set<std::string> templates;
  for (int i = 0; i < request.command_templates_size(); ++i) {
    const std::string& name = request.command_templates(i);
    const std::string field = absl::StrCat("command_templates[", i, "]");
    PT_RETURN_IF_ERROR(ValidateTemplateName(field, name));
    if (!templates.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " (", Shown(name), ") is listed twice"));
    }
  }
  if (request.labels_size() > kMaxLabels) {
    return absl::InvalidArgumentError(
        absl::StrCat("labels (", request.labels_size(), " labels) must have at most ", kMaxLabels));
  }
  for (const auto& [key, value] : request.labels()) {
    if (absl::Status s = CheckName("labels key", key, false); !s.ok()) return s;
    if (absl::Status s = CheckName(absl::StrCat("labels[", Shown(key), "]"), value, true);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateHeartbeatRequest(const v1::HeartbeatRequest& request) {
  if (request.running_probes_size() > kMaxRunningProbes) {
    return absl::InvalidArgumentError(
        absl::StrCat("running_probes (", request.running_probes_size(),
                     " probes) must list at most ", kMaxRunningProbes));
  }
  for (int i = 0; i < request.running_probes_size(); ++i) {
    PT_RETURN_IF_ERROR(
        ParseProbeName(absl::StrCat("running_probes[", i, "]"), request.running_probes(i))
            .status());
  }
  return absl::OkStatus();
}

absl::Status ValidateAcquireProbeRequest(const v1::AcquireProbeRequest& request) {
  PT_RETURN_IF_ERROR(CheckRange("wait_seconds", request.wait_seconds(), 0, kMaxWaitSeconds));
  if (request.last_probe().empty()) return absl::OkStatus();
  return ParseProbeName("last_probe", request.last_probe()).status();
}

absl::Status ValidateRendezvousRequest(const v1::RendezvousRequest& request) {
  if (request.token().size() <= kMaxRendezvousTokenBytes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("token (", request.token().size(),
                                                 " bytes) must be at most ",
                                                 kMaxRendezvousTokenBytes, " bytes"));
}

absl::Status ValidateDeregisterWorkerRequest(const v1::DeregisterWorkerRequest& request) {
  if (request.reason().size() <= kMaxDeregisterReasonBytes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("reason (", request.reason().size(),
                                                 " bytes) must be at most ",
                                                 kMaxDeregisterReasonBytes, " bytes"));
}

absl::Status ValidateProbeResult(const v1::ProbeResult& result, bool gang_member) {
  if (result.outcome() == v1::PROBE_OUTCOME_UNSPECIFIED ||
      !v1::ProbeOutcome_IsValid(result.outcome())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "result.outcome (", static_cast<int>(result.outcome()), ") must be a ProbeOutcome"));
  }
  PT_RETURN_IF_ERROR(CheckResultFigures(result));
  PT_RETURN_IF_ERROR(CheckSimulatedMark(result));
  if (result.outcome() != v1::PROBE_OK) return absl::OkStatus();
  PT_RETURN_IF_ERROR(CheckOkResult(result, gang_member));
  return CheckMeanStepTime(result);
}

}  // namespace paratune
