#include "metrics/http_exporter.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics/registry.h"
#include "metrics/text_format.h"
#include "tests/http_client.h"

namespace paratune::metrics {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<HttpExporter> StartExporter(const Registry& registry) {
  HttpExporter::Options options;
  options.address = "127.0.0.1:0";
  options.registry = &registry;
  absl::StatusOr<std::unique_ptr<HttpExporter>> exporter = HttpExporter::Start(options);
  EXPECT_TRUE(exporter.ok()) << exporter.status();
  return exporter.ok() ? *std::move(exporter) : nullptr;
}

TEST(HttpExporterTest, ServesTheRegistryAtMetrics) {
  Registry registry;
  absl::StatusOr<CounterFamily*> counter = registry.AddCounter("x_events_total", "Events.", {});
  ASSERT_TRUE(counter.ok());
  (*counter)->WithLabels({}).Increment(2);
  std::unique_ptr<HttpExporter> exporter = StartExporter(registry);
  ASSERT_NE(exporter, nullptr);
  ASSERT_GT(exporter->port(), 0);

  absl::StatusOr<HttpResponse> response = HttpGet(exporter->port(), "/metrics");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status_code, 200);
  EXPECT_EQ(response->headers["Content-Type"], kTextFormatContentType);
  EXPECT_EQ(response->body,
            "# HELP x_events_total Events.\n# TYPE x_events_total counter\nx_events_total 2\n");

  // Every scrape sees the values of that moment.
  (*counter)->WithLabels({}).Increment();
  response = HttpGet(exporter->port(), "/metrics");
  ASSERT_TRUE(response.ok());
  EXPECT_THAT(response->body, HasSubstr("x_events_total 3\n"));
}

TEST(HttpExporterTest, AnswersOtherPathsAndMethodsWithErrors) {
  Registry registry;
  std::unique_ptr<HttpExporter> exporter = StartExporter(registry);
  ASSERT_NE(exporter, nullptr);
  absl::StatusOr<HttpResponse> other = HttpGet(exporter->port(), "/");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->status_code, 404);
  absl::StatusOr<HttpResponse> post = HttpRequest(exporter->port(), "POST", "/metrics");
  ASSERT_TRUE(post.ok());
  EXPECT_EQ(post->status_code, 405);
}

TEST(HttpExporterTest, RejectsBadOptionsNamingThem) {
  Registry registry;
  HttpExporter::Options options;
  options.registry = &registry;
  for (const char* address : {"", "9464", "localhost:port", "127.0.0.1:70000", "::1:80"}) {
    options.address = address;
    const absl::Status status = HttpExporter::Start(options).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << address;
    EXPECT_THAT(std::string(status.message()), HasSubstr("address (\"")) << address;
  }
  options.address = "127.0.0.1:0";
  options.registry = nullptr;
  EXPECT_EQ(HttpExporter::Start(options).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(HttpExporterTest, ReportsAPortInUse) {
  Registry registry;
  std::unique_ptr<HttpExporter> first = StartExporter(registry);
  ASSERT_NE(first, nullptr);
  HttpExporter::Options options;
  options.address = absl::StrCat("127.0.0.1:", first->port());
  options.registry = &registry;
  const absl::Status status = HttpExporter::Start(options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(status.message()), HasSubstr(options.address));
}

}  // namespace
}  // namespace paratune::metrics
