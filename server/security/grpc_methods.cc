#include "server/security/grpc_methods.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"

namespace paratune {

std::vector<std::string> StandardGrpcMethods() {
  return {"/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch",
          "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"};
}

std::vector<std::string> MethodsOfService(const std::string& service_full_name) {
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(service_full_name);
  std::vector<std::string> methods;
  for (int i = 0; service != nullptr && i < service->method_count(); ++i) {
    methods.push_back(absl::StrCat("/", service_full_name, "/", service->method(i)->name()));
  }
  return methods;
}

}  // namespace paratune
