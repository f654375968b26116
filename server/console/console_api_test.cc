#include "server/console/console_api.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/autotuner_service.pb.h"
#include "server/core/search_reader.h"
#include "server/core/test_requests.h"
#include "server/security/rpc_authorization.h"
#include "server/security/token_table.h"
#include "server/store/fake_search_store.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kAliceToken[] = "console-alice-token-1a2b3c4d";
constexpr char kBobToken[] = "console-bob-token-5e6f7a8b";
constexpr char kWorkerToken[] = "console-worker-token-9c0d1e2f";
constexpr char kAdminToken[] = "console-admin-token-3a4b5c6d";
constexpr char kUnknownToken[] = "console-unknown-token-7e8f9a0b";

// Every GET route, for a search that exists.
const std::vector<std::string>& GetPaths() {
  static const auto* const paths =
      new std::vector<std::string>{"/api/whoami", "/api/searches",    "/api/search",
                                   "/api/events", "/api/search_plan", "/api/workers"};
  return *paths;
}

// An event as servers logged it before events had kinds: its text alone (the API reads it so).
StoredEvent Logged(int64_t search_id, int64_t unix_seconds, const std::string& text) {
  StoredEvent stored{search_id, 0, absl::FromUnixSeconds(unix_seconds), {}};
  stored.event.set_text(text);
  return stored;
}

// A store holding searches/1 of alice with three events and searches/2 of bob with one,
// and the console's API over it with a token file naming alice, bob, a worker and an admin.
class ConsoleApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreBatch batch;
    batch.searches[1].fields = StoredSearch("searches/1", "alice");
    batch.searches[2].fields = StoredSearch("searches/2", "bob");
    for (const char* text : {"searches/1 created", "candidates/0 leased to workers/1",
                             "candidates/0 probed on workers/1"}) {
      batch.events.push_back(Logged(1, 1700000000, text));
    }
    batch.events.push_back(Logged(2, 1700000000, "searches/2 created"));
    ASSERT_TRUE(store_.Apply(batch).ok());

    absl::StatusOr<TokenTable> tokens = TokenTable::Parse(
        "tokens",
        absl::StrCat("client alice ", kAliceToken, "\nclient bob ", kBobToken, "\nworker pool ",
                     kWorkerToken, "\nadmin ops ", kAdminToken, "\n"),
        ClientCertificates::kNotVerified);
    ASSERT_TRUE(tokens.ok()) << tokens.status();
    tokens_ = std::make_unique<TokenAuthMetadataProcessor>(*std::move(tokens), nullptr);
  }

  static v1::Search StoredSearch(const std::string& name, const std::string& creator) {
    v1::Search search;
    search.set_name(name);
    search.set_state(v1::PROBING);
    search.set_creator(creator);
    *search.mutable_spec() = SmallSimSearch(/*top_k=*/2).spec();
    return search;
  }

  ConsoleApi Api(bool with_tokens) const {
    ConsoleApi::Options options;
    options.reader = &reader_;
    options.tokens = with_tokens ? tokens_.get() : nullptr;
    return ConsoleApi(options);
  }

  // GET `path`?`query` with `token` (none when empty) from the API with tokens.
  ConsoleApiReply Get(const std::string& token, const std::string& path,
                      std::map<std::string, std::string> query = {}) const {
    ConsoleApiRequest request;
    request.method = "GET";
    request.path = path;
    request.query = std::move(query);
    if (!token.empty()) request.authorization.push_back(absl::StrCat("Bearer ", token));
    return Api(/*with_tokens=*/true).Handle(request);
  }

  // GET `path` of searches/`id`, the parameter every search route takes.
  ConsoleApiReply GetOfSearch(const std::string& token, const std::string& path, int id) const {
    return Get(token, path, {{"name", absl::StrCat("searches/", id)}});
  }

  static std::vector<std::string> ListedNames(const ConsoleApiReply& reply) {
    v1::ListSearchesResponse response;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(reply.json, &response).ok())
        << reply.json;
    std::vector<std::string> names;
    for (const v1::Search& search : response.searches()) names.push_back(search.name());
    return names;
  }

  static std::vector<std::string> EventTexts(const ConsoleApiReply& reply,
                                             std::vector<int64_t>* sequences = nullptr) {
    v1::ListSearchEventsResponse response;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(reply.json, &response).ok())
        << reply.json;
    EXPECT_EQ(response.next_page_token(), "");
    std::vector<std::string> texts;
    for (const v1::SearchEvent& event : response.events()) {
      texts.push_back(event.text());
      if (sequences != nullptr) sequences->push_back(event.sequence());
    }
    return texts;
  }

  FakeSearchStore store_;
  SearchReader reader_{&store_};
  std::unique_ptr<TokenAuthMetadataProcessor> tokens_;
};

