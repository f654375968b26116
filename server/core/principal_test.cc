#include "server/core/principal.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

TEST(RoleNameTest, NamesAndParsesEveryRole) {
  for (Role role : {Role::kClient, Role::kWorker, Role::kAdmin}) {
    EXPECT_THAT(ParseRole(RoleName(role)), Optional(role));
  }
  EXPECT_EQ(RoleName(Role::kClient), "client");
  EXPECT_EQ(RoleName(Role::kWorker), "worker");
  EXPECT_EQ(RoleName(Role::kAdmin), "admin");
  EXPECT_EQ(ParseRole("Admin"), std::nullopt);
  EXPECT_EQ(ParseRole(""), std::nullopt);
}

TEST(CheckPrincipalNameTest, AcceptsLettersDigitsDotsUnderscoresAndDashes) {
  EXPECT_TRUE(CheckPrincipalName("alice").ok());
  EXPECT_TRUE(CheckPrincipalName("team-7.ml_infra").ok());
  EXPECT_TRUE(CheckPrincipalName(std::string(kMaxPrincipalNameBytes, 'a')).ok());
  for (const std::string name : {std::string(), std::string(kMaxPrincipalNameBytes + 1, 'a'),
                                 std::string("a b"), std::string("a/b"), std::string("a@b")}) {
    const absl::Status status = CheckPrincipalName(name);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(status.message(), HasSubstr("A-Z a-z 0-9 . _ -"));
  }
}

TEST(MayAccessTest, ClientsReachTheirOwnOnly) {
  const Caller alice = Principal{"alice", Role::kClient};
  EXPECT_TRUE(MayAccess(alice, "alice"));
  EXPECT_FALSE(MayAccess(alice, "bob"));
  EXPECT_FALSE(MayAccess(alice, "alice2"));
  // Created without tokens (or before owners were recorded): admins only.
  EXPECT_FALSE(MayAccess(alice, ""));
}

TEST(MayAccessTest, WorkersReachWhatTheyRegisteredOnly) {
  const Caller pool = Principal{"pool-a", Role::kWorker};
  EXPECT_TRUE(MayAccess(pool, "pool-a"));
  EXPECT_FALSE(MayAccess(pool, "pool-b"));
}

TEST(MayAccessTest, AdminsAndServersWithoutTokensReachEverything) {
  const Caller ops = Principal{"ops", Role::kAdmin};
  for (const std::string owner : {"alice", "bob", ""}) {
    EXPECT_TRUE(MayAccess(ops, owner)) << owner;
    EXPECT_TRUE(MayAccess(std::nullopt, owner)) << owner;
  }
}

TEST(OwnerNameTest, IsTheCallersNameOrEmpty) {
  EXPECT_EQ(OwnerName(Principal{"alice", Role::kClient}), "alice");
  EXPECT_EQ(OwnerName(std::nullopt), "");
  EXPECT_EQ(DescribeCaller(Principal{"alice", Role::kClient}), "alice");
  EXPECT_EQ(DescribeCaller(std::nullopt), "a client");
}

}  // namespace
}  // namespace paratune
