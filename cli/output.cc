#include "cli/output.h"

#include "google/protobuf/util/json_util.h"

namespace paratune {

absl::StatusOr<std::string> ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions json_options;
  json_options.add_whitespace = true;
  std::string json;
  const auto status = google::protobuf::util::MessageToJsonString(message, &json, json_options);
  if (!status.ok()) {
    return absl::InternalError("cannot print " + message.GetTypeName() +
                               " as JSON: " + std::string(status.message()));
  }
  return json;
}

absl::Status Print(const google::protobuf::Message& message, const std::string& text,
                   const OutputOptions& options, std::ostream& out) {
  if (!options.json) {
    out << text;
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> json = ToJson(message);
  if (!json.ok()) return json.status();
  out << *json;
  if (json->empty() || json->back() != '\n') out << '\n';
  return absl::OkStatus();
}

}  // namespace paratune
