// Probe assignments and their launch values, shared by the tests of launch templates
// (testonly).
#ifndef PARATUNE_LAUNCH_TEST_ASSIGNMENTS_H_
#define PARATUNE_LAUNCH_TEST_ASSIGNMENTS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "estimator/parallel_config.h"
#include "estimator/training_spec.h"
#include "launch/launch_values.h"
#include "proto/probe.pb.h"

namespace paratune {

// Llama-3.1-70B (80 layers), global batch 64, sequence 8192, on 2 nodes x 8 H100-80GB as
// dp2 tp4 pp2 cp1 mbs1 vp2 with `recompute`, 2 warm-up and 5 timed steps, a full-scope probe
// of 16 ranks on a gang of two workers (hosts gpu-node-0 and gpu-node-1), seen from the second
// (gang_index 1, GPUs 0-7).
v1::ProbeAssignment TwoNodeGangAssignment(v1::Recompute recompute);

// LaunchValues::ForProbe for `assignment`, its model, training run and configuration resolved
// as the worker resolves them (uneven pipeline splits and tp x cp across nodes allowed): a
// launch of full steps, or of `micro_batches_per_step` when > 0. The conversions' and
// ForProbe's errors.
absl::StatusOr<LaunchValues> ProbeLaunchValues(const v1::ProbeAssignment& assignment,
                                               int64_t micro_batches_per_step = 0,
                                               int64_t extra_warmup_iterations = 0,
                                               int master_port = 29500);

// LaunchValues::ForExport for the whole configuration of `assignment`, resolved as above.
absl::StatusOr<LaunchValues> ExportLaunchValues(const v1::ProbeAssignment& assignment);

// The training run and cluster of PresetExportLaunchValues.
constexpr int64_t kPresetExportGlobalBatch = 1024;
constexpr int64_t kPresetExportSeqLen = 8192;
constexpr int64_t kPresetExportGpusPerNode = 8;

// Global batch 1024 at sequence 8192 in bf16, the other options their defaults.
TrainingOptions PresetExportTraining();

// LaunchValues::ForExport of catalog model `preset`, mixture-of-experts ones included, with
// `training` (PresetExportTraining unless given) on `nodes` x 8 H100-80GB as `dims`, uneven
// pipeline stages allowed. NOT_FOUND for an unknown preset; ParallelConfig::Create's errors
// when `dims` break a rule.
absl::StatusOr<LaunchValues> PresetExportLaunchValues(
    absl::string_view preset, int64_t nodes, const ParallelDims& dims,
    const TrainingOptions& training = PresetExportTraining());

}  // namespace paratune

#endif  // PARATUNE_LAUNCH_TEST_ASSIGNMENTS_H_
