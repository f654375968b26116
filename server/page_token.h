// Opaque page tokens of ListSearches: where the next page starts.
#ifndef PARATUNE_SERVER_PAGE_TOKEN_H_
#define PARATUNE_SERVER_PAGE_TOKEN_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace paratune {

// A token for "searches with an id below before_id" (before_id >= 1).
std::string EncodePageToken(int64_t before_id);

// The before_id of a token from EncodePageToken; 0 for the empty token (first page).
// INVALID_ARGUMENT naming page_token for anything else.
absl::StatusOr<int64_t> DecodePageToken(absl::string_view token);

}  // namespace paratune

#endif  // PARATUNE_SERVER_PAGE_TOKEN_H_
