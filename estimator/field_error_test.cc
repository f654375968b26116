#include "estimator/field_error.h"

#include <string>

#include "gtest/gtest.h"

namespace paratune {
namespace {

// `status` is INVALID_ARGUMENT "<field> <problem>" and carries both.
void ExpectFieldError(const absl::Status& status, const std::string& field,
                      const std::string& problem) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), field + " " + problem);
  const std::optional<FieldFault> fault = FieldFaultOf(status);
  ASSERT_TRUE(fault.has_value());
  EXPECT_EQ(fault->field, field);
  EXPECT_EQ(fault->problem, problem);
}

TEST(FieldErrorTest, MessageIsTheFieldAndTheProblem) {
  ExpectFieldError(FieldError("training.seq_len", "(0) must be in [1, 4194304]"),
                   "training.seq_len", "(0) must be in [1, 4194304]");
}

TEST(FieldErrorTest, OtherStatusesHaveNoFault) {
  EXPECT_FALSE(FieldFaultOf(absl::OkStatus()).has_value());
  // A message in the same form is still only text.
  EXPECT_FALSE(
      FieldFaultOf(absl::InvalidArgumentError("training.seq_len (0) must be >= 1")).has_value());
}

TEST(FieldErrorTest, NestingPrefixesTheFieldInBothParts) {
  ExpectFieldError(
      NestFieldError("spec", FieldError("space.micro_batch_sizes[2]", "(0) must be in [1, 1024]")),
      "spec.space.micro_batch_sizes[2]", "(0) must be in [1, 1024]");
}

TEST(FieldErrorTest, NestingLeavesOtherStatusesAlone) {
  const absl::Status plain = absl::FailedPreconditionError("no workers");
  EXPECT_EQ(NestFieldError("spec", plain), plain);
  EXPECT_TRUE(NestFieldError("spec", absl::OkStatus()).ok());
}

}  // namespace
}  // namespace paratune
