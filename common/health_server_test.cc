#include "common/health_server.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/grpc_introspection.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

constexpr int kServing = 1;
constexpr int kNotServing = 2;

TEST(HealthServerTest, ServesHealthAndReflection) {
  absl::StatusOr<std::unique_ptr<HealthServer>> server = HealthServer::Start({"127.0.0.1:0"});
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_GT((*server)->port(), 0);
  auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", (*server)->port()),
                                     grpc::InsecureChannelCredentials());
  absl::StatusOr<int> health = CheckHealth(channel);
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, kServing);
  absl::StatusOr<std::string> services = ListServicesByReflection(channel);
  ASSERT_TRUE(services.ok()) << services.status();
  EXPECT_THAT(*services, HasSubstr("grpc.health.v1.Health"));

  (*server)->SetNotServing();
  health = CheckHealth(channel);
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, kNotServing);
}

TEST(HealthServerTest, ReportsBadAndTakenAddresses) {
  EXPECT_EQ(HealthServer::Start({""}).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::unique_ptr<HealthServer>> first = HealthServer::Start({"127.0.0.1:0"});
  ASSERT_TRUE(first.ok());
  const absl::Status taken =
      HealthServer::Start({absl::StrCat("127.0.0.1:", (*first)->port())}).status();
  EXPECT_EQ(taken.code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace paratune
