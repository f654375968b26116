#include "server/worker_request.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/template_name.h"

namespace paratune {
namespace {

constexpr int64_t kMaxNameBytes = 256;
constexpr int kMaxGpus = 64;
constexpr int kMaxLabels = 32;
constexpr int kMaxCommandTemplates = 64;
constexpr int kMaxStepTimes = 10'000;
constexpr size_t kMaxMessageBytes = 64 * 1024;

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

absl::Status CheckRate(absl::string_view field, double value) {
  if (!std::isfinite(value) || value < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("result.", field, " (", value, ") must be finite and >= 0"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateRegisterWorkerRequest(const v1::RegisterWorkerRequest& request) {
  if (absl::Status s = CheckName("hostname", request.hostname(), false); !s.ok()) return s;
  if (request.gpus_size() < 1 || request.gpus_size() > kMaxGpus) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpus (", request.gpus_size(), " GPUs) must list 1 to ", kMaxGpus, " GPUs"));
  }
  for (int i = 0; i < request.gpus_size(); ++i) {
    const v1::Gpu& gpu = request.gpus(i);
    if (gpu.memory_bytes() <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("gpus[", i, "].memory_bytes (", gpu.memory_bytes(), ") must be > 0"));
    }
    if (gpu.index() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("gpus[", i, "].index (", gpu.index(), ") must be >= 0"));
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

absl::Status ValidateProbeResult(const v1::ProbeResult& result, bool gang_member) {
  if (result.outcome() == v1::PROBE_OUTCOME_UNSPECIFIED ||
      !v1::ProbeOutcome_IsValid(result.outcome())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "result.outcome (", static_cast<int>(result.outcome()), ") must be a ProbeOutcome"));
  }
  if (result.message().size() > kMaxMessageBytes) {
    return absl::InvalidArgumentError(absl::StrCat("result.message (", result.message().size(),
                                                   " bytes) must be at most ", kMaxMessageBytes,
                                                   " bytes"));
  }
  if (result.step_times_seconds_size() > kMaxStepTimes) {
    return absl::InvalidArgumentError(absl::StrCat("result.step_times_seconds (",
                                                   result.step_times_seconds_size(),
                                                   " values) must have at most ", kMaxStepTimes));
  }
  if (result.peak_memory_bytes() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("result.peak_memory_bytes (", result.peak_memory_bytes(), ") must be >= 0"));
  }
  if (absl::Status s = CheckRate("wall_seconds", result.wall_seconds()); !s.ok()) return s;
  if (result.outcome() != v1::PROBE_OK) return absl::OkStatus();
  if (result.step_times_seconds_size() == 0 && gang_member) return absl::OkStatus();
  if (result.step_times_seconds_size() == 0) {
    return absl::InvalidArgumentError(
        "result.step_times_seconds (none) must have a value per timed step of an OK probe");
  }
  for (int i = 0; i < result.step_times_seconds_size(); ++i) {
    const double t = result.step_times_seconds(i);
    if (!std::isfinite(t) || t <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("result.step_times_seconds[", i, "] (", t, ") must be finite and > 0"));
    }
  }
  if (absl::Status s = CheckRate("mean_step_time_seconds", result.mean_step_time_seconds());
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckRate("tokens_per_second", result.tokens_per_second()); !s.ok()) {
    return s;
  }
  return CheckRate("model_tflops_per_gpu", result.model_tflops_per_gpu());
}

}  // namespace paratune
