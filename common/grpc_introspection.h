// Asks any gRPC server over a channel what the standard services say, without their
// generated code: the health checking service's overall status and the service list of
// server reflection. For tests of both binaries.
#ifndef PARATUNE_COMMON_GRPC_INTROSPECTION_H_
#define PARATUNE_COMMON_GRPC_INTROSPECTION_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/channel.h"

namespace paratune {

// grpc.health.v1.Health/Check for the overall service (""): 0 UNKNOWN, 1 SERVING, 2 NOT_SERVING.
// The call's error otherwise.
absl::StatusOr<int> CheckHealth(const std::shared_ptr<grpc::Channel>& channel);

// The raw ServerReflectionResponse to list_services, in which every service name appears
// as text. The call's error otherwise.
absl::StatusOr<std::string> ListServicesByReflection(const std::shared_ptr<grpc::Channel>& channel);

}  // namespace paratune

#endif  // PARATUNE_COMMON_GRPC_INTROSPECTION_H_
