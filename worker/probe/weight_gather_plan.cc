#include "worker/probe/weight_gather_plan.h"

namespace paratune {

WeightGatherPlan WeightGatherPlanOf(const std::vector<ScheduleStep>& schedule,
                                    const std::vector<ChunkUnits>& chunks) {
  WeightGatherPlan plan;
  int64_t pass = 0;
  for (const ScheduleStep& step : schedule) {
    if (!step.pass.has_value()) continue;
    const ChunkUnits& units = chunks[step.pass->chunk];
    const PassDirection direction = step.pass->direction;
    // The chunk's units run from units.first to units.end() in forward order.
    const int64_t count = units.end() - units.first;
    for (int64_t i = 0; i < count; ++i) {
      WeightUse& use = plan.uses.emplace_back();
      use.pass = pass;
      use.unit = direction == PassDirection::kForward ? units.first + i : units.end() - 1 - i;
      use.direction = direction;
      use.slot = static_cast<int64_t>(plan.uses.size() - 1) % kGatheredWeightSlots;
    }
    ++pass;
  }
  return plan;
}

}  // namespace paratune
