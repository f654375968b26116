#include "convert/result_source.h"

namespace paratune {

const char* ResultSource(const v1::ProbeResult& result) {
  if (result.simulated()) return "simulated";
  if (result.backend() == "replay") return "replayed";
  if (result.short_steps_size() > 0) return "extrapolated";
  return "measured";
}

}  // namespace paratune
