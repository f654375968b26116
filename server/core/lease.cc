#include "server/core/lease.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/core/gang_result.h"
#include "server/core/resource_names.h"

namespace paratune {

internal::LeaseState MakeLease(const std::string& probe, int64_t search_id, int64_t candidate,
                               v1::ProbeScope scope, int64_t num_ranks,
                               const std::vector<RankShare>& shares,
                               const std::vector<const v1::Worker*>& workers,
                               int64_t expires_unix_nanos) {
  internal::LeaseState lease;
  lease.set_probe(probe);
  lease.set_search_id(search_id);
  lease.set_candidate(candidate);
  lease.set_scope(scope);
  lease.set_num_ranks(num_ranks);
  lease.set_expires_unix_nanos(expires_unix_nanos);
  for (size_t i = 0; i < shares.size(); ++i) {
    const v1::Worker& worker = *workers[i];
    internal::LeaseMember& member = *lease.add_members();
    member.set_worker_id(shares[i].worker_id);
    member.set_first_rank(shares[i].first_rank);
    member.set_num_ranks(shares[i].num_ranks);
    member.set_hostname(worker.hostname());
    member.set_gpu_name(worker.gpus(0).name());
    member.set_gpu_type(worker.gpu_type());
    for (int64_t g = 0; g < shares[i].num_ranks; ++g) {
      member.add_gpu_indices(worker.gpus(static_cast<int>(g)).index());
    }
  }
  return lease;
}

v1::ProbeAssignment MemberAssignment(const v1::Search& search, const internal::LeaseState& lease,
                                     int member) {
  const v1::SearchSpec& spec = search.spec();
  v1::ProbeAssignment assignment;
  assignment.set_name(lease.probe());
  assignment.set_backend(spec.probe().backend());
  assignment.set_command_template(spec.probe().command_template());
  *assignment.mutable_model() = spec.model();
  *assignment.mutable_training() = spec.training();
  *assignment.mutable_cluster() = spec.cluster();
  *assignment.mutable_config() = search.candidates(lease.candidate()).config();
  assignment.set_scope(lease.scope());
  assignment.set_warmup_steps(spec.probe().warmup_steps());
  assignment.set_timed_steps(lease.timed_steps() > 0 ? lease.timed_steps()
                                                     : spec.probe().timed_steps());
  assignment.set_deadline_seconds(lease.deadline_seconds() > 0 ? lease.deadline_seconds()
                                                               : spec.probe().deadline_seconds());
  *assignment.mutable_micro_batch_counts() = lease.micro_batch_counts();
  assignment.set_seed(spec.seed());
  assignment.set_num_ranks(lease.num_ranks());
  for (const internal::LeaseMember& share : lease.members()) {
    v1::GangMember& gang_member = *assignment.add_gang();
    gang_member.set_worker(WorkerName(share.worker_id()));
    gang_member.set_hostname(share.hostname());
    gang_member.set_first_rank(share.first_rank());
    gang_member.set_num_ranks(share.num_ranks());
  }
  assignment.set_gang_index(member);
  *assignment.mutable_gpu_indices() = lease.members(member).gpu_indices();
  return assignment;
}

int MemberIndex(const internal::LeaseState& lease, int64_t worker_id) {
  for (int i = 0; i < lease.members_size(); ++i) {
    if (lease.members(i).worker_id() == worker_id) return i;
  }
  return -1;
}

bool AllMembersReported(const internal::LeaseState& lease) {
  return std::all_of(lease.members().begin(), lease.members().end(),
                     [](const internal::LeaseMember& member) { return member.has_result(); });
}

std::vector<v1::ProbeHost> LeaseHosts(const internal::LeaseState& lease) {
  std::vector<v1::ProbeHost> hosts;
  for (const internal::LeaseMember& member : lease.members()) {
    v1::ProbeHost& host = hosts.emplace_back();
    host.set_worker(WorkerName(member.worker_id()));
    host.set_hostname(member.hostname());
    host.set_first_rank(member.first_rank());
    host.set_num_ranks(member.num_ranks());
    host.set_gpu_name(member.gpu_name());
    host.set_gpu_type(member.gpu_type());
  }
  return hosts;
}

std::string MemberLabel(const internal::LeaseState& lease, int member) {
  const std::string name = WorkerName(lease.members(member).worker_id());
  if (lease.members_size() == 1) return name;
  return absl::StrCat(name, " (member ", member + 1, " of ", lease.members_size(), ")");
}

ProbeEnding EndingOf(const internal::LeaseState& ended, int member,
                     const v1::ProbeResult& reported) {
  if (reported.outcome() != v1::PROBE_OK) {
    ProbeEnding ending{reported, MemberLabel(ended, member)};
    if (ended.members_size() > 1) {
      ending.result.set_message(absl::StrCat(ending.where, ": ", reported.message()));
    }
    return ending;
  }
  std::vector<v1::ProbeResult> by_member;
  std::vector<std::string> members;
  for (const internal::LeaseMember& m : ended.members()) {
    by_member.push_back(m.result());
    members.push_back(WorkerName(m.worker_id()));
  }
  return ProbeEnding{CombineGangResults(by_member), absl::StrJoin(members, " + ")};
}

absl::StatusOr<bool> AcceptRendezvousToken(internal::LeaseState& lease, int member,
                                           const std::string& token) {
  if (token.empty()) return false;
  if (member != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("token (", token.size(), " bytes) may only be sent by gang[0] (",
                     WorkerName(lease.members(0).worker_id()), "); ",
                     WorkerName(lease.members(member).worker_id()), " is gang[", member, "]"));
  }
  if (lease.rendezvous_token() == token) return false;
  if (!lease.rendezvous_token().empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("probe ", lease.probe(), " already has a different rendezvous token"));
  }
  lease.set_rendezvous_token(token);
  return true;
}

}  // namespace paratune
