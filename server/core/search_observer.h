// Follows one search (WatchSearch).
#ifndef PARATUNE_SERVER_CORE_SEARCH_OBSERVER_H_
#define PARATUNE_SERVER_CORE_SEARCH_OBSERVER_H_

#include "proto/autotuner_service.pb.h"

namespace paratune {

// The scheduler calls it with its lock held: an implementation must return quickly and must
// not call back into the Scheduler.
class SearchObserver {
 public:
  virtual ~SearchObserver() = default;
  // `change` is what changed, as WatchSearch sends it after its first response: the search's
  // own fields after the change, the candidates it changed and the events that say so, with
  // their time and kind (no text: readers render it). Called only once the change is stored.
  // After a call with an ended search (SUCCEEDED, FAILED, CANCELLED) there are no more calls.
  virtual void OnSearchChanged(const v1::WatchSearchResponse& change) = 0;
  // The scheduler is shutting down; there are no more calls.
  virtual void OnSchedulerShutdown() = 0;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_SEARCH_OBSERVER_H_
