#include "fuzz/fuzz_message.h"

#include <cstddef>
#include <cstdint>
#include <string>

#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/stubs/logging.h"
#include "google/protobuf/text_format.h"

namespace paratune {

bool ParseFuzzMessage(absl::string_view input, google::protobuf::Message& message) {
  // Malformed inputs are the rule: a log line for each (a string field that is not UTF-8)
  // would cost more than the parse and fill the disk with libFuzzer's log.
  const google::protobuf::LogSilencer quiet_log;
  if (message.ParseFromArray(input.data(), static_cast<int>(input.size()))) return true;
  // Neither are their text format errors worth printing.
  struct Quiet : google::protobuf::io::ErrorCollector {
    void AddError(int, int, const std::string&) override {}
  } quiet;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&quiet);
  message.Clear();
  if (parser.ParseFromString(std::string(input), &message)) return true;
  message.Clear();
  return false;
}

void FuzzNamedRpc(absl::Span<const FuzzedRpc> rpcs, absl::string_view input) {
  const size_t newline = input.find('\n');
  const absl::string_view name = input.substr(0, newline);
  const absl::string_view request =
      newline == absl::string_view::npos ? absl::string_view() : input.substr(newline + 1);
  const FuzzedRpc* rpc = &rpcs[input.empty() ? 0 : static_cast<uint8_t>(input[0]) % rpcs.size()];
  for (const FuzzedRpc& known : rpcs) {
    if (known.name == name) rpc = &known;
  }
  rpc->fuzz(request);
}

}  // namespace paratune
