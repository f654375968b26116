#include "estimator/plan_advice.h"

#include <algorithm>

#include "estimator/performance_parameters.h"

namespace paratune {
namespace {

// How many node counts AdviseNodes tries one by one before it goes by multiples.
constexpr int64_t kMaxNodeStepsTried = 64;

// Candidates of the plan of `request` with `training`, `cluster` and `options` in its place;
// 0 when the change makes the request invalid.
int64_t CandidatesOf(const ModelSpec& model, const TrainingSpec& training,
                     const ClusterSpec& cluster, const PlanOptions& options) {
  absl::StatusOr<Plan> plan = PlanConfigurations(model, training, cluster, options,
                                                 DefaultPerformanceParameters(cluster.gpu()));
  return plan.ok() ? static_cast<int64_t>(plan->candidates.size()) : 0;
}

std::optional<PlanAdvice> IfAny(PlanAdvice advice, int64_t candidates) {
  if (candidates == 0) return std::nullopt;
  advice.candidates = candidates;
  return advice;
}

bool Searched(const std::vector<Recompute>& modes, Recompute mode) {
  return std::find(modes.begin(), modes.end(), mode) != modes.end();
}

}  // namespace

std::optional<PlanAdvice> AdviseRecompute(const PlanRequestValues& request) {
  std::vector<Recompute> modes = SearchedRecomputeModes(request.options);
  if (Searched(modes, Recompute::kSelective) && Searched(modes, Recompute::kFull)) {
    return std::nullopt;
  }
  for (Recompute mode : {Recompute::kSelective, Recompute::kFull}) {
    if (!Searched(modes, mode)) modes.push_back(mode);
  }
  std::sort(modes.begin(), modes.end());
  PlanOptions options = request.options;
  options.recompute_modes = modes;
  PlanAdvice advice;
  advice.kind = AdviceKind::kRecompute;
  advice.recompute_modes = modes;
  return IfAny(advice, CandidatesOf(request.model, request.training, request.cluster, options));
}

std::optional<PlanAdvice> AdviseNodes(const PlanRequestValues& request) {
  const int64_t nodes = request.cluster.num_nodes();
  std::vector<int64_t> tried;
  for (int64_t n = nodes + 1; n <= 2 * nodes && n - nodes <= kMaxNodeStepsTried; ++n) {
    tried.push_back(n);
  }
  for (int64_t factor : {4, 8, 16}) tried.push_back(factor * nodes);
  for (int64_t n : tried) {
    if (n > kMaxNumNodes) break;
    absl::StatusOr<ClusterSpec> cluster =
        ClusterSpec::Create(request.cluster.gpu(), n, request.cluster.gpus_per_node());
    if (!cluster.ok()) break;
    PlanAdvice advice;
    advice.kind = AdviceKind::kNodes;
    advice.num_nodes = n;
    if (auto found = IfAny(
            advice, CandidatesOf(request.model, request.training, *cluster, request.options))) {
      return found;
    }
  }
  return std::nullopt;
}

std::optional<PlanAdvice> AdviseGpuType(const PlanRequestValues& request) {
  std::vector<GpuSpec> larger;
  for (const std::string& name : GpuPresetNames()) {
    absl::StatusOr<GpuSpec> gpu = FindGpuPreset(name);
    if (!gpu.ok() || gpu->memory_bytes <= request.cluster.gpu().memory_bytes) continue;
    if (request.training.fp8() && ArchitectureOf(*gpu) != GpuArchitecture::kHopper) continue;
    larger.push_back(*gpu);
  }
  std::stable_sort(larger.begin(), larger.end(), [](const GpuSpec& a, const GpuSpec& b) {
    return a.memory_bytes < b.memory_bytes;
  });
  for (const GpuSpec& gpu : larger) {
    absl::StatusOr<ClusterSpec> cluster =
        ClusterSpec::Create(gpu, request.cluster.num_nodes(), request.cluster.gpus_per_node());
    if (!cluster.ok()) continue;
    PlanAdvice advice;
    advice.kind = AdviceKind::kGpuType;
    advice.gpu_type = gpu.name;
    if (auto found = IfAny(
            advice, CandidatesOf(request.model, request.training, *cluster, request.options))) {
      return found;
    }
  }
  return std::nullopt;
}

std::optional<PlanAdvice> AdviseFp8Parameters(const PlanRequestValues& request) {
  const TrainingSpec& training = request.training;
  if (training.fp8_param_gather() || !training.distributed_optimizer() ||
      ArchitectureOf(request.cluster.gpu()) != GpuArchitecture::kHopper) {
    return std::nullopt;
  }
  TrainingOptions options = training.options();
  options.fp8 = true;
  options.fp8_param_gather = true;
  absl::StatusOr<TrainingSpec> fp8 = TrainingSpec::Create(options);
  if (!fp8.ok()) return std::nullopt;
  PlanAdvice advice;
  advice.kind = AdviceKind::kFp8Parameters;
  return IfAny(advice, CandidatesOf(request.model, *fp8, request.cluster, request.options));
}

std::optional<PlanAdvice> AdviseShorterSequence(const PlanRequestValues& request) {
  for (int64_t seq_len = request.training.seq_len() / 2; seq_len >= 1; seq_len /= 2) {
    TrainingOptions options = request.training.options();
    options.seq_len = seq_len;
    absl::StatusOr<TrainingSpec> shorter = TrainingSpec::Create(options);
    if (!shorter.ok()) return std::nullopt;
    PlanAdvice advice;
    advice.kind = AdviceKind::kSequenceLength;
    advice.seq_len = seq_len;
    if (auto found = IfAny(
            advice, CandidatesOf(request.model, *shorter, request.cluster, request.options))) {
      return found;
    }
  }
  return std::nullopt;
}

std::optional<PlanAdvice> AdviseSmallerMicroBatches(const PlanRequestValues& request) {
  const std::vector<int64_t> searched = SearchedMicroBatchSizes(request.options);
  const int64_t smallest = *std::min_element(searched.begin(), searched.end());
  std::vector<int64_t> smaller;
  for (int64_t size = 1; size < smallest; size *= 2) smaller.push_back(size);
  if (smaller.empty()) return std::nullopt;
  PlanOptions options = request.options;
  options.micro_batch_sizes = smaller;
  PlanAdvice advice;
  advice.kind = AdviceKind::kMicroBatchSizes;
  advice.micro_batch_sizes = smaller;
  return IfAny(advice, CandidatesOf(request.model, request.training, request.cluster, options));
}

std::vector<PlanAdvice> AdvisePlan(const PlanRequestValues& request) {
  std::vector<PlanAdvice> advice;
  for (auto advise : {AdviseRecompute, AdviseNodes, AdviseGpuType, AdviseFp8Parameters,
                      AdviseShorterSequence, AdviseSmallerMicroBatches}) {
    if (std::optional<PlanAdvice> found = advise(request)) advice.push_back(*std::move(found));
  }
  return advice;
}

}  // namespace paratune
