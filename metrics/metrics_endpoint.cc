#include "metrics/metrics_endpoint.h"

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/port_file.h"

namespace paratune::metrics {

absl::StatusOr<std::unique_ptr<HttpExporter>> StartMetricsEndpoint(const std::string& address,
                                                                   const std::string& port_file,
                                                                   const Registry& registry) {
  if (address.empty()) return nullptr;
  HttpExporter::Options options;
  options.address = address;
  options.registry = &registry;
  absl::StatusOr<std::unique_ptr<HttpExporter>> exporter = HttpExporter::Start(options);
  if (!exporter.ok()) {
    return absl::Status(exporter.status().code(),
                        absl::StrCat("--metrics_address: ", exporter.status().message()));
  }
  Log(LogLevel::kInfo, "serving metrics",
      {{"address", address}, {"port", absl::StrCat((*exporter)->port())}});
  if (absl::Status status = WritePortFile("--metrics_port_file", port_file, (*exporter)->port());
      !status.ok()) {
    return status;
  }
  return exporter;
}

}  // namespace paratune::metrics
