// Fuzzes the server's token file parser (server/security/token_table.h) and the bearer token syntax
// check: no input crashes them, a table finds every token and certificate of its file with the
// role and name the file gives it, and an error never quotes a token-like field of the file.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/bearer_token.h"
#include "fuzz/fuzz_input.h"
#include "server/security/token_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using paratune::FuzzCheck;
  const absl::string_view text = paratune::FuzzText(data, size);
  (void)paratune::CheckTokenSyntax(text);

  const absl::StatusOr<paratune::TokenTable> table =
      paratune::TokenTable::Parse("fuzz", text, paratune::ClientCertificates::kVerified);
  if (table.ok()) {
    const size_t credentials = table->tokens() + table->certificates();
    FuzzCheck(credentials >= 1 && credentials <= paratune::TokenTable::kMaxCredentials,
              "a parsed table holds 1 to kMaxCredentials credentials");
    FuzzCheck(table->principals() >= 1 && table->principals() <= credentials,
              "a parsed table names 1 principal up to one per credential");
  }
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    const std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    for (absl::string_view field : fields) {
      if (!table.ok() && paratune::CheckTokenSyntax(field).ok()) {
        FuzzCheck(!absl::StrContains(table.status().message(), field),
                  "a token file error quotes a token-like field");
      }
    }
    if (table.ok()) {
      FuzzCheck(fields.size() == 3,
                "a parsed table's lines are ROLE NAME TOKEN or ROLE NAME cert:COMMON_NAME");
      absl::string_view credential = fields[2];
      const std::optional<paratune::Principal> principal =
          absl::ConsumePrefix(&credential, paratune::TokenTable::kCertificatePrefix)
              ? table->FindCertificate(credential)
              : table->Find(credential);
      FuzzCheck(principal.has_value() && paratune::RoleName(principal->role) == fields[0] &&
                    principal->name == fields[1],
                "a parsed table finds each token and certificate with its role and name");
    }
  }
  return 0;
}
