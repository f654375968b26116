#include "common/grpc_client.h"

namespace paratune {

std::unique_ptr<grpc::ClientContext> ContextWithTimeout(absl::Duration timeout) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  return context;
}

}  // namespace paratune
