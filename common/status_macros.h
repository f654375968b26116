// Early-return helpers for absl::Status and absl::StatusOr. Debian's Abseil (20220623)
// ships none, so paratune keeps this one pair.
#ifndef PARATUNE_COMMON_STATUS_MACROS_H_
#define PARATUNE_COMMON_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns the status of `expr` from the enclosing function when it is not OK.
#define PT_RETURN_IF_ERROR(expr)              \
  do {                                        \
    const ::absl::Status pt_status_ = (expr); \
    if (!pt_status_.ok()) return pt_status_;  \
  } while (false)

#define PT_STATUS_MACROS_CONCAT_INNER_(a, b) a##b
#define PT_STATUS_MACROS_CONCAT_(a, b) PT_STATUS_MACROS_CONCAT_INNER_(a, b)

// `PT_ASSIGN_OR_RETURN(auto x, F());` assigns the value of the StatusOr F() to x, or returns
// its status from the enclosing function when it is not OK.
#define PT_ASSIGN_OR_RETURN(lhs, expr) \
  PT_ASSIGN_OR_RETURN_IMPL_(PT_STATUS_MACROS_CONCAT_(pt_statusor_, __LINE__), lhs, expr)

#define PT_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                              \
  if (!statusor.ok()) return statusor.status();        \
  lhs = std::move(statusor).value()

#endif  // PARATUNE_COMMON_STATUS_MACROS_H_
