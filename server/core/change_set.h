// The scheduler's changes that are not stored yet, and what to tell observers once they are
// (DESIGN.md §7): one operation's changes commit to the SearchStore in one transaction, and
// observers hear of a change only after it committed. A failed commit keeps everything for
// the next one, so nothing is told that is not stored and nothing is lost while the store is
// busy.
#ifndef PARATUNE_SERVER_CORE_CHANGE_SET_H_
#define PARATUNE_SERVER_CORE_CHANGE_SET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "proto/autotuner_service.pb.h"
#include "proto/search.pb.h"
#include "proto/search_event.pb.h"
#include "proto/worker.pb.h"
#include "server/core/scheduler_state.pb.h"
#include "server/core/search_observer.h"
#include "server/core/search_store.h"

namespace paratune {

// Thread-compatible: the scheduler guards it with its own mutex.
class ChangeSet {
 public:
  // Search `id` changed at `now` as `events` say (each logged as its own line; none for a
  // change no one needs to read about): `update` joins what is pending for it (its fields
  // replace the pending ones; its candidates replace those of the same n).
  void PutSearch(int64_t id, SearchUpdate update, const std::vector<v1::SearchEvent>& events,
                 absl::Time now);
  // Once the changes are stored, `observers` are told `change`.
  void Tell(const std::vector<SearchObserver*>& observers, v1::WatchSearchResponse change);
  void PutWorker(int64_t id, const v1::Worker& worker);
  void RemoveWorker(int64_t id);
  void PutLease(const internal::LeaseState& lease);
  void EndLease(const std::string& probe);
  // Probes were queued (or gang shares left for other workers): dispatchers must look again.
  // A lease taken before the queueing is stored commits with it, in the same transaction.
  void NoteProbesQueued() { probes_queued_ = true; }
  // A queued probe was passed over for its principal's probe limit: the next lease to end
  // (EndLease) notes probes queued, since the probe may fit then.
  void NoteHeldBackByLimit() { held_back_by_limit_ = true; }

  // Applies every pending change to `store` in one transaction. On success tells the
  // observers in order and returns OK; on failure keeps every change and notice for the next
  // Commit and returns the store's error.
  absl::Status Commit(SearchStore& store);
  // Drops every pending change and notice (a refused search that must leave no trace).
  void Discard();
  // Whether probes were queued since the last call.
  bool TakeProbesQueued();
  // `observer` is gone: pending notices must not reach it.
  void ForgetObserver(SearchObserver* observer);

 private:
  struct Notice {
    std::vector<SearchObserver*> observers;
    v1::WatchSearchResponse change;
  };

  StoreBatch batch_;
  std::vector<Notice> notices_;
  bool probes_queued_ = false;
  bool held_back_by_limit_ = false;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_CHANGE_SET_H_