TEST_F(ConsoleApiTest, EveryRouteRefusesAMissingOrUnknownTokenAndAWorkerToken) {
  for (const std::string& path : GetPaths()) {
    for (const std::string& token : {std::string(), std::string(kUnknownToken)}) {
      const ConsoleApiReply reply = GetOfSearch(token, path, 1);
      EXPECT_EQ(reply.http_status, 401) << path << " with token \"" << token << "\"";
      EXPECT_THAT(reply.json, HasSubstr("\"code\":\"UNAUTHENTICATED\"")) << path;
    }
    const ConsoleApiReply worker = GetOfSearch(kWorkerToken, path, 1);
    EXPECT_EQ(worker.http_status, 403) << path;
    EXPECT_THAT(worker.json, HasSubstr("\"code\":\"PERMISSION_DENIED\"")) << path;
  }
  for (const char* path : {"/api/plan", "/api/explain"}) {
    ConsoleApiRequest post;
    post.method = "POST";
    post.path = path;
    EXPECT_EQ(Api(/*with_tokens=*/true).Handle(post).http_status, 401) << path;
    post.authorization = {absl::StrCat("Bearer ", kWorkerToken)};
    EXPECT_EQ(Api(/*with_tokens=*/true).Handle(post).http_status, 403) << path;
  }
}

TEST_F(ConsoleApiTest, AClientReachesOnlyItsOwnSearchesAsOverGrpc) {
  const ConsoleApiReply who = Get(kAliceToken, "/api/whoami");
  ASSERT_EQ(who.http_status, 200) << who.json;
  google::protobuf::Struct whoami;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(who.json, &whoami).ok());
  EXPECT_EQ(whoami.fields().at("principal").string_value(), "alice");
  EXPECT_EQ(whoami.fields().at("role").string_value(), "client");
  EXPECT_TRUE(whoami.fields().at("tokens").bool_value());

  const ConsoleApiReply list = Get(kAliceToken, "/api/searches");
  ASSERT_EQ(list.http_status, 200) << list.json;
  EXPECT_THAT(ListedNames(list), ElementsAre("searches/1"));
  for (const char* path : {"/api/search", "/api/events", "/api/search_plan"}) {
    EXPECT_EQ(GetOfSearch(kAliceToken, path, 1).http_status, 200) << path;
    // bob's search is as absent as one that does not exist, as over gRPC.
    const ConsoleApiReply others = GetOfSearch(kAliceToken, path, 2);
    EXPECT_EQ(others.http_status, 404) << path;
    EXPECT_EQ(others.json, "{\"code\":\"NOT_FOUND\",\"message\":\"search searches/2 not found\"}")
        << path;
    EXPECT_EQ(GetOfSearch(kAliceToken, path, 3).http_status, 404) << path;
  }
  EXPECT_EQ(Get(kAliceToken, "/api/workers").http_status, 200);
}

