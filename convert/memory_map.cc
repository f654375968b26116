#include "convert/memory_map.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "convert/estimate_convert.h"
#include "convert/spec_convert.h"

namespace paratune {
namespace {

// What a row's configurations share: everything but the micro-batch size (dp and sequence
// parallelism follow from these on one cluster).
// tp cp pp vp recompute ep etp dp_sharding dp_shard_group
using RowKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int, int64_t, int64_t, int, int64_t>;

RowKey KeyOf(const ParallelDims& dims) {
  return {dims.tp,
          dims.cp,
          dims.pp,
          dims.virtual_pipeline,
          static_cast<int>(dims.recompute),
          dims.ep,
          ExpertTensorParallel(dims),
          static_cast<int>(dims.dp_sharding),
          dims.dp_shard_group};
}

}  // namespace

v1::MemoryMap MemoryMapToProto(const Plan& plan, const PlanOptions& options, int64_t capacity_bytes,
                               int64_t limit) {
  v1::MemoryMap map;
  map.set_capacity_bytes(capacity_bytes);
  map.set_safe_fraction(options.memory.safe_fraction);
  for (int64_t size : SearchedMicroBatchSizes(options)) map.add_micro_batch_sizes(size);
  for (int64_t size : SearchedVirtualPipelineSizes(options)) map.add_virtual_pipeline_sizes(size);
  for (Recompute mode : SearchedRecomputeModes(options)) {
    map.add_recompute_modes(RecomputeToProto(mode));
  }

  // The plan's map is in enumeration order, so each row's entries are consecutive.
  std::vector<v1::MemoryMapRow> rows;
  std::map<RowKey, size_t> row_of;
  for (const MemoryMapEntry& entry : plan.memory_map) {
    const auto [it, added] = row_of.emplace(KeyOf(entry.dims), rows.size());
    if (added) {
      v1::MemoryMapRow& row = rows.emplace_back();
      *row.mutable_shape() = ParallelConfigToProto(ParallelConfig::FromCheckedDims(entry.dims));
      row.mutable_shape()->clear_micro_batch_size();
    }
    v1::MemoryMapCell& cell = *rows[it->second].add_cells();
    cell.set_micro_batch_size(entry.dims.micro_batch);
    cell.set_fraction_of_capacity(entry.fraction_of_capacity);
    cell.set_verdict(VerdictToProto(entry.verdict));
  }
  map.set_total_rows(static_cast<int64_t>(rows.size()));

  std::vector<bool> kept(rows.size(), true);
  if (limit > 0 && limit < static_cast<int64_t>(rows.size())) {
    // A row's rank is that of its best candidate; candidates are in predicted order.
    std::vector<size_t> rank(rows.size(), std::numeric_limits<size_t>::max());
    for (size_t i = 0; i < plan.candidates.size(); ++i) {
      const auto it = row_of.find(KeyOf(plan.candidates[i].config.dims()));
      if (it != row_of.end()) rank[it->second] = std::min(rank[it->second], i);
    }
    std::vector<size_t> order(rows.size());
    for (size_t r = 0; r < rows.size(); ++r) order[r] = r;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return rank[a] < rank[b]; });
    std::fill(kept.begin(), kept.end(), false);
    for (int64_t i = 0; i < limit; ++i) kept[order[i]] = true;
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    if (kept[r]) *map.add_rows() = std::move(rows[r]);
  }
  return map;
}

}  // namespace paratune
