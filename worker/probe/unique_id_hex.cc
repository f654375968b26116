#include "worker/probe/unique_id_hex.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace paratune {

std::string EncodeUniqueId(absl::string_view bytes) { return absl::BytesToHexString(bytes); }

absl::StatusOr<std::string> DecodeUniqueId(absl::string_view hex, size_t size) {
  if (hex.size() != 2 * size) {
    return absl::InvalidArgumentError(absl::StrCat("--nccl_id has ", hex.size(),
                                                   " characters; an NCCL unique id is ", 2 * size,
                                                   " hex digits"));
  }
  for (char c : hex) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) {
      return absl::InvalidArgumentError(
          absl::StrCat("--nccl_id has '", std::string(1, c), "', which is not a hex digit"));
    }
  }
  return absl::HexStringToBytes(hex);
}

}  // namespace paratune
