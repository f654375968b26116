// The read-only half of the Autotuner API (GetSearch, ListSearches, ListSearchEvents,
// ListWorkers): answered from the SearchStore alone, without the scheduler's lock, so reads
// never wait for dispatch. What they return is what is stored.
#ifndef PARATUNE_SERVER_CORE_SEARCH_READER_H_
#define PARATUNE_SERVER_CORE_SEARCH_READER_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/autotuner_service.pb.h"
#include "proto/search.pb.h"
#include "server/core/principal.h"
#include "server/core/search_store.h"

namespace paratune {

// NOT_FOUND as the store says it of a search that does not exist; also what a caller is told
// of a search it may not reach (MayAccess), so that others' searches do not show.
absl::Status SearchNotFoundError(int64_t id);

// Thread-safe (the store is). Every call takes its caller: a client principal reaches only
// the searches it created (MayAccess); the others are NOT_FOUND or left out of lists.
class SearchReader {
 public:
  // `store` is not owned and must outlive the reader.
  explicit SearchReader(SearchStore* store) : store_(store) {}

  // As clients see it (convert/search_view.h, ClientView). INVALID_ARGUMENT for a malformed name;
  // NOT_FOUND naming it when there is no such search.
  absl::StatusOr<v1::Search> GetSearch(absl::string_view name,
                                       const Caller& caller = std::nullopt) const;
  // Newest first, without candidates, the caller's only. INVALID_ARGUMENT for page_size
  // outside [0, 1000] or a page_token that no response of this server issued. For a client
  // principal the store is read page by page until the page is full: a page may come with
  // a next_page_token and the next one be empty.
  absl::StatusOr<v1::ListSearchesResponse> ListSearches(const v1::ListSearchesRequest& request,
                                                        const Caller& caller = std::nullopt) const;
  // NOT_FOUND / INVALID_ARGUMENT as GetSearch; INVALID_ARGUMENT for page_size outside
  // [0, 1000] or a foreign page_token.
  absl::StatusOr<v1::ListSearchEventsResponse> ListSearchEvents(
      const v1::ListSearchEventsRequest& request, const Caller& caller = std::nullopt) const;
  // Every registered worker; the probe a worker runs (current_probe) only to callers that may
  // reach its search (MayAccess): others' probe names would tell what they search.
  absl::StatusOr<v1::ListWorkersResponse> ListWorkers(const Caller& caller = std::nullopt) const;

 private:
  SearchStore* const store_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_SEARCH_READER_H_
