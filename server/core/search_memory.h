// How a search's probe results calibrate its memory estimate (estimator/memory_calibration.h,
// docs/memory.md): one rule for what a result says of memory, used by the ADAPTIVE policy to
// skip what will not fit and by the search's record for its calibration (which a client's
// view turns into each candidate's calibrated memory: convert/search_view.h).
#ifndef PARATUNE_SERVER_CORE_SEARCH_MEMORY_H_
#define PARATUNE_SERVER_CORE_SEARCH_MEMORY_H_

#include "estimator/memory_calibration.h"
#include "proto/search.pb.h"

namespace paratune {

// Adds what `result` says of the memory of a configuration estimated at `estimated_bytes`:
// an OK result's measured peak (against the backend's own estimate of what it ran when it
// gives one: the cuda probe's, of the stage it allocated), or an out-of-memory bound. Other
// outcomes say nothing of memory. A command probe holds whole shard groups
// (probe_needs.h, ProbeShardGroup), so what it measured is the configuration's memory.
void AddProbeMemory(const v1::ProbeResult& result, double estimated_bytes,
                    MemoryCalibration& calibration);

// The calibration from the first probe of each probed candidate of `search` (its screening
// result when it is being or was confirmed: a confirmation measures the same configuration
// again), on GPUs of its candidates' capacity; `search` has at least one candidate. A search
// that goes on adds each new first probe with AddProbeMemory rather than recomputing this.
MemoryCalibration FirstProbesCalibration(const v1::Search& search);

// Sets search.memory_calibration from `calibration`. Stored with the search: a few numbers,
// whatever its size.
void SetMemoryCalibration(const MemoryCalibration& calibration, v1::Search& search);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_SEARCH_MEMORY_H_
