// Fuzzes the WorkerService request validators (server/core/worker_request.h, and the name
// parsers the scheduler applies to each request's worker and probe) on requests decoded from
// the input. Its first line names the RPC (RegisterWorker, Heartbeat, AcquireProbe,
// ReportProbe, Rendezvous, DeregisterWorker; an unknown name picks one by the first byte);
// the rest is the request, wire format or text format. Every refusal is INVALID_ARGUMENT
// with a message short enough for a log line however long the value it quotes; what a
// validator accepts keeps the promises the scheduler relies on (a finite long-poll wait, a
// positive step time and TFLOP/s in an OK result, whose verdict ran_on does not change).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/fuzz_message.h"
#include "proto/probe.pb.h"
#include "proto/worker_service.pb.h"
#include "server/core/resource_names.h"
#include "server/core/worker_request.h"

namespace paratune {
namespace {

// Refusals quote values cut short: a message this long would flood the logs.
constexpr size_t kMaxMessageBytes = 1024;

// Whether `status` is OK; a refusal must be INVALID_ARGUMENT with a short message.
bool Accepted(const absl::Status& status) {
  if (status.ok()) return true;
  FuzzCheck(status.code() == absl::StatusCode::kInvalidArgument,
            "a bad worker request is INVALID_ARGUMENT");
  FuzzCheck(!status.message().empty() && status.message().size() <= kMaxMessageBytes,
            "a refusal says why in at most 1 KiB");
  return false;
}

void FuzzRegisterWorker(absl::string_view input) {
  v1::RegisterWorkerRequest request;
  if (!ParseFuzzMessage(input, request)) return;
  if (!Accepted(ValidateRegisterWorkerRequest(request))) return;
  FuzzCheck(request.gpus_size() >= 1 && request.gpus_size() <= 64 && request.backends_size() >= 1,
            "a registered worker has 1 to 64 GPUs and a backend");
  for (const v1::Gpu& gpu : request.gpus()) {
    FuzzCheck(gpu.index() >= 0 && gpu.index() < 64 && gpu.memory_bytes() > 0,
              "a registered GPU is a device ordinal below 64 with memory");
  }
}

void FuzzHeartbeat(absl::string_view input) {
  v1::HeartbeatRequest request;
  if (!ParseFuzzMessage(input, request)) return;
  Accepted(ParseWorkerName("worker", request.worker()).status());
  if (!Accepted(ValidateHeartbeatRequest(request))) return;
  FuzzCheck(request.running_probes_size() <= 64, "a heartbeat lists at most 64 probes");
  for (const std::string& probe : request.running_probes()) {
    FuzzCheck(ParseProbeName("running_probes", probe).ok(),
              "a heartbeat's running probes are probe names");
  }
}

void FuzzAcquireProbe(absl::string_view input) {
  v1::AcquireProbeRequest request;
  if (!ParseFuzzMessage(input, request)) return;
  Accepted(ParseWorkerName("worker", request.worker()).status());
  if (!Accepted(ValidateAcquireProbeRequest(request))) return;
  // The service turns it into the long poll's deadline.
  FuzzCheck(std::isfinite(request.wait_seconds()) && request.wait_seconds() >= 0 &&
                request.wait_seconds() <= 60,
            "an accepted wait_seconds is in [0, 60]");
}

void FuzzReportProbe(absl::string_view input) {
  v1::ReportProbeRequest request;
  if (!ParseFuzzMessage(input, request)) return;
  Accepted(ParseWorkerName("worker", request.worker()).status());
  Accepted(ParseProbeName("probe", request.probe()).status());
  const v1::ProbeResult& result = request.result();
  const bool alone = Accepted(ValidateProbeResult(result, /*gang_member=*/false));
  const bool in_gang = Accepted(ValidateProbeResult(result, /*gang_member=*/true));
  FuzzCheck(!alone || in_gang, "a result accepted from a lone worker is accepted from a gang");
  v1::ProbeResult without_ran_on = result;
  without_ran_on.clear_ran_on();
  FuzzCheck(ValidateProbeResult(without_ran_on).ok() == alone,
            "ran_on, which the server sets, does not change the verdict");
  if (!in_gang || result.outcome() != v1::PROBE_OK || result.step_times_seconds().empty()) return;
  // Candidates are ranked by TFLOP/s and the adaptive policy divides by both.
  FuzzCheck(std::isfinite(result.mean_step_time_seconds()) && result.mean_step_time_seconds() > 0 &&
                std::isfinite(result.model_tflops_per_gpu()) && result.model_tflops_per_gpu() > 0,
            "a timed OK result has a finite positive step time and TFLOP/s");
}

void FuzzRendezvous(absl::string_view input) {
  v1::RendezvousRequest request;
  if (!ParseFuzzMessage(input, request)) return;
  Accepted(ParseWorkerName("worker", request.worker()).status());
  Accepted(ParseProbeName("probe", request.probe()).status());
  if (!Accepted(ValidateRendezvousRequest(request))) return;
  FuzzCheck(request.token().size() <= 4096, "an accepted token is at most 4,096 bytes");
}

void FuzzDeregisterWorker(absl::string_view input) {
  v1::DeregisterWorkerRequest request;
  if (!ParseFuzzMessage(input, request)) return;
  Accepted(ParseWorkerName("worker", request.worker()).status());
  if (!Accepted(ValidateDeregisterWorkerRequest(request))) return;
  FuzzCheck(request.reason().size() <= 1024, "an accepted reason is at most 1,024 bytes");
}

constexpr FuzzedRpc kRpcs[] = {
    {"RegisterWorker", FuzzRegisterWorker}, {"Heartbeat", FuzzHeartbeat},
    {"AcquireProbe", FuzzAcquireProbe},     {"ReportProbe", FuzzReportProbe},
    {"Rendezvous", FuzzRendezvous},         {"DeregisterWorker", FuzzDeregisterWorker},
};

}  // namespace
}  // namespace paratune

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  paratune::FuzzNamedRpc(paratune::kRpcs, paratune::FuzzText(data, size));
  return 0;
}
