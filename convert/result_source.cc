#include "convert/result_source.h"

#include <string>

namespace paratune {

const char* ResultSource(const v1::ProbeResult& result) {
  // Recorded only when the server gave the probe up (worker INFRA_ERRORs are retried).
  if (result.outcome() == v1::PROBE_INFRA_ERROR) return "";
  // The server holds OK results to the mark (worker_request.h); a failed sim probe, stopped
  // at its deadline say, may lack it.
  if (result.simulated() || result.backend() == "sim") return "simulated";
  if (result.backend() == "replay") return "replayed";
  // The worker marks a full step fitted from short steps (worker/short_steps.h), as the console
  // reads it too (server/console/assets/console.js, origin).
  for (const std::string& part : result.extrapolated()) {
    if (part == "full_step") return "extrapolated";
  }
  return "measured";
}

}  // namespace paratune
