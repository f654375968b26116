#include "estimator/field_error.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(FieldErrorTest, MessageIsTheFieldAndTheProblem) {
  const absl::Status status = FieldError("training.seq_len", "(0) must be in [1, 4194304]");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "training.seq_len (0) must be in [1, 4194304]");
  const std::optional<FieldFault> fault = FieldFaultOf(status);
  ASSERT_TRUE(fault.has_value());
  EXPECT_EQ(fault->field, "training.seq_len");
  EXPECT_EQ(fault->problem, "(0) must be in [1, 4194304]");
}

TEST(FieldErrorTest, OtherStatusesHaveNoFault) {
  EXPECT_FALSE(FieldFaultOf(absl::OkStatus()).has_value());
  // A message in the same form is still only text.
  EXPECT_FALSE(
      FieldFaultOf(absl::InvalidArgumentError("training.seq_len (0) must be >= 1")).has_value());
}

TEST(FieldErrorTest, NestingPrefixesTheFieldInBothParts) {
  const absl::Status nested =
      NestFieldError("spec", FieldError("space.micro_batch_sizes[2]", "(0) must be in [1, 1024]"));
  EXPECT_EQ(nested.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(nested.message(), "spec.space.micro_batch_sizes[2] (0) must be in [1, 1024]");
  const std::optional<FieldFault> fault = FieldFaultOf(nested);
  ASSERT_TRUE(fault.has_value());
  EXPECT_EQ(fault->field, "spec.space.micro_batch_sizes[2]");
  EXPECT_EQ(fault->problem, "(0) must be in [1, 1024]");
}

TEST(FieldErrorTest, NestingLeavesOtherStatusesAlone) {
  const absl::Status plain = absl::FailedPreconditionError("no workers");
  EXPECT_EQ(NestFieldError("spec", plain), plain);
  EXPECT_TRUE(NestFieldError("spec", absl::OkStatus()).ok());
}

}  // namespace
}  // namespace paratune
