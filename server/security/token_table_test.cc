#include "server/security/token_table.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/test_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::AllOf;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Optional;

// Matches a Principal.
auto Is(absl::string_view name, Role role) {
  return Optional(AllOf(Field(&Principal::name, std::string(name)), Field(&Principal::role, role)));
}

constexpr char kClientToken[] = "client-token-0123456789";
constexpr char kWorkerToken[] = "worker-token-0123456789";
constexpr char kAdminToken[] = "admin+token/0123456789==";

// `text` parsed for a server that verifies client certificates.
absl::StatusOr<TokenTable> Parse(const std::string& text) {
  return TokenTable::Parse("tokens", text, ClientCertificates::kVerified);
}

// The error of parsing `text`, which must fail.
absl::Status ParseError(const std::string& text,
                        ClientCertificates client_certificates = ClientCertificates::kVerified) {
  absl::StatusOr<TokenTable> table =
      TokenTable::Parse("/etc/paratune/tokens", text, client_certificates);
  EXPECT_FALSE(table.ok());
  return table.status();
}

TEST(TokenTableTest, FindsThePrincipalOfEveryToken) {
  absl::StatusOr<TokenTable> table = Parse(
      absl::StrCat("# paratune tokens\n\nclient alice ", kClientToken, "\n\tworker\tpool-1.a_b\t",
                   kWorkerToken, "  \r\n  # the operators\nadmin ops ", kAdminToken));
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->tokens(), 3);
  EXPECT_EQ(table->certificates(), 0);
  EXPECT_EQ(table->principals(), 3);
  EXPECT_THAT(table->Find(kClientToken), Is("alice", Role::kClient));
  EXPECT_THAT(table->Find(kWorkerToken), Is("pool-1.a_b", Role::kWorker));
  EXPECT_THAT(table->Find(kAdminToken), Is("ops", Role::kAdmin));
}

TEST(TokenTableTest, NamesAnAdminByTokenOrCertificate) {
  absl::StatusOr<TokenTable> table = Parse(absl::StrCat(
      "client alice ", kClientToken, "\nadmin ops ", kAdminToken, "\nadmin root cert:root-ca\n"));
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_TRUE(table->IsAdmin("ops"));
  EXPECT_TRUE(table->IsAdmin("root"));
  EXPECT_FALSE(table->IsAdmin("alice"));
  EXPECT_FALSE(table->IsAdmin("nobody"));
}

TEST(TokenTableTest, TheOldTwoFieldFormIsRefusedNamingTheFileTheLineAndTheNewForm) {
  const absl::Status status = ParseError(
      absl::StrCat("client alice ", kClientToken, "\n# old\nworker ", kWorkerToken, "\n"));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("token_file (\"/etc/paratune/tokens\") line 3: "));
  EXPECT_THAT(status.message(), HasSubstr("old two-field form ROLE TOKEN"));
  EXPECT_THAT(status.message(), HasSubstr("ROLE NAME TOKEN"));
  EXPECT_THAT(status.message(), Not(HasSubstr(kWorkerToken)));
}

TEST(TokenTableTest, MalformedNamesAreRefusedWithoutQuotingThem) {
  for (const std::string name :
       {std::string("al/ice"), std::string("al\"ice"), std::string(65, 'a'), std::string("é")}) {
    const absl::Status status = ParseError(absl::StrCat("client ", name, " ", kClientToken, "\n"));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(status.message(), HasSubstr("line 1: the second field: a principal NAME"));
    EXPECT_THAT(status.message(), Not(HasSubstr(name)));
  }
}

TEST(TokenTableTest, ANameHasOneRole) {
  const absl::Status status =
      ParseError(absl::StrCat("client alice ", kClientToken, "\nadmin alice ", kAdminToken, "\n"));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("line 2: gives the name of line 1 the role admin after client"));
}

