// `paratune export`: a search's chosen configuration as launch arguments for the frameworks
// users train with (DESIGN.md §10): Megatron-LM command-line arguments, NeMo 2 recipe
// overrides, JSON, or a ready sbatch script running Megatron-LM under torchrun.
#ifndef PARATUNE_CLI_EXPORT_H_
#define PARATUNE_CLI_EXPORT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/search.pb.h"

namespace paratune {

enum class ExportFormat { kMegatron, kNemo, kJson, kSbatch };

// "megatron", "nemo", "json", "sbatch"; INVALID_ARGUMENT naming --format otherwise.
absl::StatusOr<ExportFormat> ParseExportFormat(absl::string_view text);

// The candidate to export: searches/{id}/candidates/{n} when `candidate` names one (n alone
// is accepted), else the best measured (the first of the ranked candidates, probed OK).
// NOT_FOUND naming the candidate; FAILED_PRECONDITION when nothing was measured OK.
absl::StatusOr<v1::Candidate> ChooseCandidate(const v1::Search& search,
                                              absl::string_view candidate);

// The text of `candidate` of `search` in `format`. INVALID_ARGUMENT when the search's model
// cannot be resolved (a preset this build does not know).
absl::StatusOr<std::string> ExportCandidate(const v1::Search& search,
                                            const v1::Candidate& candidate, ExportFormat format);

}  // namespace paratune

#endif  // PARATUNE_CLI_EXPORT_H_
