// Probe assignments that the launch tests share (testonly).
#ifndef PARATUNE_WORKER_TEST_ASSIGNMENTS_H_
#define PARATUNE_WORKER_TEST_ASSIGNMENTS_H_

#include "proto/probe.pb.h"

namespace paratune {

// Llama-3.1-70B (80 layers), global batch 64, sequence 8192, on 2 nodes x 8 H100-80GB as
// dp2 tp4 pp2 cp1 mbs1 vp2 with `recompute`, 2 warm-up and 5 timed steps, a full-scope probe
// of 16 ranks on a gang of two workers (hosts gpu-node-0 and gpu-node-1), seen from the second
// (gang_index 1, GPUs 0-7).
v1::ProbeAssignment TwoNodeGangAssignment(v1::Recompute recompute);

}  // namespace paratune

#endif  // PARATUNE_WORKER_TEST_ASSIGNMENTS_H_
