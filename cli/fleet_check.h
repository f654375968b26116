// Whether the registered fleet can run a search before it is submitted (`submit` warns, or
// refuses with --require_workers): the server would create the search anyway and leave its
// probes waiting (docs/scheduler.md, "Waiting").
#ifndef PARATUNE_CLI_FLEET_CHECK_H_
#define PARATUNE_CLI_FLEET_CHECK_H_

#include <string>

#include "proto/autotuner_service.pb.h"
#include "proto/search.pb.h"

namespace paratune {

// "" when a live (not LOST) worker is of the search's kind (convert/worker_kind.h: its GPU type
// or a custom GPU's memory, its backend, sim when unset, and its launch template) and has at
// least its GPUs per node; else why not, naming what the fleet has: "no live worker can host this
// search (8 x h100-80gb per node, backend sim); live workers: 2 x 8 a100-80gb (sim)".
std::string NoWorkerCanHost(const v1::SearchSpec& spec, const v1::ListWorkersResponse& workers);

}  // namespace paratune

#endif  // PARATUNE_CLI_FLEET_CHECK_H_
