// The GPU list `paratune-probe --list_gpus` prints and the worker registers with, so that
// the worker itself links no CUDA: one v1::Gpu per line, in protobuf text format.
#ifndef PARATUNE_WORKER_PROBE_GPU_INVENTORY_H_
#define PARATUNE_WORKER_PROBE_GPU_INVENTORY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/worker.pb.h"

namespace paratune {

// `index: 3 name: "NVIDIA H100 80GB HBM3" memory_bytes: 85045706752`, no newline (index 0,
// proto3's default, is left out).
std::string FormatGpuLine(const v1::Gpu& gpu);

// The GPUs of `text`, one per non-empty line. INVALID_ARGUMENT quoting the line for one that
// is not a v1::Gpu in text format or lacks a name, a positive memory or a distinct
// non-negative index; NOT_FOUND when no line lists a GPU.
absl::StatusOr<std::vector<v1::Gpu>> ParseGpuInventory(absl::string_view text);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_GPU_INVENTORY_H_
