#include "server/token_table.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/test_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Optional;

constexpr char kClientToken[] = "client-token-0123456789";
constexpr char kWorkerToken[] = "worker-token-0123456789";
constexpr char kAdminToken[] = "admin+token/0123456789==";

// The error of parsing `text`, which must fail.
absl::Status ParseError(const std::string& text) {
  absl::StatusOr<TokenTable> table = TokenTable::Parse("/etc/paratune/tokens", text);
  EXPECT_FALSE(table.ok());
  return table.status();
}

TEST(TokenTableTest, FindsTheRoleOfEveryToken) {
  absl::StatusOr<TokenTable> table = TokenTable::Parse(
      "tokens", absl::StrCat("# paratune tokens\n\nclient ", kClientToken, "\n\tworker\t",
                             kWorkerToken, "  \r\n  # the operators\nadmin ", kAdminToken));
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->size(), 3);
  EXPECT_THAT(table->Find(kClientToken), Optional(Role::kClient));
  EXPECT_THAT(table->Find(kWorkerToken), Optional(Role::kWorker));
  EXPECT_THAT(table->Find(kAdminToken), Optional(Role::kAdmin));
}

TEST(TokenTableTest, UnknownTokensHaveNoRole) {
  absl::StatusOr<TokenTable> table =
      TokenTable::Parse("tokens", absl::StrCat("client ", kClientToken, "\n"));
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->Find(""), std::nullopt);
  EXPECT_EQ(table->Find(kWorkerToken), std::nullopt);
  // A prefix or an extension of a known token is another token.
  EXPECT_EQ(table->Find(std::string(kClientToken).substr(1)), std::nullopt);
  EXPECT_EQ(table->Find(absl::StrCat(kClientToken, "0")), std::nullopt);
}

TEST(TokenTableTest, SeveralTokensMayShareARole) {
  absl::StatusOr<TokenTable> table = TokenTable::Parse(
      "tokens", absl::StrCat("client ", kClientToken, "\nclient ", kWorkerToken, "\n"));
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->Find(kClientToken), Optional(Role::kClient));
  EXPECT_THAT(table->Find(kWorkerToken), Optional(Role::kClient));
}

TEST(TokenTableTest, UnknownRoleNamesTheLineWithoutQuotingIt) {
  // A line written TOKEN ROLE must not put the token in the message.
  const absl::Status status =
      ParseError(absl::StrCat("client ", kClientToken, "\n", kAdminToken, " admin\n"));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("token_file (\"/etc/paratune/tokens\") line 2: "));
  EXPECT_THAT(status.message(), HasSubstr("ROLE must be client, worker or admin"));
  EXPECT_THAT(status.message(), Not(HasSubstr(kAdminToken)));
  EXPECT_THAT(status.message(), Not(HasSubstr(kClientToken)));
}

TEST(TokenTableTest, RolesAreLowerCase) {
  EXPECT_THAT(ParseError(absl::StrCat("Admin ", kAdminToken)).message(),
              HasSubstr("line 1: the first field is not a role"));
}

TEST(TokenTableTest, ARoleWithoutATokenIsRefused) {
  const absl::Status status = ParseError("# tokens\nworker\n");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("line 2: has 1 fields; each line must be ROLE TOKEN"));
}

TEST(TokenTableTest, ATrailingCommentMakesMoreFields) {
  const absl::Status status = ParseError(absl::StrCat("client ", kClientToken, " # ci\n"));
  EXPECT_THAT(status.message(), HasSubstr("line 1: has 4 fields"));
  EXPECT_THAT(status.message(), Not(HasSubstr(kClientToken)));
}

TEST(TokenTableTest, MalformedTokensAreRefusedWithoutQuotingThem) {
  for (const std::string& token :
       std::vector<std::string>{"short", "has\"a-quote-0123456789", std::string(1025, 'a')}) {
    const absl::Status status =
        ParseError(absl::StrCat("client ", kClientToken, "\nworker ", token, "\n"));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("line 2: the token has"));
    EXPECT_THAT(status.message(), Not(HasSubstr(token)));
  }
}

TEST(TokenTableTest, ATokenMayAppearOnce) {
  const absl::Status status = ParseError(
      absl::StrCat("client ", kClientToken, "\n\nadmin ", kAdminToken, "\nadmin ", kClientToken));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("line 4: the token of line 1 again"));
  EXPECT_THAT(status.message(), Not(HasSubstr(kClientToken)));
}

TEST(TokenTableTest, AFileWithoutTokensIsRefused) {
  for (const std::string text : {"", "# nothing yet\n\n"}) {
    const absl::Status status = ParseError(text);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("holds no token"));
  }
}

TEST(TokenTableTest, TooManyTokensAreRefused) {
  std::string text;
  for (size_t i = 0; i <= TokenTable::kMaxTokens; ++i) {
    absl::StrAppend(&text, "client token-number-", 100000 + i, "\n");
  }
  EXPECT_THAT(ParseError(text).message(), HasSubstr("line 1001: more than 1000 tokens"));
}

TEST(TokenTableTest, LoadReadsTheFile) {
  const std::string path = WriteTestFile("tokens", absl::StrCat("worker ", kWorkerToken, "\n"));
  absl::StatusOr<TokenTable> table = TokenTable::Load(path);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->Find(kWorkerToken), Optional(Role::kWorker));
}

TEST(TokenTableTest, LoadNamesAnUnreadableFile) {
  const std::string path = TestFilePath("no-tokens");
  const absl::Status status = TokenTable::Load(path).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("token_file: ", path, ": cannot open")));
}

TEST(RoleNameTest, NamesEveryRole) {
  EXPECT_EQ(RoleName(Role::kClient), "client");
  EXPECT_EQ(RoleName(Role::kWorker), "worker");
  EXPECT_EQ(RoleName(Role::kAdmin), "admin");
}

}  // namespace
}  // namespace paratune
