// Times for people: how long ago, how long, in the largest units that matter.
#ifndef PARATUNE_CLI_HUMAN_TIME_H_
#define PARATUNE_CLI_HUMAN_TIME_H_

#include <string>

#include "absl/time/time.h"

namespace paratune {

// "45s", "12m", "3h05m", "2d04h": whole units, two at most, rounded down; "0s" for
// durations below a second (negative ones included: clocks of two machines disagree).
std::string ShortDuration(absl::Duration duration);

// "just now" within a second, else "3m ago" (ShortDuration of now - then).
std::string TimeAgo(absl::Time then, absl::Time now);

}  // namespace paratune

#endif  // PARATUNE_CLI_HUMAN_TIME_H_
