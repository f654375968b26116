// The plan's memory map (estimator/planner.h, Plan.memory_map) as the API's v1::MemoryMap:
// entries grouped into one row per configuration shape, and the rows a limit keeps. Shared
// by the server's Plan RPC and the CLI's `plan` (text and --json) through AnswerPlan.
#ifndef PARATUNE_CONVERT_MEMORY_MAP_H_
#define PARATUNE_CONVERT_MEMORY_MAP_H_

#include <cstdint>

#include "estimator/planner.h"
#include "proto/autotuner_service.pb.h"

namespace paratune {

// The map of `plan`, planned with `options` for GPUs of `capacity_bytes`. With `limit` > 0
// and fewer than the map's rows, the `limit` rows that hold the best predicted candidates
// (a row ranks by its best candidate; rows holding none come last, in enumeration order),
// shown in enumeration order.
v1::MemoryMap MemoryMapToProto(const Plan& plan, const PlanOptions& options, int64_t capacity_bytes,
                               int64_t limit);

}  // namespace paratune

#endif  // PARATUNE_CONVERT_MEMORY_MAP_H_
