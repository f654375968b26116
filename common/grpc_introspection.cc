#include "common/grpc_introspection.h"

#include <utility>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/grpc_client.h"
#include "common/grpc_status.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/client_callback.h"

namespace paratune {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(30);

std::string Bytes(const grpc::ByteBuffer& buffer) {
  grpc::Slice slice;
  if (!buffer.TrySingleSlice(&slice).ok() && !buffer.DumpToSingleSlice(&slice).ok()) return "";
  return std::string(reinterpret_cast<const char*>(slice.begin()), slice.size());
}

grpc::ByteBuffer Buffer(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

// One request and one response on a bidi stream of raw bytes.
class OneExchange : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  explicit OneExchange(const std::string& request) : request_(Buffer(request)) {}
  void Begin() {
    StartWrite(&request_);
    StartRead(&response_);
    StartCall();
  }
  void OnWriteDone(bool) override { StartWritesDone(); }
  void OnReadDone(bool ok) override { read_ok_ = ok; }
  void OnDone(const grpc::Status& status) override {
    status_ = status;
    done_.Notify();
  }
  absl::StatusOr<std::string> Wait() {
    if (!done_.WaitForNotificationWithTimeout(kTimeout)) {
      return absl::DeadlineExceededError("reflection call did not end");
    }
    if (!status_.ok()) return FromGrpcStatus(status_);
    return read_ok_ ? Bytes(response_) : "";
  }

 private:
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;
  bool read_ok_ = false;
  grpc::Status status_;
  absl::Notification done_;
};

}  // namespace

absl::StatusOr<int> CheckHealth(const std::shared_ptr<grpc::Channel>& channel) {
  grpc::GenericStub raw_client(channel);
  const std::unique_ptr<grpc::ClientContext> context = ContextWithTimeout(kTimeout);
  // HealthCheckRequest{service: ""} encodes to no bytes.
  const grpc::ByteBuffer request = Buffer("");
  grpc::ByteBuffer response;
  absl::Notification done;
  grpc::Status status;
  raw_client.UnaryCall(context.get(), "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request,
                       &response, [&](grpc::Status s) {
                         status = std::move(s);
                         done.Notify();
                       });
  if (!done.WaitForNotificationWithTimeout(kTimeout)) {
    return absl::DeadlineExceededError("health check did not end");
  }
  if (!status.ok()) return FromGrpcStatus(status);
  // HealthCheckResponse{status: N} is the bytes 0x08 N; proto3 omits N = 0 (UNKNOWN).
  const std::string bytes = Bytes(response);
  if (bytes.empty()) return 0;
  if (bytes.size() != 2 || bytes[0] != '\x08') {
    return absl::InternalError("unexpected HealthCheckResponse encoding");
  }
  return static_cast<int>(bytes[1]);
}

absl::StatusOr<std::string> ListServicesByReflection(
    const std::shared_ptr<grpc::Channel>& channel) {
  grpc::GenericStub raw_client(channel);
  const std::unique_ptr<grpc::ClientContext> context = ContextWithTimeout(kTimeout);
  // ServerReflectionRequest{list_services: ""} (field 7, length-delimited, empty).
  OneExchange exchange(std::string("\x3a\x00", 2));
  raw_client.PrepareBidiStreamingCall(
      context.get(), "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
      grpc::StubOptions(), &exchange);
  exchange.Begin();
  return exchange.Wait();
}

}  // namespace paratune