TEST_F(ConsoleApiTest, AnAdminReachesEverySearch) {
  EXPECT_THAT(ListedNames(Get(kAdminToken, "/api/searches")),
              ElementsAre("searches/2", "searches/1"));
  for (const char* path : {"/api/search", "/api/events", "/api/search_plan"}) {
    EXPECT_EQ(GetOfSearch(kAdminToken, path, 2).http_status, 200) << path;
  }
  EXPECT_THAT(EventTexts(GetOfSearch(kAdminToken, "/api/events", 2)),
              ElementsAre("searches/2 created"));
}

TEST_F(ConsoleApiTest, WithoutATokenFileEveryCallerReachesEverything) {
  ConsoleApiRequest request;
  request.method = "GET";
  request.path = "/api/searches";
  const ConsoleApiReply list = Api(/*with_tokens=*/false).Handle(request);
  ASSERT_EQ(list.http_status, 200) << list.json;
  EXPECT_THAT(ListedNames(list), ElementsAre("searches/2", "searches/1"));
  request.path = "/api/whoami";
  EXPECT_EQ(Api(/*with_tokens=*/false).Handle(request).json, "{\"tokens\":false}");
}

TEST_F(ConsoleApiTest, EventsAfterASequenceAreOnlyTheNewerOnes) {
  std::vector<int64_t> sequences;
  ASSERT_THAT(EventTexts(GetOfSearch(kAliceToken, "/api/events", 1), &sequences),
              ElementsAre("searches/1 created", "candidates/0 leased to workers/1",
                          "candidates/0 probed on workers/1"));
  ASSERT_EQ(sequences.size(), 3u);
  const auto after = [&](int64_t sequence) {
    return EventTexts(Get(kAliceToken, "/api/events",
                          {{"name", "searches/1"}, {"after_sequence", absl::StrCat(sequence)}}));
  };
  EXPECT_THAT(after(0), ElementsAre("searches/1 created", "candidates/0 leased to workers/1",
                                    "candidates/0 probed on workers/1"));
  EXPECT_THAT(after(sequences[0]),
              ElementsAre("candidates/0 leased to workers/1", "candidates/0 probed on workers/1"));
  EXPECT_THAT(after(sequences[2]), ElementsAre());

  // Another search's events in between do not show, and new ones of this search do.
  StoreBatch batch;
  batch.events.push_back(Logged(2, 1700000001, "searches/2 cancelled"));
  batch.events.push_back(Logged(1, 1700000002, "searches/1 succeeded"));
  ASSERT_TRUE(store_.Apply(batch).ok());
  EXPECT_THAT(after(sequences[2]), ElementsAre("searches/1 succeeded"));
}

TEST_F(ConsoleApiTest, MalformedParametersAre400NamingTheParameterAndValue) {
  struct Case {
    std::string path;
    std::map<std::string, std::string> query;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"/api/search", {}, "query parameter name is missing from /api/search"},
      {"/api/search", {{"name", "search/1"}}, "name (\"search/1\")"},
      {"/api/events", {{"name", "searches/x"}}, "name (\"searches/x\")"},
      {"/api/search_plan", {{"name", "1"}}, "name (\"1\")"},
      {"/api/searches", {{"page_token", "bogus"}}, "page_token (\"bogus\")"},
      {"/api/events", {{"name", "searches/1"}, {"page_token", "bogus"}}, "page_token (\"bogus\")"},
      {"/api/events",
       {{"name", "searches/1"}, {"after_sequence", "ten"}},
       "after_sequence (\"ten\") must be an event's sequence"},
      {"/api/events",
       {{"name", "searches/1"}, {"after_sequence", "-1"}},
       "after_sequence (\"-1\") must be an event's sequence"},
      {"/api/events",
       {{"name", "searches/1"}, {"after_sequence", "2"}, {"page_token", "abc"}},
       "after_sequence (\"2\") cannot be combined with page_token"},
  };
  for (const Case& c : cases) {
    const ConsoleApiReply reply = Get(kAliceToken, c.path, c.query);
    EXPECT_EQ(reply.http_status, 400) << c.path << ": " << reply.json;
    EXPECT_THAT(reply.json, HasSubstr("\"code\":\"INVALID_ARGUMENT\"")) << c.path;
    // The message is JSON: its quotes are escaped.
    std::string escaped = c.message;
    for (size_t at = 0; (at = escaped.find('"', at)) != std::string::npos; at += 2) {
      escaped.insert(at, "\\");
    }
    EXPECT_THAT(reply.json, HasSubstr(escaped)) << c.path;
  }

  ConsoleApiRequest plan;
  plan.method = "POST";
  plan.path = "/api/plan";
  plan.body = "{not json";
  plan.authorization = {absl::StrCat("Bearer ", kAliceToken)};
  const ConsoleApiReply reply = Api(/*with_tokens=*/true).Handle(plan);
  EXPECT_EQ(reply.http_status, 400);
  EXPECT_THAT(reply.json, HasSubstr("the body of POST /api/plan is not a JSON PlanRequest"));
}

