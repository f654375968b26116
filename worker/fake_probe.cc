// A stand-in for paratune-probe in the cuda backend's CPU tests: the same flags and files,
// and the behaviour FAKE_PROBE_BEHAVIOR names:
//   ok         reads the assignment and writes a report as the probe would: OUT_OF_MEMORY when
//              the memory model's estimate exceeds the GPU's capacity, else OK after 50 ms,
//              each timed step of m micro-batches taking m x 10 ms; with FAKE_PROBE_NCCL_ID
//              set, exits 1 unless --nccl_id is that id
//   oom        writes an OUT_OF_MEMORY report
//   crash      prints a CUDA-style error on stderr and aborts
//   exit1      prints an error and exits 1 without a report
//   hang       ignores SIGTERM, writes "started" to the pipe FAKE_PROBE_STARTED when set, and
//              sleeps until killed
//   garbage    writes a report file that is not a ProbeReport, exits 0
//   silent     exits 0 without writing a report
//   gang0      writes "00ff" to --nccl_id_out, waits for the file FAKE_PROBE_GO_FILE (the
//              test's rendezvous creates it), then behaves as ok
//   no_gpus    --list_gpus: prints an error and exits 3
// --list_gpus prints two GPUs unless the behaviour is no_gpus.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "estimator/memory_model.h"
#include "proto/probe.pb.h"
#include "proto/probe_report.pb.h"
#include "worker/probe/probe_exit_codes.h"
#include "worker/probe/probe_spec.h"

namespace {

using paratune::v1::ProbeReport;

std::string Flag(int argc, char** argv, const std::string& name) {
  const std::string prefix = "--" + name + "=";
  for (int i = 1; i < argc; ++i) {
    if (absl::StartsWith(argv[i], prefix)) return std::string(argv[i] + prefix.size());
  }
  return "";
}

void Write(const std::string& path, const std::string& contents) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << contents;
}

int WriteReport(int argc, char** argv, const ProbeReport& report) {
  Write(Flag(argc, argv, "result"), report.SerializeAsString());
  return paratune::kProbeExitResultWritten;
}

// What the real probe would report of the assignment it was given, in model time.
int Probe(int argc, char** argv) {
  std::ifstream file(Flag(argc, argv, "assignment"), std::ios::binary);
  std::stringstream bytes;
  bytes << file.rdbuf();
  paratune::v1::ProbeAssignment assignment;
  if (!assignment.ParseFromString(bytes.str())) {
    std::fprintf(stderr, "fake probe: --assignment is not a ProbeAssignment\n");
    return paratune::kProbeExitUsage;
  }
  const absl::StatusOr<paratune::ProbeSpec> spec = paratune::ProbeSpec::FromAssignment(assignment);
  if (!spec.ok()) {
    std::fprintf(stderr, "fake probe: %s\n", std::string(spec.status().message()).c_str());
    return paratune::kProbeExitUsage;
  }
  const char* nccl_id = std::getenv("FAKE_PROBE_NCCL_ID");
  if (nccl_id != nullptr && Flag(argc, argv, "nccl_id") != nccl_id) {
    std::fprintf(stderr, "fake probe: --nccl_id is \"%s\", not \"%s\"\n",
                 Flag(argc, argv, "nccl_id").c_str(), nccl_id);
    return paratune::kProbeExitNoResult;
  }
  ProbeReport report;
  const paratune::MemoryEstimate memory = paratune::EstimateMemory(
      spec->model(), spec->training(), spec->cluster(), spec->config(), paratune::MemoryOptions());
  report.set_peak_memory_bytes(static_cast<int64_t>(memory.peak_bytes));
  report.mutable_measurements()->set_gpu_name("fake GPU");
  if (memory.peak_bytes > memory.capacity_bytes) {
    report.set_outcome(paratune::v1::PROBE_OUT_OF_MEMORY);
    report.set_error("fake probe: the memory model's estimate exceeds the GPU's memory");
    return WriteReport(argc, argv, report);
  }
  usleep(50'000);
  report.set_outcome(paratune::v1::PROBE_OK);
  for (int64_t micro_batches : spec->TimedMicroBatches()) {
    paratune::v1::ShortSteps& series = *report.add_timed_steps();
    series.set_micro_batches(micro_batches);
    for (int64_t i = 0; i < spec->timed_steps(); ++i) {
      series.add_step_times_seconds(0.01 * static_cast<double>(micro_batches));
    }
  }
  return WriteReport(argc, argv, report);
}

}  // namespace

int main(int argc, char** argv) {
  const char* env = std::getenv("FAKE_PROBE_BEHAVIOR");
  const std::string behavior = env != nullptr ? env : "ok";
  if (argc > 1 && std::string(argv[1]) == "--list_gpus") {
    if (behavior == "no_gpus") {
      std::fprintf(stderr, "no usable CUDA device: CUDA driver version is insufficient\n");
      return paratune::kProbeExitNoGpu;
    }
    std::printf("name: \"NVIDIA H100 80GB HBM3\" memory_bytes: 85045706752\n");
    std::printf("index: 1 name: \"NVIDIA H100 80GB HBM3\" memory_bytes: 85045706752\n");
    return 0;
  }
  if (behavior == "oom") {
    ProbeReport report;
    report.set_outcome(paratune::v1::PROBE_OUT_OF_MEMORY);
    report.set_error("cudaMalloc of weights (9.00 GiB) failed");
    return WriteReport(argc, argv, report);
  }
  if (behavior == "crash") {
    std::fprintf(stderr, "CUDA error: an illegal memory access was encountered\n");
    std::fflush(stderr);
    std::abort();
  }
  if (behavior == "exit1") {
    std::fprintf(stderr, "cannot write the result\n");
    return paratune::kProbeExitNoResult;
  }
  if (behavior == "hang") {
    signal(SIGTERM, SIG_IGN);
    // Opening the pipe blocks until the test reads it: the test knows the probe runs.
    if (const char* started = std::getenv("FAKE_PROBE_STARTED"))
      std::ofstream(started) << "started\n";
    while (true) pause();
  }
  if (behavior == "garbage") {
    Write(Flag(argc, argv, "result"), "\xff\xff not a report");
    return 0;
  }
  if (behavior == "silent") return 0;
  if (behavior == "gang0") {
    // Atomically, as the real probe writes it.
    const std::string id_file = Flag(argc, argv, "nccl_id_out");
    Write(id_file + ".tmp", "00ff");
    std::rename((id_file + ".tmp").c_str(), id_file.c_str());
    const char* go = std::getenv("FAKE_PROBE_GO_FILE");
    // As the real probe waits in ncclCommInitRank for the other members.
    while (go == nullptr || access(go, F_OK) != 0) usleep(1000);
  }
  return Probe(argc, argv);
}
