#include "server/resource_names.h"

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace paratune {
namespace {

absl::StatusOr<int64_t> ParseName(absl::string_view field, absl::string_view name,
                                  absl::string_view collection) {
  int64_t id = 0;
  absl::string_view rest = name;
  if (!absl::ConsumePrefix(&rest, collection) || !absl::ConsumePrefix(&rest, "/") || rest.empty() ||
      rest.size() > 18 || rest.find_first_not_of("0123456789") != absl::string_view::npos ||
      !absl::SimpleAtoi(rest, &id) || id < 1) {
    return absl::InvalidArgumentError(absl::StrCat(field, " (\"",
                                                   absl::CHexEscape(name.substr(0, 128)),
                                                   "\") must have the form ", collection, "/{id}"));
  }
  return id;
}

}  // namespace

std::string SearchName(int64_t id) { return absl::StrCat("searches/", id); }

std::string CandidateName(int64_t search_id, int64_t n) {
  return absl::StrCat("searches/", search_id, "/candidates/", n);
}

std::string ProbeName(int64_t search_id, int64_t n, int64_t attempt) {
  return absl::StrCat("searches/", search_id, "/candidates/", n, "/probes/", attempt);
}

std::string WorkerName(int64_t id) { return absl::StrCat("workers/", id); }

absl::StatusOr<int64_t> ParseSearchName(absl::string_view field, absl::string_view name) {
  return ParseName(field, name, "searches");
}

absl::StatusOr<int64_t> ParseWorkerName(absl::string_view field, absl::string_view name) {
  return ParseName(field, name, "workers");
}

}  // namespace paratune
