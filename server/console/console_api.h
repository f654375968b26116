// The web console's JSON API (docs/console.md): the read-only half of the Autotuner API and
// the planner, answered from the same readers as the gRPC services (SearchReader,
// AnswerPlanWithinLimits) and printed as canonical proto3 JSON. Each request is authorized as
// the gRPC method it mirrors would be (AuthorizeCall): with a token file, a request must
// carry "Authorization: Bearer TOKEN" of a client or admin principal, and a client sees only
// its own searches, as over gRPC.
//
//   GET  /api/whoami                      who the token names (for the login page)
//   GET  /api/searches?page_token=T       Autotuner.ListSearches
//   GET  /api/search?name=searches/N      Autotuner.GetSearch
//   GET  /api/events?name=searches/N&page_token=T
//                                         Autotuner.ListSearchEvents, 1,000 a page
//   GET  /api/events?name=searches/N&after_sequence=S
//                                         the same, from the first event after event S
//                                         (SearchEvent.sequence): a live page polls for
//                                         what is new, not the whole log
//   GET  /api/search_plan?name=searches/N Autotuner.Plan of the search's spec
//   GET  /api/workers                     Autotuner.ListWorkers
//   POST /api/plan  (body: PlanRequest as JSON)
//                                         Autotuner.Plan
//   POST /api/explain  (body: ExplainRequest as JSON)
//                                         why one configuration is or is not a candidate of
//                                         a plan (`paratune plan --explain`), authorized as
//                                         Autotuner.Plan
#ifndef PARATUNE_SERVER_CONSOLE_CONSOLE_API_H_
#define PARATUNE_SERVER_CONSOLE_CONSOLE_API_H_

#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "server/core/limits.h"
#include "server/core/search_reader.h"
#include "server/security/rpc_authorization.h"

namespace paratune {

// One HTTP request to the API, as the console's HTTP server parsed it.
struct ConsoleApiRequest {
  std::string method;  // "GET", "POST"
  std::string path;    // "/api/search"
  // Decoded query parameters.
  std::map<std::string, std::string> query;
  std::string body;
  // The values of its Authorization headers.
  std::vector<std::string> authorization;
};

struct ConsoleApiReply {
  int http_status = 200;
  // The response as JSON; on error {"code": "NOT_FOUND", "message": "..."}.
  std::string json;
};

// The HTTP status of an error of `code`: INVALID_ARGUMENT and FAILED_PRECONDITION 400,
// UNAUTHENTICATED 401, PERMISSION_DENIED 403, NOT_FOUND 404, RESOURCE_EXHAUSTED 429,
// UNAVAILABLE 503, any other 500.
int HttpStatusOf(absl::StatusCode code);

// Thread-safe: it holds no state of its own, and its readers are.
class ConsoleApi {
 public:
  struct Options {
    // Not owned; must outlive the API.
    const SearchReader* reader = nullptr;
    // The server's caps on Plan requests.
    Limits limits;
    // The server's token table; null on a server without a token file (every request is
    // then the principal-less caller, as over gRPC). Not owned.
    const TokenAuthMetadataProcessor* tokens = nullptr;
  };

  explicit ConsoleApi(Options options) : options_(std::move(options)) {}

  // Answers a request under /api/: 404 for an unknown path, 405 for a method other than the
  // path's, 401/403 as AuthorizeCall, 400 naming the parameter for a missing or malformed
  // one, and the readers' errors with HttpStatusOf their code.
  ConsoleApiReply Handle(const ConsoleApiRequest& request) const;

  // The cap on a request's body (Limits::max_request_bytes).
  int64_t max_request_bytes() const { return options_.limits.max_request_bytes; }

 private:
  // The JSON answer of a request to a known path, authorized as `grpc_method`.
  absl::StatusOr<std::string> Answer(const ConsoleApiRequest& request,
                                     absl::string_view grpc_method) const;

  const Options options_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_CONSOLE_CONSOLE_API_H_
