// Fuzzes page token decoding (server/core/page_token.h): no token crashes it, a decoded position
// is 0 (first page) or >= 1, and it encodes back to a token that decodes to itself.
#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "fuzz/fuzz_input.h"
#include "server/core/page_token.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using paratune::FuzzCheck;
  const absl::StatusOr<int64_t> position =
      paratune::DecodePageToken(paratune::FuzzText(data, size));
  if (!position.ok()) {
    FuzzCheck(position.status().code() == absl::StatusCode::kInvalidArgument,
              "a bad page token is INVALID_ARGUMENT");
    return 0;
  }
  FuzzCheck(*position >= 0, "a decoded position is not negative");
  FuzzCheck((*position == 0) == (size == 0), "only the empty token is the first page");
  if (*position >= 1) {
    const absl::StatusOr<int64_t> again =
        paratune::DecodePageToken(paratune::EncodePageToken(*position));
    FuzzCheck(again.ok() && *again == *position, "an encoded position decodes to itself");
  }
  return 0;
}
