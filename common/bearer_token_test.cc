#include "common/bearer_token.h"

#include <string>

#include "common/test_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kToken[] = "0123456789abcdefXYZ-._~+/==";

TEST(CheckTokenSyntaxTest, AcceptsB64Tokens) {
  EXPECT_TRUE(CheckTokenSyntax(kToken).ok());
  EXPECT_TRUE(CheckTokenSyntax(std::string(kMinTokenLength, 'a')).ok());
  EXPECT_TRUE(CheckTokenSyntax(std::string(kMaxTokenLength, 'a')).ok());
}

TEST(CheckTokenSyntaxTest, RefusesShortAndLongTokens) {
  const absl::Status short_token = CheckTokenSyntax(std::string(kMinTokenLength - 1, 'a'));
  EXPECT_EQ(short_token.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(short_token.message(), HasSubstr("has 15 characters; it must have 16 to 1024"));
  EXPECT_EQ(CheckTokenSyntax(std::string(kMaxTokenLength + 1, 'a')).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CheckTokenSyntaxTest, RefusesCharactersOutsideB64TokenWithoutQuotingTheToken) {
  for (const std::string token :
       {"abcdefghijklmnop qrs", "abcdefghijklmnop\"qrs", "abcdefghijklmnop\x01qr",
        "abcdefghijklmnop=q=rs", "abcdefghijklmnopé"}) {
    const absl::Status status = CheckTokenSyntax(token);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << token;
    EXPECT_THAT(status.message(), HasSubstr("at position 17")) << token;
    EXPECT_THAT(status.message(), Not(HasSubstr("abcdefghijklmnop")));
  }
}

TEST(CheckTokenSyntaxTest, RefusesATokenOfPaddingOnly) {
  EXPECT_EQ(CheckTokenSyntax(std::string(20, '=')).code(), absl::StatusCode::kInvalidArgument);
}

TEST(ReadTokenFileTest, ReadsTheTokenWithoutSurroundingWhitespace) {
  const std::string path = WriteTestFile("token", std::string("  ") + kToken + "\r\n\n");
  absl::StatusOr<std::string> token = ReadTokenFile("token_file", path);
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, kToken);
}

TEST(ReadTokenFileTest, MissingFileNamesTheOptionAndPath) {
  const std::string path = TestFilePath("no-token");
  absl::StatusOr<std::string> token = ReadTokenFile("token_file", path);
  EXPECT_EQ(token.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(token.status().message(), HasSubstr("token_file: "));
  EXPECT_THAT(token.status().message(), HasSubstr(path));
}

TEST(ReadTokenFileTest, EmptyFileIsRefused) {
  const std::string path = WriteTestFile("empty-token", " \n");
  absl::StatusOr<std::string> token = ReadTokenFile("token_file", path);
  EXPECT_EQ(token.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(token.status().message(), HasSubstr("is empty"));
  EXPECT_THAT(token.status().message(), HasSubstr(path));
}

TEST(ReadTokenFileTest, TwoWordsAreRefusedWithoutQuotingThem) {
  const std::string path = WriteTestFile("two-words", std::string("worker ") + kToken + "\n");
  absl::StatusOr<std::string> token = ReadTokenFile("token_file", path);
  EXPECT_EQ(token.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(token.status().message(), HasSubstr("more than one word"));
  EXPECT_THAT(token.status().message(), Not(HasSubstr(kToken)));
}

TEST(ReadTokenFileTest, BadTokenSaysWhyWithoutQuotingIt) {
  const std::string path = WriteTestFile("short-token", "abc123\n");
  absl::StatusOr<std::string> token = ReadTokenFile("token_file", path);
  EXPECT_EQ(token.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(token.status().message(), HasSubstr("has 6 characters"));
  EXPECT_THAT(token.status().message(), HasSubstr(path));
  EXPECT_THAT(token.status().message(), Not(HasSubstr("abc123")));
}

TEST(ReadTokenFileTest, LargeFileIsRefused) {
  const std::string path = WriteTestFile("large-token", std::string(4096, 'a'));
  EXPECT_EQ(ReadTokenFile("token_file", path).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace paratune
