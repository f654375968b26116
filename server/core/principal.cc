#include "server/core/principal.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace paratune {

absl::string_view RoleName(Role role) {
  switch (role) {
    case Role::kClient:
      return "client";
    case Role::kWorker:
      return "worker";
    case Role::kAdmin:
      return "admin";
  }
  return "unknown";
}

std::optional<Role> ParseRole(absl::string_view text) {
  for (Role role : {Role::kClient, Role::kWorker, Role::kAdmin}) {
    if (text == RoleName(role)) return role;
  }
  return std::nullopt;
}

absl::Status CheckPrincipalName(absl::string_view name) {
  bool valid = !name.empty() && name.size() <= kMaxPrincipalNameBytes;
  for (const char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      valid = false;
    }
  }
  if (valid) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("a principal NAME must have 1 to ",
                                                 kMaxPrincipalNameBytes,
                                                 " of the characters A-Z a-z 0-9 . _ -"));
}

bool MayAccess(const Caller& caller, absl::string_view owner) {
  if (!caller.has_value() || caller->role == Role::kAdmin) return true;
  return !owner.empty() && owner == caller->name;
}

std::string OwnerName(const Caller& caller) {
  return caller.has_value() ? caller->name : std::string();
}

std::string DescribeCaller(const Caller& caller) {
  return caller.has_value() ? caller->name : std::string("a client");
}

}  // namespace paratune
