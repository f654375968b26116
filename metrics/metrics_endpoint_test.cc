#include "metrics/metrics_endpoint.h"

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune::metrics {
namespace {

using ::testing::HasSubstr;

TEST(StartMetricsEndpointTest, ServesNothingWithoutAnAddress) {
  Registry registry;
  absl::StatusOr<std::unique_ptr<HttpExporter>> exporter = StartMetricsEndpoint("", "", registry);
  ASSERT_TRUE(exporter.ok());
  EXPECT_EQ(*exporter, nullptr);
}

TEST(StartMetricsEndpointTest, WritesTheBoundPort) {
  Registry registry;
  const std::string port_file = std::string(std::getenv("TEST_TMPDIR")) + "/metrics-port";
  absl::StatusOr<std::unique_ptr<HttpExporter>> exporter =
      StartMetricsEndpoint("127.0.0.1:0", port_file, registry);
  ASSERT_TRUE(exporter.ok()) << exporter.status();
  std::ifstream file(port_file);
  std::string line;
  std::getline(file, line);
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(line, &port));
  EXPECT_EQ(port, (*exporter)->port());
}

TEST(StartMetricsEndpointTest, NamesTheFlagOnError) {
  Registry registry;
  const absl::Status status = StartMetricsEndpoint("nonsense", "", registry).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("--metrics_address: address (\"nonsense\")"));
}

}  // namespace
}  // namespace paratune::metrics
