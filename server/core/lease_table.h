// The probes leased to workers (DESIGN.md §7): which workers are members of which lease,
// which leases are overdue, and the reports accepted for leases that ended, so that a
// worker's retry of a report whose reply it lost is recognised. It returns facts; what
// follows (freeing the members, storing the change) is Dispatch's (dispatch.h), the one owner
// of a table that changes, and re-queueing or recording is the scheduler's.
#ifndef PARATUNE_SERVER_CORE_LEASE_TABLE_H_
#define PARATUNE_SERVER_CORE_LEASE_TABLE_H_

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/probe.pb.h"
#include "server/core/scheduler_state.pb.h"

namespace paratune {

// Thread-compatible: the scheduler guards it with its own mutex.
class LeaseTable {
 public:
  // Reports remembered after their lease ended; older ones are forgotten first.
  static constexpr size_t kRememberedReports = 4096;

  void Add(internal::LeaseState lease);
  // The lease called `probe`, to change, and the index of worker `worker_id` among its
  // members. FAILED_PRECONDITION naming `worker_name` when the probe is not leased to it.
  absl::StatusOr<std::pair<internal::LeaseState*, int>> FindMembership(
      absl::string_view probe, int64_t worker_id, absl::string_view worker_name);
  bool Contains(absl::string_view probe) const { return leases_.contains(probe); }
  // The lease called `probe`; nullptr when there is none.
  const internal::LeaseState* Find(absl::string_view probe) const;
  // Removes and returns the lease called `probe`, which must exist.
  internal::LeaseState End(const std::string& probe);
  // Every lease, by probe name.
  const absl::flat_hash_map<std::string, internal::LeaseState>& all() const { return leases_; }

  // Names of the leases of search `search_id`, sorted.
  std::vector<std::string> OfSearch(int64_t search_id) const;
  // Names of the leases past their expiry at `now`, sorted.
  std::vector<std::string> Overdue(absl::Time now) const;
  // Whether candidate n of search `search_id` has a lease.
  bool IsLeased(int64_t search_id, int64_t candidate) const;
  int64_t size() const { return static_cast<int64_t>(leases_.size()); }

  // `worker_id` reported `result` for `probe`, and the report was accepted.
  void RememberReport(const std::string& probe, int64_t worker_id, const v1::ProbeResult& result);
  // Whether `worker_id` reported exactly `result` for `probe` before (its lease may have
  // ended since): a retry after a lost reply, to be answered OK again.
  bool IsRepeatedReport(absl::string_view probe, int64_t worker_id,
                        const v1::ProbeResult& result) const;

 private:
  absl::flat_hash_map<std::string, internal::LeaseState> leases_;
  // (probe, worker id) -> the serialized result, and the keys oldest first.
  absl::flat_hash_map<std::pair<std::string, int64_t>, std::string> reports_;
  std::deque<std::pair<std::string, int64_t>> report_order_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_LEASE_TABLE_H_
