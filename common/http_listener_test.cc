#include "common/http_listener.h"

#include <civetweb.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/http_client.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

// Answers with the text `data` points at and the path it was asked for.
int AnswerText(mg_connection* connection, void* data) {
  const std::string body = absl::StrCat(*static_cast<const std::string*>(data), " at ",
                                        mg_get_request_info(connection)->local_uri);
  mg_printf(connection,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n\r\n",
            body.size());
  mg_write(connection, body.data(), body.size());
  return 200;
}

HttpListener::Options OptionsWith(std::string* text) {
  HttpListener::Options options;
  options.address = "127.0.0.1:0";
  options.address_name = "test_address";
  options.served = "the test pages";
  options.routes = {{"/hello$", &AnswerText, text}};
  return options;
}

TEST(HttpListenerTest, ServesItsRoutesOnThePortItBound) {
  std::string text = "hello";
  absl::StatusOr<std::unique_ptr<HttpListener>> listener = HttpListener::Start(OptionsWith(&text));
  ASSERT_TRUE(listener.ok()) << listener.status();
  const int port = (*listener)->port();
  ASSERT_GT(port, 0);

  absl::StatusOr<HttpResponse> response = HttpGet(port, "/hello");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status_code, 200);
  EXPECT_EQ(response->body, "hello at /hello");
  // Only the routes answer: no file system, no directory listing.
  response = HttpGet(port, "/");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status_code, 404);

  listener->reset();
  EXPECT_EQ(HttpGet(port, "/hello").status().code(), absl::StatusCode::kUnavailable)
      << "still serving after destruction";
}

TEST(HttpListenerTest, ReportsAnAddressInUseNamingIt) {
  std::string text = "first";
  absl::StatusOr<std::unique_ptr<HttpListener>> first = HttpListener::Start(OptionsWith(&text));
  ASSERT_TRUE(first.ok()) << first.status();
  HttpListener::Options options = OptionsWith(&text);
  options.address = absl::StrCat("127.0.0.1:", (*first)->port());
  const absl::Status status = HttpListener::Start(options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr(absl::StrCat("cannot serve the test pages on test_address (\"",
                                     options.address, "\")")));
}

TEST(HttpListenerTest, RejectsBadOptionsNamingThem) {
  std::string text = "unused";
  HttpListener::Options options = OptionsWith(&text);
  for (const int threads : {0, 65}) {
    options.threads = threads;
    const absl::Status status = HttpListener::Start(options).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << threads;
    EXPECT_THAT(std::string(status.message()), HasSubstr(absl::StrCat("threads (", threads, ")")));
  }
  options = OptionsWith(&text);
  options.routes.push_back({"/other", nullptr, nullptr});
  const absl::Status status = HttpListener::Start(options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("\"/other\""));
}

}  // namespace
}  // namespace paratune
