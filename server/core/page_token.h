// Opaque page tokens of ListSearches and ListSearchEvents: the position (a search id or an
// event sequence, >= 1) where the last page ended.
#ifndef PARATUNE_SERVER_CORE_PAGE_TOKEN_H_
#define PARATUNE_SERVER_CORE_PAGE_TOKEN_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace paratune {

// A token for "continue after `position`" (position >= 1).
std::string EncodePageToken(int64_t position);

// The position of a token from EncodePageToken; 0 for the empty token (first page).
// INVALID_ARGUMENT naming page_token for anything else.
absl::StatusOr<int64_t> DecodePageToken(absl::string_view token);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_PAGE_TOKEN_H_
