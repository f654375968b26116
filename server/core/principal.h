// Who calls the server (DESIGN.md §11): a principal is the name and role a bearer token or a
// bound client certificate maps to (server/security/token_table.h). Searches record their creator's
// name and workers their registrant's; a client principal reaches only what it created, a
// worker principal only the workers it registered, an admin everything. A server without a
// token file has no principals: every caller reaches everything, and creators are recorded
// empty.
#ifndef PARATUNE_SERVER_CORE_PRINCIPAL_H_
#define PARATUNE_SERVER_CORE_PRINCIPAL_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace paratune {

enum class Role { kClient, kWorker, kAdmin };

// "client", "worker", "admin".
absl::string_view RoleName(Role role);
// The role named so; nullopt for any other text.
std::optional<Role> ParseRole(absl::string_view text);

struct Principal {
  // 1 to kMaxPrincipalNameBytes of A-Z a-z 0-9 . _ - (CheckPrincipalName).
  std::string name;
  Role role = Role::kClient;
};

inline constexpr size_t kMaxPrincipalNameBytes = 64;

// OK for a valid principal name; INVALID_ARGUMENT saying what a name may hold otherwise (it
// does not quote the text, which could be a misplaced token).
absl::Status CheckPrincipalName(absl::string_view name);

// The caller of an RPC: nullopt on a server without tokens.
using Caller = std::optional<Principal>;

// Whether `caller` may see and act on what the principal `owner` created or registered: true
// without principals, for an admin, and for the owner itself. An empty owner (created without
// tokens, or before owners were recorded) is reachable by admins only.
bool MayAccess(const Caller& caller, absl::string_view owner);

// The owner name to record for what `caller` creates: its name, empty without principals.
std::string OwnerName(const Caller& caller);

// "alice" for events and logs; "a client" without principals.
std::string DescribeCaller(const Caller& caller);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_PRINCIPAL_H_
