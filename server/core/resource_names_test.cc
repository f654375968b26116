#include "server/core/resource_names.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

TEST(ResourceNamesTest, FormatsNames) {
  EXPECT_EQ(SearchName(3), "searches/3");
  EXPECT_EQ(CandidateName(3, 0), "searches/3/candidates/0");
  EXPECT_EQ(ProbeName(3, 1, 2), "searches/3/candidates/1/probes/2");
  EXPECT_EQ(WorkerName(7), "workers/7");
}

TEST(ResourceNamesTest, ParsesWhatItFormats) {
  EXPECT_EQ(ParseSearchName("name", SearchName(42)).value(), 42);
  EXPECT_EQ(ParseWorkerName("worker", WorkerName(7)).value(), 7);
  const ProbeId probe = ParseProbeName("probe", ProbeName(3, 0, 2)).value();
  EXPECT_EQ(probe.search_id, 3);
  EXPECT_EQ(probe.candidate, 0);
  EXPECT_EQ(probe.attempt, 2);
}

TEST(ResourceNamesTest, RejectsMalformedNamesNamingTheField) {
  for (const char* bad :
       {"", "searches/", "searches/0", "searches/-1", "searches/1x", "workers/1",
        "searches/1/candidates/2", "searches/+1", "searches/99999999999999999999"}) {
    const absl::Status status = ParseSearchName("name", bad).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(status.message(), HasSubstr("name (\"")) << bad;
  }
  EXPECT_EQ(ParseWorkerName("worker", "searches/1").status().code(),
            absl::StatusCode::kInvalidArgument);
  for (const char* bad : {"", "searches/1/candidates/0", "searches/1/candidates/0/probes/0",
                          "searches/0/candidates/0/probes/1", "searches/1/candidates/-1/probes/1",
                          "searches/1/candidates/0/probes/1/", "searches/1/candidates/0/probes/1x",
                          "searches/1/candidate/0/probes/1", "searches/1/candidates//probes/1"}) {
    const absl::Status status = ParseProbeName("probe", bad).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(status.message(), HasSubstr("probe (\"")) << bad;
  }
}

}  // namespace
}  // namespace paratune
