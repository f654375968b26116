#include "server/console/console_api.h"

#include <functional>
#include <optional>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "proto/autotuner_service.pb.h"
#include "server/core/page_token.h"
#include "server/core/plan_request.h"

namespace paratune {
namespace {

// Events come in pages this large, the most ListSearchEvents gives: a search's log is read
// in few requests.
constexpr int64_t kEventsPageSize = 1000;

absl::StatusOr<std::string> ToJson(const google::protobuf::Message& message) {
  std::string json;
  const auto status = google::protobuf::util::MessageToJsonString(message, &json);
  if (!status.ok()) {
    return absl::InternalError(absl::StrCat("cannot print ", message.GetTypeName(),
                                            " as JSON: ", status.message().ToString()));
  }
  return json;
}

std::string ErrorJson(const absl::Status& status) {
  std::string message;
  // A JSON string of the message, escaped by protobuf's printer rather than by hand.
  google::protobuf::Value value;
  value.set_string_value(std::string(status.message()));
  if (!google::protobuf::util::MessageToJsonString(value, &message).ok()) message = "\"\"";
  return absl::StrCat("{\"code\":\"", absl::StatusCodeToString(status.code()),
                      "\",\"message\":", message, "}");
}

absl::StatusOr<std::string> RequiredParameter(const ConsoleApiRequest& request,
                                              const std::string& name) {
  const auto found = request.query.find(name);
  if (found == request.query.end() || found->second.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("query parameter ", name, " is missing from ", request.path));
  }
  return found->second;
}

std::string OptionalParameter(const ConsoleApiRequest& request, const std::string& name) {
  const auto found = request.query.find(name);
  return found == request.query.end() ? "" : found->second;
}

// The ListSearchEvents page token of an events request: its page_token, or with
// after_sequence=N the page after event N (what a page that has the log up to N asks for, so
// that polling reads only what is new). ListSearchEvents' tokens continue after a sequence
// (page_token.h), so N becomes one; 0 is the first page.
absl::StatusOr<std::string> EventsPageToken(const ConsoleApiRequest& request) {
  const std::string after = OptionalParameter(request, "after_sequence");
  const std::string token = OptionalParameter(request, "page_token");
  if (after.empty()) return token;
  if (!token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("query parameter after_sequence (\"", absl::CHexEscape(after.substr(0, 64)),
                     "\") cannot be combined with page_token: give one or the other"));
  }
  int64_t sequence = 0;
  if (!absl::SimpleAtoi(after, &sequence) || sequence < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("query parameter after_sequence (\"", absl::CHexEscape(after.substr(0, 64)),
                     "\") must be an event's sequence, an integer >= 0"));
  }
  return sequence == 0 ? "" : EncodePageToken(sequence);
}

// One path of the API: the HTTP method it answers and the gRPC method whose authorization
// it shares.
struct Route {
  const char* path;
  const char* http_method;
  const char* grpc_method;
};

constexpr Route kRoutes[] = {
    {"/api/whoami", "GET", "/paratune.v1.Autotuner/ListSearches"},
    {"/api/searches", "GET", "/paratune.v1.Autotuner/ListSearches"},
    {"/api/search", "GET", "/paratune.v1.Autotuner/GetSearch"},
    {"/api/events", "GET", "/paratune.v1.Autotuner/ListSearchEvents"},
    {"/api/search_plan", "GET", "/paratune.v1.Autotuner/Plan"},
    {"/api/workers", "GET", "/paratune.v1.Autotuner/ListWorkers"},
    {"/api/plan", "POST", "/paratune.v1.Autotuner/Plan"},
    // The explanation of one configuration of a plan: who may plan may have it explained.
    {"/api/explain", "POST", "/paratune.v1.Autotuner/Plan"},
};

// The body of a POST to `request.path` as a `T`, within the cap on the size of a `method`
// request, which applies to the JSON too, before it is parsed. INVALID_ARGUMENT naming the
// path and the message type otherwise.
template <typename T>
absl::StatusOr<T> ParseBody(const ConsoleApiRequest& request, absl::string_view method,
                            int64_t max_request_bytes) {
  T message;
  PT_RETURN_IF_ERROR(CheckRequestBytes(method, request.body.size(), max_request_bytes));
  if (const auto status = google::protobuf::util::JsonStringToMessage(request.body, &message);
      !status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the body of POST ", request.path, " is not a JSON ",
                     message.GetDescriptor()->name(), ": ", status.message().ToString()));
  }
  return message;
}

}  // namespace

int HttpStatusOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

ConsoleApiReply ConsoleApi::Handle(const ConsoleApiRequest& request) const {
  for (const Route& route : kRoutes) {
    if (request.path != route.path) continue;
    if (request.method != route.http_method) {
      return {405, ErrorJson(absl::InvalidArgumentError(absl::StrCat(
                       request.path, " answers ", route.http_method, ", not ", request.method)))};
    }
    absl::StatusOr<std::string> json = Answer(request, route.grpc_method);
    if (!json.ok()) return {HttpStatusOf(json.status().code()), ErrorJson(json.status())};
    return {200, *std::move(json)};
  }
  return {404, ErrorJson(absl::NotFoundError(absl::StrCat("no API at ", request.path)))};
}

absl::StatusOr<std::string> ConsoleApi::Answer(const ConsoleApiRequest& request,
                                               absl::string_view grpc_method) const {
  Caller caller;
  if (options_.tokens != nullptr) {
    CallCredentials credentials;
    for (const std::string& value : request.authorization) {
      credentials.authorization.push_back(value);
    }
    PT_ASSIGN_OR_RETURN(caller,
                        AuthorizeCall(*options_.tokens->tokens(), grpc_method, credentials));
  }
  const SearchReader& reader = *options_.reader;
  const std::string path = request.path;
  if (path == "/api/whoami") {
    // Field names as in the proto3 JSON of the other answers.
    google::protobuf::Struct who;
    auto& fields = *who.mutable_fields();
    fields["tokens"].set_bool_value(options_.tokens != nullptr);
    if (caller.has_value()) {
      fields["principal"].set_string_value(caller->name);
      fields["role"].set_string_value(std::string(RoleName(caller->role)));
    }
    return ToJson(who);
  }
  if (path == "/api/searches") {
    v1::ListSearchesRequest list;
    list.set_page_token(OptionalParameter(request, "page_token"));
    PT_ASSIGN_OR_RETURN(const v1::ListSearchesResponse searches, reader.ListSearches(list, caller));
    return ToJson(searches);
  }
  if (path == "/api/search") {
    PT_ASSIGN_OR_RETURN(const std::string name, RequiredParameter(request, "name"));
    PT_ASSIGN_OR_RETURN(const v1::Search search, reader.GetSearch(name, caller));
    return ToJson(search);
  }
  if (path == "/api/events") {
    v1::ListSearchEventsRequest list;
    PT_ASSIGN_OR_RETURN(*list.mutable_name(), RequiredParameter(request, "name"));
    list.set_page_size(kEventsPageSize);
    PT_ASSIGN_OR_RETURN(*list.mutable_page_token(), EventsPageToken(request));
    PT_ASSIGN_OR_RETURN(const v1::ListSearchEventsResponse events,
                        reader.ListSearchEvents(list, caller));
    return ToJson(events);
  }
  if (path == "/api/search_plan") {
    PT_ASSIGN_OR_RETURN(const std::string name, RequiredParameter(request, "name"));
    PT_ASSIGN_OR_RETURN(const v1::Search search, reader.GetSearch(name, caller));
    v1::PlanRequest plan;
    *plan.mutable_spec() = search.spec();
    PT_ASSIGN_OR_RETURN(const v1::PlanResponse response,
                        AnswerPlanWithinLimits(plan, options_.limits));
    return ToJson(response);
  }
  if (path == "/api/workers") {
    PT_ASSIGN_OR_RETURN(const v1::ListWorkersResponse workers, reader.ListWorkers(caller));
    return ToJson(workers);
  }
  if (path == "/api/explain") {
    PT_ASSIGN_OR_RETURN(
        const v1::ExplainRequest explain,
        ParseBody<v1::ExplainRequest>(request, "Explain", options_.limits.max_request_bytes));
    PT_ASSIGN_OR_RETURN(const v1::ExplainResponse response,
                        AnswerExplainWithinLimits(explain, options_.limits));
    return ToJson(response);
  }
  // POST /api/plan.
  PT_ASSIGN_OR_RETURN(
      const v1::PlanRequest plan,
      ParseBody<v1::PlanRequest>(request, "Plan", options_.limits.max_request_bytes));
  PT_ASSIGN_OR_RETURN(const v1::PlanResponse response,
                      AnswerPlanWithinLimits(plan, options_.limits));
  return ToJson(response);
}

}  // namespace paratune
