#include "convert/worker_kind.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

v1::Worker Worker(const std::string& type, int64_t memory_bytes, const std::string& backend) {
  v1::Worker worker;
  worker.set_gpu_type(type);
  worker.add_backends(backend);
  v1::Gpu* gpu = worker.add_gpus();
  gpu->set_name("NVIDIA GPU");
  gpu->set_memory_bytes(memory_bytes);
  return worker;
}

TEST(WorkerKindTest, ASpecNotYetNormalizedGetsTheDefaultBackendAndALowerCaseType) {
  v1::SearchSpec spec;
  spec.mutable_cluster()->mutable_gpu()->set_type("H100-80GB");
  const WorkerKind kind = WorkerKindOf(spec);
  EXPECT_EQ(kind.backend, "sim");
  EXPECT_EQ(kind.gpu_type, "h100-80gb");
  EXPECT_EQ(kind.command_template, "");
}

TEST(WorkerKindTest, NamesTheFirstThingAWorkerLacks) {
  WorkerKind kind;
  kind.backend = "command";
  kind.command_template = "megatron";
  kind.gpu_type = "h100-80gb";
  v1::Worker worker = Worker("h100-80gb", 85'520'809'984, "sim");
  EXPECT_EQ(WorkerKindMismatch(worker, kind), "it offers backends sim, not command");
  worker.add_backends("command");
  EXPECT_EQ(WorkerKindMismatch(worker, kind), "it has no launch template megatron");
  worker.add_command_templates("megatron");
  EXPECT_EQ(WorkerKindMismatch(worker, kind), "");
  worker.set_gpu_type("a100-80gb");
  EXPECT_EQ(WorkerKindMismatch(worker, kind), "its GPUs are a100-80gb, not h100-80gb");
}

// A custom GPU has no catalog type: a worker fits when its GPUs' memory is within
// kGpuMemoryTolerance (6 %) of the spec's.
TEST(WorkerKindTest, ACustomGpuIsMatchedByItsMemory) {
  WorkerKind kind;
  kind.backend = "sim";
  kind.gpu_memory_bytes = 80'000'000'000;
  EXPECT_EQ(WorkerKindMismatch(Worker("", 84'000'000'000, "sim"), kind), "");
  EXPECT_EQ(WorkerKindMismatch(Worker("", 40'000'000'000, "sim"), kind),
            "its GPUs have 40000000000 bytes, not the custom GPU's 80000000000");
}

}  // namespace
}  // namespace paratune
