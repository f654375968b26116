#include "convert/result_source.h"

#include <string>

namespace paratune {

const char* ResultSource(const v1::ProbeResult& result) {
  if (result.simulated()) return "simulated";
  if (result.backend() == "replay") return "replayed";
  // The worker marks a full step fitted from short steps (worker/short_steps.h), as the console
  // reads it too (server/console/assets/console.js, origin).
  for (const std::string& part : result.extrapolated()) {
    if (part == "full_step") return "extrapolated";
  }
  return "measured";
}

}  // namespace paratune
