// A search small enough for unit and end-to-end tests, and a worker for it, built once for all
// of them.
#ifndef PARATUNE_SERVER_CORE_TEST_REQUESTS_H_
#define PARATUNE_SERVER_CORE_TEST_REQUESTS_H_

#include <cstdint>
#include <string>

#include "proto/autotuner_service.pb.h"
#include "proto/worker_service.pb.h"

namespace paratune {

// Llama-3.2-1B on `nodes` x `gpus_per_node` H100-80GB, global batch 64, sequence 2048,
// probing the `top_k` best predicted configurations (policy TOP_K) with the sim backend. A sim
// worker with the cluster's GPUs finishes it in about top_k x --sim_probe_seconds.
v1::CreateSearchRequest SmallSimSearch(int64_t top_k, int64_t nodes = 1, int64_t gpus_per_node = 8);

// A worker on host "node" with `gpus` simulated H100-80GB GPUs and the backend `backend`.
v1::RegisterWorkerRequest Worker(int gpus, const std::string& backend = "sim");

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_TEST_REQUESTS_H_
