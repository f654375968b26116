#include "server/security/grpc_methods.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/autotuner_service.grpc.pb.h"

namespace paratune {
namespace {

using ::testing::Contains;

TEST(MethodsOfServiceTest, ListsTheMethodsOfACompiledService) {
  const std::vector<std::string> methods = MethodsOfService(v1::Autotuner::service_full_name());
  EXPECT_THAT(methods, Contains("/paratune.v1.Autotuner/CreateSearch"));
  EXPECT_THAT(methods, Contains("/paratune.v1.Autotuner/WatchSearch"));
  EXPECT_TRUE(MethodsOfService("no.such.Service").empty());
}

TEST(StandardGrpcMethodsTest, ListsHealthAndReflection) {
  EXPECT_THAT(StandardGrpcMethods(), Contains("/grpc.health.v1.Health/Check"));
  EXPECT_THAT(StandardGrpcMethods(),
              Contains("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"));
}

}  // namespace
}  // namespace paratune
