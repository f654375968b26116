// Fuzzes the Autotuner's Estimate and Plan requests (convert/estimate_requests.h), which
// resolve a model, training run, cluster and configuration or a whole search spec from the
// request and answer with the estimator alone. The input's first line names the RPC
// (Estimate or Plan; an unknown name picks one by the first byte); the rest is the request,
// wire format or text format. Every refusal is INVALID_ARGUMENT. An estimate's memory terms
// add up to their stage's total and its times are finite and not negative; a plan holds at
// most `limit` candidates and memory-map rows, and counts no more valid configurations than
// it enumerated.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "convert/estimate_requests.h"
#include "convert/spec_convert.h"
#include "estimator/planner.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/fuzz_message.h"
#include "proto/autotuner_service.pb.h"

namespace paratune {
namespace {

// The server refuses a Plan that enumerates more than --max_enumerated_candidates (a
// million by default) before planning it; a fuzzed plan is kept far smaller so that each
// input runs in milliseconds.
constexpr int64_t kMaxFuzzedCandidates = 20'000;

bool Accepted(const absl::Status& status) {
  if (status.ok()) return true;
  FuzzCheck(status.code() == absl::StatusCode::kInvalidArgument,
            "a bad Estimate or Plan request is INVALID_ARGUMENT");
  return false;
}

void FuzzEstimate(absl::string_view input) {
  v1::EstimateRequest request;
  if (!ParseFuzzMessage(input, request)) return;
  const absl::StatusOr<v1::EstimateResponse> answer = AnswerEstimate(request);
  if (!Accepted(answer.status())) return;
  const v1::MemoryEstimate& memory = answer->memory();
  FuzzCheck(memory.peak_stage_index() >= 0 && memory.peak_stage_index() < memory.stages_size(),
            "the peak stage is one of the stages");
  for (const v1::StageMemory& stage : memory.stages()) {
    int64_t sum = 0;
    for (const v1::MemoryTerm& term : stage.terms()) {
      FuzzCheck(term.bytes() >= 0, "a memory term is not negative");
      FuzzCheck(!__builtin_add_overflow(sum, term.bytes(), &sum), "a stage's terms add up");
    }
    FuzzCheck(sum == stage.total_bytes(), "a stage's terms sum to its total");
  }
  FuzzCheck(memory.peak_bytes() == memory.stages(memory.peak_stage_index()).total_bytes(),
            "the peak is the peak stage's total");
  const v1::PerformanceEstimate& performance = answer->performance();
  for (double seconds :
       {performance.step_time_seconds(), performance.compute_seconds(),
        performance.pipeline_bubble_seconds(), performance.tp_communication_seconds(),
        performance.cp_communication_seconds(), performance.ep_communication_seconds(),
        performance.dp_communication_seconds(), performance.pp_communication_seconds(),
        performance.optimizer_seconds(), performance.tokens_per_second(),
        performance.model_tflops_per_gpu()}) {
    FuzzCheck(std::isfinite(seconds) && seconds >= 0, "a predicted figure is finite, >= 0");
  }
  FuzzCheck(performance.step_time_seconds() > 0, "a predicted step takes time");
}

void FuzzPlan(absl::string_view input) {
  v1::PlanRequest request;
  if (!ParseFuzzMessage(input, request)) return;
  // As the server does before planning (server/autotuner_service.cc).
  if (absl::StatusOr<ResolvedSpec> spec = ResolveSearchSpec(request.spec()); spec.ok()) {
    if (CountEnumeratedConfigurations(spec->model, spec->training, spec->cluster.world_size(),
                                      spec->plan_options) > kMaxFuzzedCandidates) {
      return;
    }
  }
  const absl::StatusOr<v1::PlanResponse> plan = AnswerPlan(request);
  if (!Accepted(plan.status())) return;
  if (request.limit() > 0) {
    FuzzCheck(plan->candidates_size() <= request.limit() &&
                  plan->memory_map().rows_size() <= request.limit(),
              "a plan holds at most `limit` candidates and memory-map rows");
  }
  FuzzCheck(plan->counts().valid() <= plan->counts().enumerated() &&
                plan->counts().memory_safe() <= plan->counts().valid(),
            "a plan counts no more valid than enumerated, no more safe than valid");
}

constexpr FuzzedRpc kRpcs[] = {{"Estimate", FuzzEstimate}, {"Plan", FuzzPlan}};

}  // namespace
}  // namespace paratune

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  paratune::FuzzNamedRpc(paratune::kRpcs, paratune::FuzzText(data, size));
  return 0;
}
