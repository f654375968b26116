#include "server/clock.h"

#include "absl/time/clock.h"

namespace paratune {
namespace {

class WallClock : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
};

}  // namespace

Clock* RealClock() {
  static Clock* const clock = new WallClock();
  return clock;
}

}  // namespace paratune
