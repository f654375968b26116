// The shared backend conformance suite, run with the real paratune-probe on GPU 0 of this
// machine: tagged "gpu", it runs only with --test_tag_filters=gpu on a GPU machine.
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "worker/backend_conformance.h"
#include "worker/cuda_backend.h"

namespace paratune {
namespace {

std::unique_ptr<ProbeBackend> RealProbe() {
  CudaBackend::Options options;
  options.probe_binary =
      absl::StrCat(std::getenv("TEST_SRCDIR"), "/paratune/worker/cuda/paratune-probe");
  options.scratch_directory = std::getenv("TEST_TMPDIR");
  return std::make_unique<CudaBackend>(options);
}

// The suite's small probe as one data-parallel replica on one GPU: Llama-3.2-1B, sequence
// 2048, 8 micro-batches per step.
v1::ProbeAssignment OneGpuReplica() {
  v1::ProbeAssignment assignment = SmallConformanceAssignment();
  assignment.set_scope(v1::PROBE_SCOPE_REPLICA);
  assignment.set_num_ranks(1);
  v1::GangMember& member = *assignment.add_gang();
  member.set_worker("workers/1");
  member.set_first_rank(0);
  member.set_num_ranks(1);
  assignment.add_gpu_indices(0);
  return assignment;
}

INSTANTIATE_TEST_SUITE_P(Cuda, BackendConformanceTest,
                         ::testing::Values(BackendConformanceParam{"cuda", RealProbe,
                                                                   OneGpuReplica()}),
                         BackendConformanceParamName);

}  // namespace
}  // namespace paratune
