// paratune-probe: runs one probe of a 4D-parallel configuration on this machine's GPUs and
// writes its report for the worker (docs/probe.md). Flags are parsed here only.
#include <nccl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/command_line.h"
#include "common/small_file.h"
#include "google/protobuf/text_format.h"
#include "proto/probe.pb.h"
#include "proto/probe_report.pb.h"
#include "proto/worker.pb.h"
#include "worker/cuda/communicators.h"
#include "worker/cuda/device.h"
#include "worker/cuda/rank_runner.h"
#include "worker/probe/gpu_inventory.h"
#include "worker/probe/probe_exit_codes.h"
#include "worker/probe/probe_report.h"
#include "worker/probe/probe_spec.h"
#include "worker/probe/unique_id_hex.h"
#include "worker/probe_result_builder.h"

ABSL_FLAG(std::string, assignment, "",
          "Path of the paratune.v1.ProbeAssignment to run: binary protobuf, or text format "
          "when the name ends in .textproto, .txtpb or .pbtxt. The probe runs the ranks of "
          "assignment.gang[gang_index] on the CUDA devices of assignment.gpu_indices.");
ABSL_FLAG(std::string, result, "",
          "Path to write the probe's paratune.v1.ProbeReport to, for the worker that runs it "
          "(binary protobuf, replaced atomically); empty prints the paratune.v1.ProbeResult the "
          "worker would make of it in text format on stdout.");
ABSL_FLAG(std::string, nccl_id, "",
          "For the members of a gang other than gang[0]: the NCCL unique id (hex) that "
          "gang[0]'s probe wrote to its --nccl_id_out and the scheduler relayed.");
ABSL_FLAG(std::string, nccl_id_out, "",
          "For gang[0] of a gang: where to write the NCCL unique id (hex) it creates, for the "
          "worker to relay to the other members. The probe then waits for them in NCCL.");
ABSL_FLAG(bool, list_gpus, false,
          "Print this machine's CUDA devices, one paratune.v1.Gpu in text format per line, "
          "and exit (the worker registers them).");

