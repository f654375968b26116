// A stand-in for paratune-probe in the cuda backend's CPU tests: the same flags and files,
// and the behaviour FAKE_PROBE_BEHAVIOR names:
//   ok         writes an OK result whose message echoes the flags it got
//   oom        writes an OUT_OF_MEMORY result
//   crash      prints a CUDA-style error on stderr and aborts
//   exit1      prints an error and exits 1 without a result
//   hang       ignores SIGTERM and sleeps until killed
//   garbage    writes a result file that is not a ProbeResult, exits 0
//   silent     exits 0 without writing a result
//   gang0      writes "00ff" to --nccl_id_out, waits for the file FAKE_PROBE_GO_FILE (the
//              test's rendezvous creates it), then behaves as ok
//   no_gpus    --list_gpus: prints an error and exits 3
// --list_gpus prints two GPUs unless the behaviour is no_gpus.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "proto/probe.pb.h"
#include "worker/probe/probe_exit_codes.h"

namespace {

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

int WriteResult(int argc, char** argv, paratune::v1::ProbeOutcome outcome) {
  paratune::v1::ProbeResult result;
  result.set_outcome(outcome);
  result.set_message(absl::StrCat("fake probe: assignment ", Flag(argc, argv, "assignment"),
                                  " nccl_id ", Flag(argc, argv, "nccl_id")));
  result.add_step_times_seconds(0.5);
  result.add_step_times_seconds(0.5);
  result.set_mean_step_time_seconds(0.5);
  Write(Flag(argc, argv, "result"), result.SerializeAsString());
  return paratune::kProbeExitResultWritten;
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
  if (behavior == "oom") return WriteResult(argc, argv, paratune::v1::PROBE_OUT_OF_MEMORY);
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
    while (true) pause();
  }
  if (behavior == "garbage") {
    Write(Flag(argc, argv, "result"), "\xff\xff not a result");
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
  return WriteResult(argc, argv, paratune::v1::PROBE_OK);
}
