#include "worker/probe/optimizer_layout.h"

#include "worker/probe/pipeline_schedule.h"
#include "worker/probe/probe_report.h"

namespace paratune {

OptimizerLayout OptimizerLayoutOf(const ProbeSpec& spec, const FootprintPlan& footprint,
                                  int64_t rank) {
  const RankLayout& layout = spec.layout();
  const ParameterLayout& parameters = footprint.parameters();
  OptimizerLayout result;
  result.reduce_gradients =
      layout.GroupSize(RankGroup::kDataContext) > 1 && !DataParallelModelled(spec);
  result.overlap = spec.data_parallel_overlap();
  result.overlapped = result.reduce_gradients &&
                      (result.overlap.overlap_grad_reduce || result.overlap.overlap_param_gather);
  result.shard_count = spec.training().distributed_optimizer()
                           ? parameters.padded_elements / parameters.shard_elements
                           : 1;
  result.shard_index = layout.GroupRank(RankGroup::kDataContext, rank);
  if (result.overlapped) {
    const int64_t stage = layout.CoordinatesOf(rank).pp;
    const std::vector<ScheduleStep> schedule = PipelineScheduleOf(
        layout.pp(), spec.config().virtual_pipeline(), spec.micro_batches(), stage);
    result.buckets =
        DataParallelPlanOf(parameters, footprint.stage_layers(), spec.model().tied_embeddings(),
                           schedule, stage, layout.pp(), layout.GroupSize(RankGroup::kDataContext),
                           result.overlap)
            .buckets;
  } else {
    result.buckets = RegionBuckets(parameters);
  }
  return result;
}

}  // namespace paratune