namespace paratune {
namespace {

constexpr char kUsage[] =
    "runs one probe of a 4D-parallel configuration on this machine's GPUs.\n"
    "\n"
    "For every rank of the assignment's gang member, a thread on its GPU allocates the memory "
    "model's footprint of the rank's pipeline stage, runs the warm-up and timed training "
    "steps of its shard of the Llama model (bf16 GEMMs, attention, RMSNorm, SwiGLU, the "
    "tensor-, context-, pipeline- and data-parallel collectives over NCCL, Adam), one "
    "instrumented step for the phase times and nccl-tests-style benchmarks of each "
    "communicator, then writes its report (or prints the ProbeResult the worker makes of it). "
    "An allocation failure is a measured OUT_OF_MEMORY result.\n"
    "\n"
    "Exit status: 0 when the result was written (whatever its outcome) or --list_gpus listed "
    "GPUs; 1 when no result could be written; 2 for bad flags or an assignment the probe "
    "rejects; 3 when --list_gpus finds no usable GPU.\n"
    "\n"
    "Usage: paratune-probe --assignment=PATH [--result=PATH] [--nccl_id=HEX | "
    "--nccl_id_out=PATH]\n"
    "       paratune-probe --list_gpus\n";

// An assignment is a few kilobytes of text proto; anything near this is the wrong file.
constexpr int64_t kMaxAssignmentBytes = 16 << 20;

absl::StatusOr<v1::ProbeAssignment> ReadAssignment(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("--assignment is required");
  absl::StatusOr<std::string> contents = ReadSmallFile(path, kMaxAssignmentBytes);
  if (!contents.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--assignment: ", contents.status().message()));
  }
  v1::ProbeAssignment assignment;
  const bool text = absl::EndsWith(path, ".textproto") || absl::EndsWith(path, ".txtpb") ||
                    absl::EndsWith(path, ".pbtxt");
  const bool parsed = text ? google::protobuf::TextFormat::ParseFromString(*contents, &assignment)
                           : assignment.ParseFromString(*contents);
  if (!parsed) {
    return absl::InvalidArgumentError(absl::StrCat("--assignment (\"", path, "\") is not a ",
                                                   text ? "text-format" : "binary",
                                                   " paratune.v1.ProbeAssignment"));
  }
  return assignment;
}

// The world's NCCL unique id: created here unless another gang member's probe created it.
absl::StatusOr<ncclUniqueId> WorldId(const ProbeSpec& spec) {
  const std::string given = absl::GetFlag(FLAGS_nccl_id);
  const std::string out = absl::GetFlag(FLAGS_nccl_id_out);
  if (spec.spans_processes() && !spec.creates_nccl_id()) {
    if (given.empty()) {
      return absl::InvalidArgumentError(
          "--nccl_id is required for a gang member other than gang[0]");
    }
    absl::StatusOr<std::string> bytes = DecodeUniqueId(given, sizeof(ncclUniqueId));
    if (!bytes.ok()) return bytes.status();
    ncclUniqueId id;
    std::copy(bytes->begin(), bytes->end(), id.internal);
    return id;
  }
  if (!given.empty()) {
    return absl::InvalidArgumentError(
        "--nccl_id is only for gang members other than gang[0]; this probe creates the id");
  }
  if (spec.spans_processes() && out.empty()) {
    return absl::InvalidArgumentError("--nccl_id_out is required for gang[0] of a gang");
  }
  absl::StatusOr<ncclUniqueId> id = NewNcclUniqueId();
  if (!id.ok() || out.empty()) return id;
  const absl::Status written = WriteFileAtomically(
      out, EncodeUniqueId(absl::string_view(id->internal, sizeof(id->internal))));
  if (!written.ok()) return written;
  return id;
}

// The report for the worker (--result), or for people the result the worker would make of it.
absl::Status WriteResult(const v1::ProbeReport& report, const v1::ProbeResult& result) {
  const std::string path = absl::GetFlag(FLAGS_result);
  if (path.empty()) {
    std::string text;
    google::protobuf::TextFormat::PrintToString(result, &text);
    std::fputs(text.c_str(), stdout);
    return absl::OkStatus();
  }
  return WriteFileAtomically(path, report.SerializeAsString());
}

int ListGpusAndExit() {
  absl::StatusOr<std::vector<v1::Gpu>> gpus = ListGpus();
  if (!gpus.ok() || gpus->empty()) {
    std::fprintf(
        stderr, "paratune-probe: no usable CUDA device: %s\n",
        gpus.ok() ? "cudaGetDeviceCount found none" : std::string(gpus.status().message()).c_str());
    return kProbeExitNoGpu;
  }
  for (const v1::Gpu& gpu : *gpus) std::printf("%s\n", FormatGpuLine(gpu).c_str());
  return kProbeExitResultWritten;
}

// What the rank threads report, shared with them for as long as any of them runs (the
// process may end while some still wait in a collective).
struct RankReports {
  absl::Mutex mu;
  int64_t running ABSL_GUARDED_BY(mu) = 0;
  absl::Status first_error ABSL_GUARDED_BY(mu);
  // Every rank ends with the same measurement (it is reduced over all ranks); the first kept.
  std::optional<ProbeMeasurement> measurement ABSL_GUARDED_BY(mu);
  // Whether the main thread can stop waiting: every rank finished, or one failed.
  bool decided ABSL_GUARDED_BY(mu) = false;
};

// Runs every local rank on its own thread and returns the measurement, or the first error a
// rank hits. After an error the other ranks may be waiting in a collective for the failed
// one and never return, so the caller ends the process rather than joining them.
absl::StatusOr<ProbeMeasurement> RunLocalRanks(const ProbeSpec& spec, const ncclUniqueId& id,
                                               std::vector<std::thread>& threads) {
  auto reports = std::make_shared<RankReports>();
  {
    absl::MutexLock lock(&reports->mu);
    reports->running = spec.local_ranks();
  }
  for (int64_t local = 0; local < spec.local_ranks(); ++local) {
    threads.emplace_back([&spec, &id, reports, local] {
      absl::StatusOr<ProbeMeasurement> measured = RunRank(spec, local, id);
      absl::MutexLock lock(&reports->mu);
      --reports->running;
      if (measured.ok()) {
        if (!reports->measurement.has_value()) reports->measurement = *std::move(measured);
      } else if (reports->first_error.ok()) {
        reports->first_error = absl::Status(
            measured.status().code(),
            absl::StrCat("rank ", spec.first_rank() + local, " (GPU ", spec.gpu_indices()[local],
                         "): ", measured.status().message()));
      }
      reports->decided = reports->running == 0 || !reports->first_error.ok();
    });
  }
  absl::MutexLock lock(&reports->mu);
  reports->mu.Await(absl::Condition(&reports->decided));
  if (!reports->first_error.ok()) return reports->first_error;
  return *reports->measurement;
}

int Main() {
  if (absl::GetFlag(FLAGS_list_gpus)) return ListGpusAndExit();
  absl::StatusOr<v1::ProbeAssignment> assignment = ReadAssignment(absl::GetFlag(FLAGS_assignment));
  absl::StatusOr<ProbeSpec> spec =
      assignment.ok() ? ProbeSpec::FromAssignment(*assignment) : assignment.status();
  const absl::Status runs = spec.ok() ? CheckCudaProbeRuns(*spec) : spec.status();
  if (!runs.ok()) {
    std::fprintf(stderr, "paratune-probe: %s\n", std::string(runs.message()).c_str());
    return kProbeExitUsage;
  }
  absl::StatusOr<ncclUniqueId> id = WorldId(*spec);
  if (!id.ok()) {
    std::fprintf(stderr, "paratune-probe: %s\n", std::string(id.status().message()).c_str());
    return id.status().code() == absl::StatusCode::kInvalidArgument ? kProbeExitUsage
                                                                    : kProbeExitNoResult;
  }
  std::fprintf(stderr, "paratune-probe: %s: ranks %lld..%lld of %lld on GPUs %s\n",
               assignment->name().c_str(), static_cast<long long>(spec->first_rank()),
               static_cast<long long>(spec->first_rank() + spec->local_ranks() - 1),
               static_cast<long long>(spec->layout().world_size()),
               absl::StrJoin(spec->gpu_indices(), ",").c_str());
  std::vector<std::thread> threads;
  absl::StatusOr<ProbeMeasurement> measurement = RunLocalRanks(*spec, *id, threads);
  const v1::ProbeReport report = measurement.ok() ? ReportFromMeasurement(*spec, *measurement)
                                                  : ReportFromError(measurement.status());
  // Its wall time is the worker's to measure.
  const v1::ProbeResult result =
      BuildProbeResult(*spec, "cuda", RunFromReport(*spec, report), /*measured_wall_seconds=*/0);
  const absl::Status written = WriteResult(report, result);
  if (!written.ok()) {
    std::fprintf(stderr, "paratune-probe: %s\n", std::string(written.message()).c_str());
  }
  std::fprintf(stderr, "paratune-probe: %s: %s\n", v1::ProbeOutcome_Name(result.outcome()).c_str(),
               result.message().c_str());
  const int status = written.ok() ? kProbeExitResultWritten : kProbeExitNoResult;
  if (!measurement.ok()) {
    // Ranks still waiting for the failed one never return; leave without joining them.
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(status);
  }
  for (std::thread& thread : threads) thread.join();
  return status;
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  const std::vector<char*> positional =
      paratune::ParseFlags(argc, argv, paratune::kUsage, "worker/cuda/probe_main.cc");
  if (!paratune::NoPositionalArguments(positional, "paratune-probe"))
    return paratune::kProbeExitUsage;
  return paratune::Main();
}
