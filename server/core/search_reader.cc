#include "server/core/search_reader.h"

#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "convert/result_source.h"
#include "convert/search_event_text.h"
#include "convert/search_progress.h"
#include "convert/search_view.h"
#include "google/protobuf/util/time_util.h"
#include "server/core/page_token.h"
#include "server/core/resource_names.h"

namespace paratune {
namespace {

constexpr int64_t kDefaultPageSize = 50;
constexpr int64_t kDefaultEventPageSize = 100;
constexpr int64_t kMaxPageSize = 1000;

absl::StatusOr<int64_t> CheckPageSize(int64_t page_size, int64_t default_size) {
  if (page_size < 0 || page_size > kMaxPageSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size (", page_size, ") must be in [0, ", kMaxPageSize, "]"));
  }
  return page_size == 0 ? default_size : page_size;
}

}  // namespace

absl::Status SearchNotFoundError(int64_t id) {
  return absl::NotFoundError(absl::StrCat("search ", SearchName(id), " not found"));
}

absl::StatusOr<v1::Search> SearchReader::GetSearch(absl::string_view name,
                                                   const Caller& caller) const {
  PT_ASSIGN_OR_RETURN(const int64_t id, ParseSearchName("name", name));
  PT_ASSIGN_OR_RETURN(v1::Search search, store_->GetSearch(id));
  if (!MayAccess(caller, search.creator())) return SearchNotFoundError(id);
  return ClientView(std::move(search));
}

absl::StatusOr<v1::ListSearchesResponse> SearchReader::ListSearches(
    const v1::ListSearchesRequest& request, const Caller& caller) const {
  PT_ASSIGN_OR_RETURN(const int64_t page_size,
                      CheckPageSize(request.page_size(), kDefaultPageSize));
  PT_ASSIGN_OR_RETURN(int64_t before_id, DecodePageToken(request.page_token()));
  v1::ListSearchesResponse response;
  // The id of the last search looked at, and whether the store holds older ones.
  int64_t last_id = 0;
  bool more = true;
  while (more && response.searches_size() < page_size) {
    // Others' searches are skipped, so a client's page may take several of the store's.
    const int64_t wanted = caller.has_value() && caller->role != Role::kAdmin
                               ? kMaxPageSize
                               : page_size - response.searches_size();
    PT_ASSIGN_OR_RETURN(SearchPage page, store_->ListSearches(wanted, before_id));
    more = page.more;
    for (size_t i = 0; i < page.searches.size(); ++i) {
      v1::Search& search = page.searches[i];
      PT_ASSIGN_OR_RETURN(last_id, ParseSearchName("name", search.name()));
      before_id = last_id;
      if (!MayAccess(caller, search.creator())) continue;
      if (search.has_best_candidate()) SetResultSource(*search.mutable_best_candidate());
      *response.add_searches() = std::move(search);
      if (response.searches_size() == page_size) {
        more = more || i + 1 < page.searches.size();
        break;
      }
    }
    if (page.searches.empty()) break;
  }
  if (more && last_id > 0) response.set_next_page_token(EncodePageToken(last_id));
  return response;
}

absl::StatusOr<v1::ListSearchEventsResponse> SearchReader::ListSearchEvents(
    const v1::ListSearchEventsRequest& request, const Caller& caller) const {
  PT_ASSIGN_OR_RETURN(const int64_t id, ParseSearchName("name", request.name()));
  PT_ASSIGN_OR_RETURN(const int64_t page_size,
                      CheckPageSize(request.page_size(), kDefaultEventPageSize));
  PT_ASSIGN_OR_RETURN(const int64_t after, DecodePageToken(request.page_token()));
  // NOT_FOUND for a search that does not exist, rather than an empty log.
  PT_ASSIGN_OR_RETURN(const v1::Search search, store_->GetSearch(id));
  if (!MayAccess(caller, search.creator())) return SearchNotFoundError(id);
  PT_ASSIGN_OR_RETURN(std::vector<StoredEvent> events,
                      store_->ListEvents(id, after, page_size + 1));
  v1::ListSearchEventsResponse response;
  for (size_t i = 0; i < events.size() && static_cast<int64_t>(i) < page_size; ++i) {
    v1::SearchEvent& event = *response.add_events();
    event = std::move(events[i].event);
    event.set_sequence(events[i].sequence);
    *event.mutable_time() =
        google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(events[i].time));
    event.set_text(RenderSearchEvent(event));
  }
  if (static_cast<int64_t>(events.size()) > page_size) {
    response.set_next_page_token(EncodePageToken(events[page_size - 1].sequence));
  }
  return response;
}

absl::StatusOr<v1::ListWorkersResponse> SearchReader::ListWorkers(const Caller& caller) const {
  PT_ASSIGN_OR_RETURN(std::vector<v1::Worker> workers, store_->ListWorkers());
  const bool reaches_all = !caller.has_value() || caller->role == Role::kAdmin;
  // Whether the caller may reach each search a worker runs a probe of, read once per search.
  absl::flat_hash_map<int64_t, bool> reachable;
  v1::ListWorkersResponse response;
  for (v1::Worker& worker : workers) {
    if (!reaches_all && !worker.current_probe().empty()) {
      absl::StatusOr<ProbeId> probe = ParseProbeName("current_probe", worker.current_probe());
      bool shown = false;
      if (probe.ok()) {
        auto [it, inserted] = reachable.try_emplace(probe->search_id, false);
        if (inserted) {
          absl::StatusOr<v1::Search> search = store_->GetSearch(probe->search_id);
          it->second = search.ok() && MayAccess(caller, search->creator());
        }
        shown = it->second;
      }
      if (!shown) worker.clear_current_probe();
    }
    *response.add_workers() = std::move(worker);
  }
  return response;
}

}  // namespace paratune
