// Fuzzes launch template parsing (launch/launch_template.h LaunchTemplate::Create): the input
// is a CommandTemplate in protobuf text format, or, when it is not one, a template whose argv
// elements are the input's lines (the first ending the framework entry's prefix), so the
// fuzzer spends its time in the placeholder and condition syntax rather than in protobuf's.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_input.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "launch/launch_template.h"
#include "proto/worker_config.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using paratune::FuzzCheck;
  const absl::string_view text = paratune::FuzzText(data, size);
  paratune::v1::CommandTemplate command;
  google::protobuf::TextFormat::Parser parser;
  parser.AllowPartialMessage(true);
  // Protobuf logs every text that does not parse; most inputs are argv lines.
  struct Quiet : google::protobuf::io::ErrorCollector {
    void AddError(int, int, const std::string&) override {}
  } quiet;
  parser.RecordErrorsTo(&quiet);
  if (!parser.ParseFromString(std::string(text), &command)) {
    command.Clear();
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      if (line.size() > 1 && line[0] == '=' && line[1] == ' ') {
        // "= NAME VALUE": an env entry.
        const std::pair<std::string, std::string> entry =
            absl::StrSplit(line.substr(2), absl::MaxSplits(' ', 1));
        (*command.mutable_env())[entry.first] = entry.second;
      } else if (line.size() > 1 && line[0] == '>' && line[1] == ' ') {
        // "> ENTRY": the framework entry.
        command.set_framework_entry(std::string(line.substr(2)));
      } else {
        command.add_argv(std::string(line));
      }
    }
  }
  const absl::StatusOr<paratune::LaunchTemplate> launch =
      paratune::LaunchTemplate::Create(command, "command_templates[0]");
  if (!launch.ok()) {
    FuzzCheck(launch.status().code() == absl::StatusCode::kInvalidArgument,
              "a bad launch template is INVALID_ARGUMENT");
    return 0;
  }
  for (const char* placeholder : {"gbs", "tp", "dp", "probe", "recompute", "nosuch"}) {
    (void)launch->Uses(placeholder);
  }
  return 0;
}
