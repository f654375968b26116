// Text for people about searches, shared by the server (events, stop reasons) and the CLI:
// configurations, probe outcomes and results.
#ifndef PARATUNE_CONVERT_SEARCH_TEXT_H_
#define PARATUNE_CONVERT_SEARCH_TEXT_H_

#include <string>

#include "proto/probe.pb.h"
#include "proto/specs.pb.h"

namespace paratune {

// "dp4 tp2 pp1 cp2 mbs1", with " vp2", " sp=off" (tp > 1 without sequence parallelism) and
// " recompute=selective|full" when set.
std::string DescribeConfig(const v1::ParallelConfig& config);

// "out of memory", "timeout", "crash", "infrastructure error", "not measured", "ok".
std::string DescribeOutcome(v1::ProbeOutcome outcome);

// "402.1 TFLOP/s per GPU (simulated)" for PROBE_OK, else the outcome and the message, e.g.
// "out of memory: estimated peak 90.1 GiB exceeds 79.6 GiB (simulated)".
std::string DescribeResult(const v1::ProbeResult& result);

}  // namespace paratune

#endif  // PARATUNE_CONVERT_SEARCH_TEXT_H_
