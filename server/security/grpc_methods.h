// The full names ("/package.Service/Method") of the gRPC methods a paratune-server serves:
// for the RPC metrics' bounded method label (server/rpc_metrics.h) and for deciding who may
// call what (server/security/rpc_authorization.h).
#ifndef PARATUNE_SERVER_SECURITY_GRPC_METHODS_H_
#define PARATUNE_SERVER_SECURITY_GRPC_METHODS_H_

#include <string>
#include <vector>

namespace paratune {

// The methods of the health checking and reflection services gRPC adds to every server.
std::vector<std::string> StandardGrpcMethods();

// The full method names of a service compiled into the binary, from protobuf's generated
// descriptor pool; empty when it knows no such service.
std::vector<std::string> MethodsOfService(const std::string& service_full_name);

}  // namespace paratune

#endif  // PARATUNE_SERVER_SECURITY_GRPC_METHODS_H_
