// The source of time for leases and timestamps, injectable so tests control it.
#ifndef PARATUNE_SERVER_CLOCK_H_
#define PARATUNE_SERVER_CLOCK_H_

#include "absl/time/time.h"

namespace paratune {

// Thread-safe: Now() may be called from any thread.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() = 0;
};

// The wall clock (absl::Now). Never destroyed.
Clock* RealClock();

}  // namespace paratune

#endif  // PARATUNE_SERVER_CLOCK_H_
