#include "server/core/lease_table.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/core/lease.h"

namespace paratune {

void LeaseTable::Add(internal::LeaseState lease) {
  const std::string probe = lease.probe();
  leases_[probe] = std::move(lease);
}

absl::StatusOr<std::pair<internal::LeaseState*, int>> LeaseTable::FindMembership(
    absl::string_view probe, int64_t worker_id, absl::string_view worker_name) {
  auto it = leases_.find(probe);
  if (it != leases_.end()) {
    const int member = MemberIndex(it->second, worker_id);
    if (member >= 0) return std::make_pair(&it->second, member);
  }
  return absl::FailedPreconditionError(
      absl::StrCat("probe (\"", probe.substr(0, 128), "\") is not leased to ", worker_name,
                   "; it was cancelled, re-leased or reported already"));
}

const internal::LeaseState* LeaseTable::Find(absl::string_view probe) const {
  auto it = leases_.find(probe);
  return it == leases_.end() ? nullptr : &it->second;
}

internal::LeaseState LeaseTable::End(const std::string& probe) {
  auto it = leases_.find(probe);
  internal::LeaseState lease = std::move(it->second);
  leases_.erase(it);
  return lease;
}

std::vector<std::string> LeaseTable::OfSearch(int64_t search_id) const {
  std::vector<std::string> probes;
  for (const auto& [probe, lease] : leases_) {
    if (lease.search_id() == search_id) probes.push_back(probe);
  }
  std::sort(probes.begin(), probes.end());
  return probes;
}

std::vector<std::string> LeaseTable::Overdue(absl::Time now) const {
  std::vector<std::string> probes;
  for (const auto& [probe, lease] : leases_) {
    if (now > absl::FromUnixNanos(lease.expires_unix_nanos())) probes.push_back(probe);
  }
  std::sort(probes.begin(), probes.end());
  return probes;
}

bool LeaseTable::IsLeased(int64_t search_id, int64_t candidate) const {
  return std::any_of(leases_.begin(), leases_.end(), [&](const auto& entry) {
    return entry.second.search_id() == search_id && entry.second.candidate() == candidate;
  });
}

void LeaseTable::RememberReport(const std::string& probe, int64_t worker_id,
                                const v1::ProbeResult& result) {
  auto key = std::make_pair(probe, worker_id);
  if (reports_.insert_or_assign(key, result.SerializeAsString()).second) {
    report_order_.push_back(std::move(key));
  }
  while (report_order_.size() > kRememberedReports) {
    reports_.erase(report_order_.front());
    report_order_.pop_front();
  }
}

bool LeaseTable::IsRepeatedReport(absl::string_view probe, int64_t worker_id,
                                  const v1::ProbeResult& result) const {
  auto it = reports_.find(std::make_pair(std::string(probe), worker_id));
  // Serialization is deterministic here: a ProbeResult has no map fields.
  return it != reports_.end() && it->second == result.SerializeAsString();
}

}  // namespace paratune
