#include "server/core/lease.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;

v1::Search TwoCandidateSearch() {
  v1::Search search;
  search.set_name("searches/3");
  v1::SearchSpec& spec = *search.mutable_spec();
  spec.mutable_model()->set_preset("llama3.1-8b");
  spec.mutable_cluster()->set_num_nodes(2);
  spec.mutable_probe()->set_backend("command");
  spec.mutable_probe()->set_command_template("megatron-gpt");
  spec.mutable_probe()->set_warmup_steps(2);
  spec.mutable_probe()->set_timed_steps(5);
  spec.mutable_probe()->set_deadline_seconds(300);
  spec.set_seed(9);
  search.add_candidates()->mutable_config()->set_tensor_parallel(1);
  search.add_candidates()->mutable_config()->set_tensor_parallel(4);
  return search;
}

v1::Worker NodeWorker(const std::string& hostname, std::vector<int64_t> gpu_indices) {
  v1::Worker worker;
  worker.set_hostname(hostname);
  worker.set_gpu_type("h100-80gb");
  for (int64_t index : gpu_indices) {
    v1::Gpu& gpu = *worker.add_gpus();
    gpu.set_index(index);
    gpu.set_name("NVIDIA H100 80GB HBM3");
  }
  return worker;
}

internal::LeaseState GangLease() {
  const v1::Worker a = NodeWorker("node-a", {0, 1, 2, 3, 4, 5, 6, 7});
  const v1::Worker b = NodeWorker("node-b", {3, 5, 6, 7});
  return MakeLease("searches/3/candidates/1/probes/2", 3, 1, v1::PROBE_SCOPE_REPLICA, 8,
                   {{4, 0, 4}, {6, 4, 4}}, {&a, &b}, 1'000);
}

TEST(LeaseTest, MemberAssignmentsDescribeTheWholeGangAndTheirOwnGpus) {
  const internal::LeaseState lease = GangLease();
  const v1::ProbeAssignment second = MemberAssignment(TwoCandidateSearch(), lease, 1);
  EXPECT_EQ(second.name(), "searches/3/candidates/1/probes/2");
  EXPECT_EQ(second.config().tensor_parallel(), 4);
  EXPECT_EQ(second.backend(), "command");
  EXPECT_EQ(second.command_template(), "megatron-gpt");
  EXPECT_EQ(second.scope(), v1::PROBE_SCOPE_REPLICA);
  EXPECT_EQ(second.timed_steps(), 5);
  EXPECT_EQ(second.seed(), 9u);
  EXPECT_EQ(second.num_ranks(), 8);
  EXPECT_EQ(second.gang_index(), 1);
  ASSERT_EQ(second.gang_size(), 2);
  EXPECT_EQ(second.gang(0).worker(), "workers/4");
  EXPECT_EQ(second.gang(0).hostname(), "node-a");
  EXPECT_EQ(second.gang(1).first_rank(), 4);
  // Its first four GPUs by registration order, whatever their indices.
  EXPECT_THAT(second.gpu_indices(), ElementsAre(3, 5, 6, 7));
  EXPECT_THAT(MemberAssignment(TwoCandidateSearch(), lease, 0).gpu_indices(),
              ElementsAre(0, 1, 2, 3));
}

TEST(LeaseTest, MembersAndTheirReports) {
  internal::LeaseState lease = GangLease();
  EXPECT_EQ(MemberIndex(lease, 6), 1);
  EXPECT_EQ(MemberIndex(lease, 5), -1);
  EXPECT_FALSE(AllMembersReported(lease));
  lease.mutable_members(0)->mutable_result()->set_outcome(v1::PROBE_OK);
  EXPECT_FALSE(AllMembersReported(lease));
  lease.mutable_members(1)->mutable_result()->set_outcome(v1::PROBE_OK);
  EXPECT_TRUE(AllMembersReported(lease));
}

TEST(LeaseTest, HostsAndMembersSayWhereItRuns) {
  const internal::LeaseState lease = GangLease();
  EXPECT_EQ(MemberLabel(lease, 1), "workers/6 (member 2 of 2)");
  const std::vector<v1::ProbeHost> hosts = LeaseHosts(lease);
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[1].worker(), "workers/6");
  EXPECT_EQ(hosts[1].hostname(), "node-b");
  EXPECT_EQ(hosts[1].first_rank(), 4);
  EXPECT_EQ(hosts[1].num_ranks(), 4);
  EXPECT_EQ(hosts[1].gpu_name(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(hosts[1].gpu_type(), "h100-80gb");
}

v1::ProbeResult Ok(double tflops, int64_t peak_memory) {
  v1::ProbeResult result;
  result.set_outcome(v1::PROBE_OK);
  result.add_step_times_seconds(1);
  result.set_mean_step_time_seconds(1);
  result.set_model_tflops_per_gpu(tflops);
  result.set_peak_memory_bytes(peak_memory);
  return result;
}

TEST(LeaseTest, EndingOfAGangCombinesOkResultsAndNamesTheFailingMember) {
  internal::LeaseState lease = GangLease();
  *lease.mutable_members(0)->mutable_result() = Ok(300, 10);
  *lease.mutable_members(1)->mutable_result() = Ok(300, 20);
  const ProbeEnding ok = EndingOf(lease, 1, Ok(300, 20));
  EXPECT_EQ(ok.where, "workers/4 + workers/6");
  EXPECT_EQ(ok.result.peak_memory_bytes(), 20);

  v1::ProbeResult oom;
  oom.set_outcome(v1::PROBE_OUT_OF_MEMORY);
  oom.set_message("CUDA out of memory");
  const ProbeEnding failed = EndingOf(GangLease(), 1, oom);
  EXPECT_EQ(failed.where, "workers/6 (member 2 of 2)");
  EXPECT_EQ(failed.result.message(), "workers/6 (member 2 of 2): CUDA out of memory");
}

TEST(LeaseTest, RendezvousTokenComesFromGangZeroOnce) {
  internal::LeaseState lease = GangLease();
  EXPECT_FALSE(*AcceptRendezvousToken(lease, 0, ""));
  EXPECT_EQ(AcceptRendezvousToken(lease, 1, "id").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(*AcceptRendezvousToken(lease, 0, "nccl-id"));
  EXPECT_EQ(lease.rendezvous_token(), "nccl-id");
  EXPECT_FALSE(*AcceptRendezvousToken(lease, 0, "nccl-id"));
  EXPECT_EQ(AcceptRendezvousToken(lease, 0, "other").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace paratune
