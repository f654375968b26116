// Text for people about searches, shared by the server (events, stop reasons) and the CLI:
// configurations, probe outcomes and results.
#ifndef PARATUNE_CONVERT_SEARCH_TEXT_H_
#define PARATUNE_CONVERT_SEARCH_TEXT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "proto/autotuner_service.pb.h"
#include "proto/estimate.pb.h"
#include "proto/probe.pb.h"
#include "proto/search.pb.h"
#include "proto/specs.pb.h"
#include "proto/worker.pb.h"

namespace paratune {

// "dp4 tp2 pp1 cp2 mbs1", with " vp2", " ep8", " etp1" (other than tp), " sp=off" (tp > 1
// without sequence parallelism) and " recompute=selective|full" when set; ep and etp only a
// mixture-of-experts model's configurations set.
std::string DescribeConfig(const v1::ParallelConfig& config);

// The parts of DescribeConfig that tell `config` apart from the other candidates of a search
// over `space`, in the same order, for a narrow column: without dp (the search's GPUs over
// tp x pp x cp, fixed by the rest), and without mbs, vp or recompute where the space tries
// one value of it (a space of vp 1,2 and recompute none,full: "tp1 pp2 cp2 mbs2 vp2
// recompute=full").
std::string DescribeConfigApart(const v1::ParallelConfig& config, const v1::SearchSpace& space);

// "none", "selective" or "full", as --recompute_modes takes them; "unspecified" for
// RECOMPUTE_UNSPECIFIED.
std::string RecomputeModeName(v1::Recompute mode);

// One change a plan's advice names (PlanResponse.advice) and its candidates: "recompute
// modes none, selective, full: 2 candidates", "4 nodes: 3 candidates", "h200-141gb GPUs: 5
// candidates", "fp8 with fp8 weights (fp8_param_gather): 1 candidate", "sequence 1024: 1
// candidate", "micro-batch sizes 1, 2: 3 candidates".
std::string DescribePlanAdvice(const v1::PlanAdvice& advice);

// "out of memory", "timeout", "crash", "infrastructure error", "not measured", "ok".
std::string DescribeOutcome(v1::ProbeOutcome outcome);

// "402.1 TFLOP/s per GPU (simulated)" for PROBE_OK, else the outcome and the message, e.g.
// "out of memory: estimated peak 90.1 GiB exceeds 79.6 GiB (simulated)".
std::string DescribeResult(const v1::ProbeResult& result);

// A GPU by the catalog type the server matched it to, "h100-80gb"; when `gpu_type` is empty,
// by the device name the worker registered, "unknown GPU NVIDIA GH200 480GB" ("unknown GPU"
// when that is empty too).
std::string DescribeGpuType(const std::string& gpu_type, const std::string& gpu_name);

// "2 x 8 h100-80gb (sim), 1 x 4 a100-40gb (sim, replay)": workers grouped by what they are,
// largest first, for waiting reasons and the CLI's warnings. "none" when empty.
std::string DescribeFleet(const std::vector<const v1::Worker*>& workers);

// `count` such GPUs: "8 x h100-80gb", "8 x unknown GPU NVIDIA GH200 480GB".
std::string DescribeGpus(int64_t count, const std::string& gpu_type, const std::string& gpu_name);

// "ranks 8-15" (`count` ranks from `first`), or "rank 5" for one.
std::string DescribeRanks(int64_t first, int64_t count);

// Where a probe ran, from result.ran_on: "ran on workers/3 (sim-node-1, 8 x h100-80gb, ranks
// 0-7) + workers/4 (sim-node-2, 8 x h100-80gb, ranks 8-15)", a missing hostname left out and
// one rank said "rank 5". Past 4 workers, the first 3 and "+ 13 more workers (ranks 24-127)".
// "" when ran_on is empty (a result recorded before the server filled it in).
std::string DescribeRanOn(const v1::ProbeResult& result);

// The candidates memory lets a search probe: "41 memory-safe" when it probes SAFE ones only,
// "45 SAFE or RISKY (4 RISKY)" when it probes RISKY ones too (SearchCounts.memory_safe then
// counts them).
std::string DescribeMemoryEligible(const v1::SearchCounts& counts, bool probes_risky);

// What is known of a configuration's memory on its GPU: the peak its probe reported and what
// that leaves to spare, next to the estimate, e.g. "peak memory 71.20 of 79.65 GiB measured,
// 8.45 GiB to spare (estimated 76.10 GiB, 96% of capacity, RISKY)"; "modelled" for the sim.
// A short probe's peak is its full step's (every stage holds as many micro-batches as in the
// full step). Without a reported peak, the estimate alone, "peak memory not measured
// (estimated ...)".
std::string DescribeMemoryHeadroom(const v1::MemoryEstimate& estimate,
                                   const v1::ProbeResult& result);

}  // namespace paratune

#endif  // PARATUNE_CONVERT_SEARCH_TEXT_H_
