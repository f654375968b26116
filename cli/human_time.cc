#include "cli/human_time.h"

#include <cstdint>

#include "absl/strings/str_format.h"

namespace paratune {

std::string ShortDuration(absl::Duration duration) {
  const int64_t seconds = absl::ToInt64Seconds(duration);
  if (seconds <= 0) return "0s";
  if (seconds < 60) return absl::StrFormat("%ds", seconds);
  if (seconds < 3600) return absl::StrFormat("%dm", seconds / 60);
  if (seconds < 86400) return absl::StrFormat("%dh%02dm", seconds / 3600, seconds / 60 % 60);
  return absl::StrFormat("%dd%02dh", seconds / 86400, seconds / 3600 % 24);
}

std::string TimeAgo(absl::Time then, absl::Time now) {
  if (now - then < absl::Seconds(1)) return "just now";
  return ShortDuration(now - then) + " ago";
}

}  // namespace paratune
