#include "cli/output.h"

#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/autotuner_service.pb.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

TEST(PrintTest, TextForPeople) {
  std::ostringstream out;
  ASSERT_TRUE(Print(v1::Search(), "text\n", OutputOptions(), out).ok());
  EXPECT_EQ(out.str(), "text\n");
}

TEST(PrintTest, JsonCarriesWhereProbesRanAndTheWorkersGpuType) {
  OutputOptions json;
  json.json = true;
  v1::Search search;
  search.mutable_spec()->mutable_probe()->set_max_launch_failures(5);
  v1::ProbeHost& host = *search.add_candidates()->mutable_probe_result()->add_ran_on();
  host.set_worker("workers/3");
  host.set_hostname("sim-node-1");
  host.set_num_ranks(8);
  host.set_gpu_type("h100-80gb");
  std::ostringstream out;
  ASSERT_TRUE(Print(search, "unused", json, out).ok());
  EXPECT_THAT(out.str(), HasSubstr("\"maxLaunchFailures\": \"5\""));
  EXPECT_THAT(out.str(), HasSubstr("\"ranOn\": ["));
  EXPECT_THAT(out.str(), HasSubstr("\"hostname\": \"sim-node-1\""));

  v1::ListWorkersResponse workers;
  workers.add_workers()->set_gpu_type("h100-80gb");
  out.str("");
  ASSERT_TRUE(Print(workers, "unused", json, out).ok());
  EXPECT_THAT(out.str(), HasSubstr("\"gpuType\": \"h100-80gb\""));
}

}  // namespace
}  // namespace paratune
