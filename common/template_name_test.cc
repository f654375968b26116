#include "common/template_name.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

TEST(ValidateTemplateNameTest, AcceptsPlainNames) {
  EXPECT_TRUE(ValidateTemplateName("t", "megatron-lm_v0.9.gpt").ok());
  EXPECT_TRUE(ValidateTemplateName("t", std::string(64, 'a')).ok());
}

TEST(TemplateNameProblemTest, SaysWhatIsWrong) {
  EXPECT_FALSE(TemplateNameProblem("megatron-llama").has_value());
  EXPECT_EQ(TemplateNameProblem("a b"),
            "(\"a b\") must be 1 to 64 letters, digits, '_', '-' or '.'");
}

TEST(ValidateTemplateNameTest, RejectsOthersNamingTheField) {
  for (const std::string& bad : {std::string(), std::string(65, 'a'), std::string("rm -rf"),
                                 std::string("a/b"), std::string("{tp}")}) {
    const absl::Status status = ValidateTemplateName("spec.probe.command_template", bad);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(status.message(), HasSubstr("spec.probe.command_template (\"")) << bad;
  }
}

}  // namespace
}  // namespace paratune
