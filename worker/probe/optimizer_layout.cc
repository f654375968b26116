#include "worker/probe/optimizer_layout.h"

#include "worker/probe/pipeline_schedule.h"
#include "worker/probe/probe_report.h"

namespace paratune {

OptimizerLayout OptimizerLayoutOf(const ProbeSpec& spec, const FootprintPlan& footprint,
                                  int64_t rank) {
  const RankLayout& layout = spec.layout();
  const ParameterLayout& parameters = footprint.parameters();
  OptimizerLayout result;
  result.reduced.data_context = layout.GroupSize(RankGroup::kDataContext) > 1;
  result.reduced.expert_data = layout.has_experts() && layout.GroupSize(RankGroup::kExpertData) > 1;
  result.reduce_gradients =
      (result.reduced.data_context || result.reduced.expert_data) && !DataParallelModelled(spec);
  result.sharded_gradients = footprint.sharded_gradients();
  result.sharded_weights = footprint.sharded_weights();
  result.overlap = spec.data_parallel_overlap();
  result.overlapped = result.reduce_gradients && !result.sharded_gradients &&
                      (result.overlap.overlap_grad_reduce || result.overlap.overlap_param_gather);
  result.dense = parameters.dense;
  result.experts = parameters.experts;
  result.data_context_rank = layout.GroupRank(layout.DataShardGroup(), rank);
  result.dense_replicas = layout.GroupSize(RankGroup::kDataReplica);
  result.expert_data_rank =
      layout.has_experts() ? layout.GroupRank(RankGroup::kExpertData, rank) : 0;
  if (result.sharded_gradients) {
    result.buckets = UnitBuckets(parameters, footprint.stage_layers(),
                                 spec.model().tied_embeddings(), layout.pp());
  } else if (result.overlapped) {
    const int64_t stage = layout.CoordinatesOf(rank).pp;
    const std::vector<ScheduleStep> schedule = PipelineScheduleOf(
        layout.pp(), spec.config().virtual_pipeline(), spec.micro_batches(), stage);
    result.buckets =
        DataParallelPlanOf(parameters, footprint.stage_layers(), spec.model().tied_embeddings(),
                           schedule, stage, layout.pp(), layout.GroupSize(RankGroup::kDataContext),
                           result.overlap, result.reduced)
            .buckets;
  } else {
    result.buckets = RegionBuckets(parameters);
  }
  return result;
}

}  // namespace paratune
