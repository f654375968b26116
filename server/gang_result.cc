#include "server/gang_result.h"

#include <algorithm>
#include <set>
#include <string>

namespace paratune {

v1::ProbeResult CombineGangResults(const std::vector<v1::ProbeResult>& by_member) {
  v1::ProbeResult combined = by_member.front();
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
