// A client of the Autotuner service with a deadline on every call.
#ifndef PARATUNE_CLI_AUTOTUNER_CLIENT_H_
#define PARATUNE_CLI_AUTOTUNER_CLIENT_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/security/credentials.h"
#include "proto/autotuner_service.grpc.pb.h"

namespace paratune {

// Thread-compatible. Errors carry the server's canonical code and message; UNAVAILABLE adds
// the address and the TLS flags, so "is the server running, do we agree on TLS?" is
// answerable from the message alone.
class AutotunerClient {
 public:
  // `address` is host:port; `credentials` from LoadClientCredentials
  // (common/client_credentials.h): plaintext, or TLS with a client certificate and token.
  AutotunerClient(const std::string& address, std::shared_ptr<grpc::ChannelCredentials> credentials,
                  absl::Duration rpc_timeout);

  absl::StatusOr<v1::Search> CreateSearch(const v1::CreateSearchRequest& request);
  absl::StatusOr<v1::Search> GetSearch(const std::string& name);
  absl::StatusOr<v1::ListSearchesResponse> ListSearches(const v1::ListSearchesRequest& request);
  absl::StatusOr<v1::Search> CancelSearch(const std::string& name);
  absl::StatusOr<v1::ListWorkersResponse> ListWorkers();
  absl::StatusOr<v1::ListSearchEventsResponse> ListSearchEvents(
      const v1::ListSearchEventsRequest& request);

  // Calls `on_event` for every streamed event (the first is the search as it is when the
  // stream starts) until the search ends (OK), the stream fails, `watch_timeout` passes
  // (DEADLINE_EXCEEDED) or `on_event` returns an error, which ends the stream and is
  // returned.
  absl::Status WatchSearch(
      const std::string& name, absl::Duration watch_timeout,
      const std::function<absl::Status(const v1::WatchSearchResponse&)>& on_event);

 private:
  // One unary call of `method` with the RPC deadline.
  template <typename Response, typename Request, typename Method>
  absl::StatusOr<Response> Call(Method method, const Request& request);

  absl::Status ToStatus(const grpc::Status& status) const;

  std::string address_;
  absl::Duration rpc_timeout_;
  std::unique_ptr<v1::Autotuner::Stub> stub_;
};

}  // namespace paratune

#endif  // PARATUNE_CLI_AUTOTUNER_CLIENT_H_
