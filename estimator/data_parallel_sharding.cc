#include "estimator/data_parallel_sharding.h"

namespace paratune {

const char* DataParallelShardingName(DataParallelSharding sharding) {
  switch (sharding) {
    case DataParallelSharding::kNone:
      return "none";
    case DataParallelSharding::kOptimizer:
      return "optimizer";
    case DataParallelSharding::kGradients:
      return "gradients";
    case DataParallelSharding::kFull:
      return "full";
  }
  return "optimizer";
}

std::optional<DataParallelSharding> DataParallelShardingNamed(absl::string_view name) {
  for (DataParallelSharding sharding :
       {DataParallelSharding::kNone, DataParallelSharding::kOptimizer,
        DataParallelSharding::kGradients, DataParallelSharding::kFull}) {
    if (name == DataParallelShardingName(sharding)) return sharding;
  }
  return std::nullopt;
}

}  // namespace paratune
