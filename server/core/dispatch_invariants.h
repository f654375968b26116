// The invariant of Dispatch (dispatch.h) as a check, for tests: a worker is WORKER_BUSY,
// naming the probe in current_probe, exactly when it holds a share of a live lease that it
// has not reported yet; LOST and IDLE workers hold nothing; and every live lease has a member
// left to report, each on its own registered, live worker.
#ifndef PARATUNE_SERVER_CORE_DISPATCH_INVARIANTS_H_
#define PARATUNE_SERVER_CORE_DISPATCH_INVARIANTS_H_

#include <string>
#include <vector>

#include "server/core/dispatch.h"

namespace paratune {

// One line per violation, naming the worker or lease ("workers/1 is WORKER_BUSY but holds no
// share of a live lease"); empty when the invariant holds.
std::vector<std::string> DispatchViolations(const Dispatch& dispatch);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_DISPATCH_INVARIANTS_H_
