// How the CLI prints results: the proto's canonical JSON for programs, text for people.
#ifndef PARATUNE_CLI_OUTPUT_H_
#define PARATUNE_CLI_OUTPUT_H_

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/message.h"

namespace paratune {

struct OutputOptions {
  // Print the canonical JSON mapping of the result proto instead of text.
  bool json = false;
  // stdout is a terminal: progress may redraw in place.
  bool terminal = false;
  // The width to fit output to on a terminal (cli/terminal.h, TerminalColumns).
  int terminal_columns = 80;
  // Colour text (--color, cli/terminal.h UseColor).
  bool color = false;
};

// `message` in the proto's canonical JSON mapping (lowerCamelCase field names), indented: the
// one JSON convention of every CLI output, `--json` and `export --format=json` alike.
absl::StatusOr<std::string> ToJson(const google::protobuf::Message& message);

// Writes `message` as canonical JSON (one object, then '\n') when options.json, else `text`.
absl::Status Print(const google::protobuf::Message& message, const std::string& text,
                   const OutputOptions& options, std::ostream& out);

}  // namespace paratune

#endif  // PARATUNE_CLI_OUTPUT_H_
