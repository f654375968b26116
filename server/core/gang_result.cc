#include "server/core/gang_result.h"

#include <algorithm>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"

namespace paratune {

v1::ProbeResult CombineGangResults(const std::vector<v1::ProbeResult>& by_member) {
  const auto timed = std::find_if(by_member.begin(), by_member.end(), [](const v1::ProbeResult& r) {
    return r.step_times_seconds_size() > 0;
  });
  if (timed == by_member.end()) {
    v1::ProbeResult crash;
    crash.set_outcome(v1::PROBE_CRASH);
    crash.set_backend(by_member.front().backend());
    crash.set_message(absl::StrCat("all ", by_member.size(),
                                   " members of the gang finished, but none reported step "
                                   "times; first member: ",
                                   by_member.front().message()));
    return crash;
  }
  v1::ProbeResult combined = *timed;
  std::set<std::string> measured, modelled;
  for (const v1::ProbeResult& member : by_member) {
    combined.set_peak_memory_bytes(
        std::max(combined.peak_memory_bytes(), member.peak_memory_bytes()));
    combined.set_wall_seconds(std::max(combined.wall_seconds(), member.wall_seconds()));
    measured.insert(member.measured().begin(), member.measured().end());
    modelled.insert(member.modelled().begin(), member.modelled().end());
  }
  combined.clear_measured();
  combined.clear_modelled();
  for (const std::string& part : measured) combined.add_measured(part);
  for (const std::string& part : modelled) {
    if (measured.count(part) == 0) combined.add_modelled(part);
  }
  return combined;
}

}  // namespace paratune
