#include "server/core/limits.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

TEST(LimitsTest, DefaultsAreValid) { EXPECT_TRUE(ValidateLimits(Limits()).ok()); }

TEST(LimitsTest, ValidateNamesTheFlag) {
  Limits limits;
  limits.max_probes_in_flight_per_principal = -1;
  absl::Status status = ValidateLimits(limits);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("--max_probes_in_flight_per_principal (-1)"));

  limits = Limits();
  limits.max_request_bytes = 512 << 20;
  status = ValidateLimits(limits);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("--max_request_bytes (536870912)"));
}

TEST(LimitsTest, OnlyAdminsAreExempt) {
  EXPECT_FALSE(ExemptFromLimits(std::nullopt));
  EXPECT_FALSE(ExemptFromLimits(Principal{"alice", Role::kClient}));
  EXPECT_TRUE(ExemptFromLimits(Principal{"root", Role::kAdmin}));
}

TEST(LimitsTest, RequestBytes) {
  EXPECT_TRUE(CheckRequestBytes("CreateSearch", 100, 100).ok());
  const absl::Status status = CheckRequestBytes("CreateSearch", 101, 100);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "CreateSearch request (101 bytes) is larger than the limit (--max_request_bytes=100)");
}

TEST(LimitsTest, MessagesNameTheFlagAndValue) {
  absl::Status status = TooManySearchesError("", 16, 16);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("the anonymous principal has 16 unfinished searches"));
  EXPECT_THAT(status.message(), HasSubstr("--max_searches_per_principal=16"));
  status = TooManyCandidatesError(2000, 1000);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("--max_enumerated_candidates=1000"));
  EXPECT_THAT(ProbesInFlightWaitingReason("alice", 2),
              HasSubstr("alice has 2 probes in flight, the limit per principal "
                        "(--max_probes_in_flight_per_principal=2)"));
}

}  // namespace
}  // namespace paratune
