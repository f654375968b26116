#include "server/core/resource_names.h"

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace paratune {
namespace {

// Consumes "{collection}/{number}" from the front of `rest`, the number at least `min`.
bool ConsumeSegment(absl::string_view& rest, absl::string_view collection, int64_t min,
                    int64_t& number) {
  if (!absl::ConsumePrefix(&rest, collection) || !absl::ConsumePrefix(&rest, "/")) return false;
  const absl::string_view digits = rest.substr(0, rest.find('/'));
  rest.remove_prefix(digits.size());
  return !digits.empty() && digits.size() <= 18 &&
         digits.find_first_not_of("0123456789") == absl::string_view::npos &&
         absl::SimpleAtoi(digits, &number) && number >= min;
}

absl::Status Malformed(absl::string_view field, absl::string_view name, absl::string_view form) {
  return absl::InvalidArgumentError(absl::StrCat(
      field, " (\"", absl::CHexEscape(name.substr(0, 128)), "\") must have the form ", form));
}

absl::StatusOr<int64_t> ParseName(absl::string_view field, absl::string_view name,
                                  absl::string_view collection) {
  int64_t id = 0;
  absl::string_view rest = name;
  if (!ConsumeSegment(rest, collection, 1, id) || !rest.empty()) {
    return Malformed(field, name, absl::StrCat(collection, "/{id}"));
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

absl::StatusOr<ProbeId> ParseProbeName(absl::string_view field, absl::string_view name) {
  ProbeId probe;
  absl::string_view rest = name;
  if (!ConsumeSegment(rest, "searches", 1, probe.search_id) || !absl::ConsumePrefix(&rest, "/") ||
      !ConsumeSegment(rest, "candidates", 0, probe.candidate) || !absl::ConsumePrefix(&rest, "/") ||
      !ConsumeSegment(rest, "probes", 1, probe.attempt) || !rest.empty()) {
    return Malformed(field, name, "searches/{id}/candidates/{n}/probes/{attempt}");
  }
  return probe;
}

}  // namespace paratune
