#include "cli/autotuner_client.h"

#include <grpcpp/grpcpp.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc_client.h"
#include "common/grpc_status.h"

namespace paratune {

AutotunerClient::AutotunerClient(const std::string& address,
                                 std::shared_ptr<grpc::ChannelCredentials> credentials,
                                 absl::Duration rpc_timeout)
    : address_(address),
      rpc_timeout_(rpc_timeout),
      stub_(v1::Autotuner::NewStub(grpc::CreateChannel(address, std::move(credentials)))) {}

absl::Status AutotunerClient::ToStatus(const grpc::Status& status) const {
  if (status.ok()) return absl::OkStatus();
  std::string message = status.error_message();
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    // A TLS handshake that fails looks the same as a server that is down.
    absl::StrAppend(&message, " (is paratune-server running at ", address_,
                    ", and do --tls_ca, --tls_cert and --tls_key match its TLS settings?)");
  }
  return FromGrpcStatus(grpc::Status(status.error_code(), message));
}

template <typename Response, typename Request, typename Method>
absl::StatusOr<Response> AutotunerClient::Call(Method method, const Request& request) {
  Response response;
  auto context = ContextWithTimeout(rpc_timeout_);
  absl::Status status = ToStatus((stub_.get()->*method)(context.get(), request, &response));
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<v1::Search> AutotunerClient::CreateSearch(const v1::CreateSearchRequest& request) {
  return Call<v1::Search>(&v1::Autotuner::Stub::CreateSearch, request);
}

absl::StatusOr<v1::Search> AutotunerClient::GetSearch(const std::string& name) {
  v1::GetSearchRequest request;
  request.set_name(name);
  return Call<v1::Search>(&v1::Autotuner::Stub::GetSearch, request);
}

absl::StatusOr<v1::ListSearchesResponse> AutotunerClient::ListSearches(
    const v1::ListSearchesRequest& request) {
  return Call<v1::ListSearchesResponse>(&v1::Autotuner::Stub::ListSearches, request);
}

absl::StatusOr<v1::Search> AutotunerClient::CancelSearch(const std::string& name) {
  v1::CancelSearchRequest request;
  request.set_name(name);
  return Call<v1::Search>(&v1::Autotuner::Stub::CancelSearch, request);
}

absl::StatusOr<v1::ListWorkersResponse> AutotunerClient::ListWorkers() {
  return Call<v1::ListWorkersResponse>(&v1::Autotuner::Stub::ListWorkers, v1::ListWorkersRequest());
}

absl::StatusOr<v1::ListSearchEventsResponse> AutotunerClient::ListSearchEvents(
    const v1::ListSearchEventsRequest& request) {
  return Call<v1::ListSearchEventsResponse>(&v1::Autotuner::Stub::ListSearchEvents, request);
}

absl::Status AutotunerClient::WatchSearch(
    const std::string& name, absl::Duration watch_timeout,
    const std::function<absl::Status(const v1::WatchSearchResponse&)>& on_event) {
  v1::WatchSearchRequest request;
  request.set_name(name);
  auto context = ContextWithTimeout(watch_timeout);
  std::unique_ptr<grpc::ClientReader<v1::WatchSearchResponse>> reader =
      stub_->WatchSearch(context.get(), request);
  v1::WatchSearchResponse event;
  absl::Status handled;
  while (handled.ok() && reader->Read(&event)) handled = on_event(event);
  if (!handled.ok()) {
    // Finish waits for the stream to end: cancelling ends it now.
    context->TryCancel();
    reader->Finish();
    return handled;
  }
  return ToStatus(reader->Finish());
}

}  // namespace paratune
