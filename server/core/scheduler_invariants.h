// What must hold of a Scheduler between calls, as a check for tests (scheduler_test_fixture.h
// runs it after every call): Dispatch's invariant (dispatch_invariants.h); every search left
// in the active map has not ended (an ended one leaves at the end of the change that ended
// it); each lease runs the RUNNING candidate of a search that has not ended, under the
// candidate's current attempt, and each RUNNING candidate has its lease; the queue holds
// exactly the QUEUED candidates; each search's progress, kept as its candidates change, is
// what counting them says (convert/search_progress.h, ProgressOf). Also compares the store with
// what the scheduler holds, and plants a violation so that a test can show the check failing.
#ifndef PARATUNE_SERVER_CORE_SCHEDULER_INVARIANTS_H_
#define PARATUNE_SERVER_CORE_SCHEDULER_INVARIANTS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "server/core/scheduler.h"

namespace paratune {

// A class only to be the friend of Scheduler and Dispatch. Each call takes the scheduler's
// lock.
class SchedulerInvariants {
 public:
  // One line per violation, naming the worker, lease, search or candidate; empty when the
  // invariants hold.
  static std::vector<std::string> Violations(Scheduler& scheduler);
  // One line per worker or lease that the store holds otherwise than the scheduler: empty
  // whenever the last commit succeeded, since each transition records what it changed.
  static std::vector<std::string> StoreDifferences(Scheduler& scheduler);
  // Marks worker `worker` (workers/{n}, registered) BUSY without a lease and records it for the
  // next commit, as a faulty transition would: the store agrees, and only Violations can tell.
  static void MarkBusyWithoutLease(Scheduler& scheduler, absl::string_view worker);
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_SCHEDULER_INVARIANTS_H_
