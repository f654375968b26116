// The conformance suite every ProbeBackend passes (DESIGN.md §8, STYLE.md rule 9), through the
// interface the worker runs them by: the backend's runs (ProbeBackend::Run on a ProbeSpec)
// and the results the worker makes of them (RunProbe, probe_pipeline.h). A backend's test
// instantiates it:
//
//   INSTANTIATE_TEST_SUITE_P(Sim, BackendConformanceTest,
//                            ::testing::Values(BackendConformanceParam{
//                                "sim", [] { return std::make_unique<SimBackend>(...); },
//                                SmallConformanceAssignment()}),
//                            BackendConformanceParamName);
#ifndef PARATUNE_WORKER_BACKEND_CONFORMANCE_H_
#define PARATUNE_WORKER_BACKEND_CONFORMANCE_H_

#include <functional>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "proto/probe.pb.h"
#include "worker/probe_backend.h"

namespace paratune {

struct BackendConformanceParam {
  // Test name suffix, e.g. "sim".
  std::string name;
  // A fresh backend. Its probes must take long enough to be stopped while running (a few
  // tens of milliseconds suffice) and must finish well within the test's timeout.
  std::function<std::unique_ptr<ProbeBackend>()> make_backend;
  // A probe this backend can run on this machine and that fits in memory: 8 micro-batches
  // per step, so that it can run short steps of 2 and 4.
  v1::ProbeAssignment runnable;
};

// Llama-3.2-1B on 1 node x 8 H100-80GB, global batch 64, sequence 2048, dp8 tp1 pp1 cp1
// mbs1, run by one worker on GPUs 0-7, 1 warm-up and 4 timed steps, deadline 60 s, seed 7:
// small enough for any backend.
v1::ProbeAssignment SmallConformanceAssignment();

// The ProbeSpec of `assignment`, which must be valid: the test fails otherwise.
ProbeSpec SpecOf(const v1::ProbeAssignment& assignment);

// For INSTANTIATE_TEST_SUITE_P's name generator.
std::string BackendConformanceParamName(
    const ::testing::TestParamInfo<BackendConformanceParam>& info);

class BackendConformanceTest : public ::testing::TestWithParam<BackendConformanceParam> {};

}  // namespace paratune

#endif  // PARATUNE_WORKER_BACKEND_CONFORMANCE_H_