TEST(TokenTableTest, UnknownTokensHaveNoRole) {
  absl::StatusOr<TokenTable> table = Parse(absl::StrCat("client alice ", kClientToken, "\n"));
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->Find(""), std::nullopt);
  EXPECT_EQ(table->Find(kWorkerToken), std::nullopt);
  // A prefix or an extension of a known token is another token.
  EXPECT_EQ(table->Find(std::string(kClientToken).substr(1)), std::nullopt);
  EXPECT_EQ(table->Find(absl::StrCat(kClientToken, "0")), std::nullopt);
}

TEST(TokenTableTest, SeveralTokensMayShareARoleAndAName) {
  absl::StatusOr<TokenTable> table =
      Parse(absl::StrCat("client alice ", kClientToken, "\nclient alice ", kWorkerToken,
                         "\nclient bob ", kAdminToken, "\n"));
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->Find(kClientToken), Is("alice", Role::kClient));
  EXPECT_THAT(table->Find(kWorkerToken), Is("alice", Role::kClient));
  EXPECT_THAT(table->Find(kAdminToken), Is("bob", Role::kClient));
}

TEST(TokenTableTest, UnknownRoleNamesTheLineWithoutQuotingIt) {
  // A line written TOKEN ROLE must not put the token in the message.
  const absl::Status status =
      ParseError(absl::StrCat("client alice ", kClientToken, "\n", kAdminToken, " ops admin\n"));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("token_file (\"/etc/paratune/tokens\") line 2: "));
  EXPECT_THAT(status.message(), HasSubstr("ROLE must be client, worker or admin"));
  EXPECT_THAT(status.message(), Not(HasSubstr(kAdminToken)));
  EXPECT_THAT(status.message(), Not(HasSubstr(kClientToken)));
}

TEST(TokenTableTest, RolesAreLowerCase) {
  EXPECT_THAT(ParseError(absl::StrCat("Admin ops ", kAdminToken)).message(),
              HasSubstr("line 1: the first field is not a role"));
}

TEST(TokenTableTest, ARoleWithoutATokenIsRefused) {
  const absl::Status status = ParseError("# tokens\nworker\n");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("line 2: has 1 fields; each line must be ROLE NAME TOKEN"));
}

TEST(TokenTableTest, ATrailingCommentMakesMoreFields) {
  const absl::Status status = ParseError(absl::StrCat("client ci ", kClientToken, " # ci\n"));
  EXPECT_THAT(status.message(), HasSubstr("line 1: has 5 fields"));
  EXPECT_THAT(status.message(), Not(HasSubstr(kClientToken)));
}

TEST(TokenTableTest, MalformedTokensAreRefusedWithoutQuotingThem) {
  for (const std::string& token :
       std::vector<std::string>{"short", "has\"a-quote-0123456789", std::string(1025, 'a')}) {
    const absl::Status status =
        ParseError(absl::StrCat("client alice ", kClientToken, "\nworker pool ", token, "\n"));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("line 2: the token has"));
    EXPECT_THAT(status.message(), Not(HasSubstr(token)));
  }
}

TEST(TokenTableTest, ATokenMayAppearOnce) {
  const absl::Status status = ParseError(absl::StrCat(
      "client alice ", kClientToken, "\n\nadmin ops ", kAdminToken, "\nadmin ops ", kClientToken));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("line 4: the token of line 1 again"));
  EXPECT_THAT(status.message(), Not(HasSubstr(kClientToken)));
}

TEST(TokenTableTest, AFileWithoutTokensIsRefused) {
  for (const std::string text : {"", "# nothing yet\n\n"}) {
    const absl::Status status = ParseError(text);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("holds no token or certificate"));
  }
}

TEST(TokenTableTest, TooManyCredentialsAreRefused) {
  std::string text = "client alice cert:alice\n";
  for (size_t i = 1; i <= TokenTable::kMaxCredentials; ++i) {
    absl::StrAppend(&text, "client alice token-number-", 100000 + i, "\n");
  }
  EXPECT_THAT(ParseError(text).message(), HasSubstr("line 1001: more than 1000 credentials"));
}