TEST_F(ConsoleApiTest, AnswersUnknownPathsAndWrongMethods) {
  EXPECT_EQ(Get(kAliceToken, "/api/nothing").http_status, 404);
  ConsoleApiRequest request;
  request.method = "POST";
  request.path = "/api/searches";
  request.authorization = {absl::StrCat("Bearer ", kAliceToken)};
  const ConsoleApiReply reply = Api(/*with_tokens=*/true).Handle(request);
  EXPECT_EQ(reply.http_status, 405);
  EXPECT_THAT(reply.json, HasSubstr("/api/searches answers GET, not POST"));
}

TEST_F(ConsoleApiTest, PlansAPostedRequest) {
  v1::PlanRequest plan_request;
  *plan_request.mutable_spec() = SmallSimSearch(/*top_k=*/2).spec();
  plan_request.set_limit(3);
  ConsoleApiRequest request;
  request.method = "POST";
  request.path = "/api/plan";
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(plan_request, &request.body).ok());
  request.authorization = {absl::StrCat("Bearer ", kAliceToken)};
  const ConsoleApiReply reply = Api(/*with_tokens=*/true).Handle(request);
  ASSERT_EQ(reply.http_status, 200) << reply.json;
  v1::PlanResponse response;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(reply.json, &response).ok());
  EXPECT_EQ(response.candidates_size(), 3);
}

TEST_F(ConsoleApiTest, ExplainsAConfigurationOfAPostedPlan) {
  v1::ExplainRequest explain;
  *explain.mutable_plan()->mutable_spec() = SmallSimSearch(/*top_k=*/2).spec();
  v1::ParallelConfig& config = *explain.mutable_config();
  config.set_data_parallel(1);
  config.set_tensor_parallel(3);
  config.set_pipeline_parallel(1);
  config.set_context_parallel(1);
  config.set_micro_batch_size(1);
  ConsoleApiRequest request;
  request.method = "POST";
  request.path = "/api/explain";
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(explain, &request.body).ok());
  request.authorization = {absl::StrCat("Bearer ", kAliceToken)};
  const ConsoleApiReply reply = Api(/*with_tokens=*/true).Handle(request);
  ASSERT_EQ(reply.http_status, 200) << reply.json;
  v1::ExplainResponse response;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(reply.json, &response).ok());
  EXPECT_EQ(response.outcome(), v1::EXPLAINED_REJECTED);
  EXPECT_THAT(response.reason(), HasSubstr("rejected by a validity rule: "));

  request.body = "{\"config\": 7}";
  const ConsoleApiReply malformed = Api(/*with_tokens=*/true).Handle(request);
  EXPECT_EQ(malformed.http_status, 400);
  EXPECT_THAT(malformed.json,
              HasSubstr("the body of POST /api/explain is not a JSON ExplainRequest"));
}

}  // namespace
}  // namespace paratune
