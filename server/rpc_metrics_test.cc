#include "server/rpc_metrics.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc_client.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "metrics/registry.h"
#include "proto/autotuner_service.grpc.pb.h"
#include "server/security/grpc_methods.h"
#include "server/server.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;

// The value of paratune_rpcs_total for these labels; -1 when there is no such sample.
double Calls(const metrics::Registry& registry, const std::vector<std::string>& labels) {
  for (const metrics::MetricFamily& family : registry.Collect()) {
    if (family.descriptor.name != "paratune_rpcs_total") continue;
    for (const metrics::Sample& sample : family.samples) {
      if (sample.label_values == labels) return std::get<double>(sample.value);
    }
  }
  return -1;
}

TEST(RpcMetricsTest, CountsCallsOfARealServerByMethodAndCode) {
  metrics::Registry registry;
  absl::StatusOr<std::unique_ptr<RpcMetrics>> rpc_metrics =
      RpcMetrics::Create(registry, MethodsOfService("paratune.v1.Autotuner"));
  ASSERT_TRUE(rpc_metrics.ok()) << rpc_metrics.status();
  ParatuneServer::Options options;
  options.address = "127.0.0.1:0";
  options.interceptors.push_back((*rpc_metrics)->NewInterceptorFactory());
  absl::StatusOr<std::unique_ptr<ParatuneServer>> server =
      ParatuneServer::Start(std::move(options));
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(Calls(registry, {"paratune.v1.Autotuner/GetSearch", "OK"}), 0);

  auto autotuner = v1::Autotuner::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", (*server)->port()), grpc::InsecureChannelCredentials()));
  for (const char* name : {"searches/99", "not-a-name"}) {
    v1::GetSearchRequest request;
    request.set_name(name);
    v1::Search search;
    EXPECT_FALSE(
        autotuner->GetSearch(ContextWithTimeout(absl::Seconds(30)).get(), request, &search).ok());
  }
  v1::ListWorkersResponse workers;
  ASSERT_TRUE(autotuner
                  ->ListWorkers(ContextWithTimeout(absl::Seconds(30)).get(),
                                v1::ListWorkersRequest(), &workers)
                  .ok());
  autotuner.reset();
  (*server)->Shutdown(absl::Seconds(1));

  EXPECT_EQ(Calls(registry, {"paratune.v1.Autotuner/GetSearch", "NOT_FOUND"}), 1);
  EXPECT_EQ(Calls(registry, {"paratune.v1.Autotuner/GetSearch", "INVALID_ARGUMENT"}), 1);
  EXPECT_EQ(Calls(registry, {"paratune.v1.Autotuner/ListWorkers", "OK"}), 1);
}

TEST(RpcMetricsTest, CountsRefusedCallsWithoutADuration) {
  metrics::Registry registry;
  absl::StatusOr<std::unique_ptr<RpcMetrics>> rpc_metrics =
      RpcMetrics::Create(registry, {"/a.B/C"});
  ASSERT_TRUE(rpc_metrics.ok());
  (*rpc_metrics)->RecordRefused("/a.B/C", absl::StatusCode::kUnauthenticated);
  (*rpc_metrics)->RecordRefused("/a.B/Invented", absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(Calls(registry, {"a.B/C", "UNAUTHENTICATED"}), 1);
  EXPECT_EQ(Calls(registry, {"other", "PERMISSION_DENIED"}), 1);
  for (const metrics::MetricFamily& family : registry.Collect()) {
    if (family.descriptor.name != "paratune_rpc_duration_seconds") continue;
    for (const metrics::Sample& sample : family.samples) {
      EXPECT_NE(sample.label_values[1], "UNAUTHENTICATED");
    }
  }
}

TEST(RpcMetricsTest, LabelsUnknownMethodsOther) {
  metrics::Registry registry;
  absl::StatusOr<std::unique_ptr<RpcMetrics>> rpc_metrics =
      RpcMetrics::Create(registry, {"/a.B/C"});
  ASSERT_TRUE(rpc_metrics.ok());
  EXPECT_EQ((*rpc_metrics)->MethodLabel("/a.B/C"), "a.B/C");
  EXPECT_EQ((*rpc_metrics)->MethodLabel("/a.B/Invented"), "other");
  (*rpc_metrics)->Record("other", "UNIMPLEMENTED", 0.001);
  EXPECT_EQ(Calls(registry, {"other", "UNIMPLEMENTED"}), 1);
  EXPECT_THAT(registry.Collect()[0].descriptor.label_names, ElementsAre("method", "code"));
}

}  // namespace
}  // namespace paratune