TEST(TokenTableTest, ACertificateLineBindsACommonNameToAPrincipal) {
  absl::StatusOr<TokenTable> table =
      Parse(absl::StrCat("client alice ", kClientToken,
                         "\nclient alice cert:alice@example.com\nworker pool cert:node-1.a_b\n"
                         "worker pool ",
                         kWorkerToken, "\n"));
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->tokens(), 2);
  EXPECT_EQ(table->certificates(), 2);
  EXPECT_EQ(table->principals(), 2);
  EXPECT_THAT(table->FindCertificate("alice@example.com"), Is("alice", Role::kClient));
  EXPECT_THAT(table->FindCertificate("node-1.a_b"), Is("pool", Role::kWorker));
  EXPECT_TRUE(table->BindsCertificateOf(Role::kWorker));
  EXPECT_FALSE(table->BindsCertificateOf(Role::kAdmin));
  // Certificates and tokens are looked up apart: a common name is no token, and the other way.
  EXPECT_EQ(table->FindCertificate("node-1"), std::nullopt);
  EXPECT_EQ(table->FindCertificate(kClientToken), std::nullopt);
  EXPECT_EQ(table->Find("cert:node-1.a_b"), std::nullopt);
  EXPECT_EQ(table->Find("node-1.a_b"), std::nullopt);
}

TEST(TokenTableTest, AFileOfCertificatesAloneIsEnough) {
  absl::StatusOr<TokenTable> table = Parse("admin ops cert:ops\n");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->tokens(), 0);
  EXPECT_THAT(table->FindCertificate("ops"), Is("ops", Role::kAdmin));
}

TEST(TokenTableTest, CertificatesNeedAServerThatVerifiesThem) {
  const absl::Status status =
      ParseError(absl::StrCat("client alice ", kClientToken, "\nworker pool cert:node-1\n"),
                 ClientCertificates::kNotVerified);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("token_file (\"/etc/paratune/tokens\") line 2: binds a client "
                        "certificate, but the server verifies none"));
  EXPECT_THAT(status.message(), HasSubstr("tls_client_ca"));
}

TEST(TokenTableTest, MalformedCommonNamesAreRefusedWithoutQuotingThem) {
  for (const std::string& common_name :
       {std::string(""), std::string(65, 'n'), std::string("caf\xc3\xa9")}) {
    const absl::Status status = ParseError(absl::StrCat("client alice cert:", common_name, "\n"));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << common_name;
    EXPECT_THAT(status.message(),
                HasSubstr("line 1: the common name after cert: must have 1 to 64 printable ASCII "
                          "characters"));
    if (!common_name.empty()) EXPECT_THAT(status.message(), Not(HasSubstr(common_name)));
  }
}

TEST(TokenTableTest, ACommonNameMayAppearOnce) {
  const absl::Status status =
      ParseError("client alice cert:laptop-7\n# moved\nclient bob cert:laptop-7\n");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("line 3: the common name of line 1 again"));
  EXPECT_THAT(status.message(), Not(HasSubstr("laptop-7")));
}

TEST(TokenTableTest, ACertificateNameHasTheRoleOfItsTokens) {
  const absl::Status status =
      ParseError(absl::StrCat("worker pool ", kWorkerToken, "\nadmin pool cert:pool\n"));
  EXPECT_THAT(status.message(),
              HasSubstr("line 2: gives the name of line 1 the role admin after worker"));
}

TEST(TokenTableTest, LoadReadsTheFile) {
  const std::string path =
      WriteTestFile("tokens", absl::StrCat("worker pool ", kWorkerToken, "\n"));
  absl::StatusOr<TokenTable> table = TokenTable::Load(path, ClientCertificates::kNotVerified);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->Find(kWorkerToken), Is("pool", Role::kWorker));
}

TEST(TokenTableTest, LoadNamesAnUnreadableFile) {
  const std::string path = TestFilePath("no-tokens");
  const absl::Status status = TokenTable::Load(path, ClientCertificates::kNotVerified).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("token_file: ", path, ": cannot open")));
}

}  // namespace
}  // namespace paratune
