#include "common/template_name.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace paratune {
namespace {

constexpr size_t kMaxTemplateNameBytes = 64;

bool AllowedCharacter(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

}  // namespace

std::optional<std::string> TemplateNameProblem(absl::string_view name) {
  bool valid = !name.empty() && name.size() <= kMaxTemplateNameBytes;
  for (char c : name) valid = valid && AllowedCharacter(c);
  if (valid) return std::nullopt;
  return absl::StrCat("(\"", absl::CHexEscape(name.substr(0, kMaxTemplateNameBytes)),
                      name.size() > kMaxTemplateNameBytes ? "..." : "",
                      "\") must be 1 to 64 letters, digits, '_', '-' or '.'");
}

absl::Status ValidateTemplateName(absl::string_view field, absl::string_view name) {
  const std::optional<std::string> problem = TemplateNameProblem(name);
  if (!problem.has_value()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(field, " ", *problem));
}

}  // namespace paratune
