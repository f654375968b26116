#include "worker/probe/rank_layout.h"

namespace paratune {

const char* RankGroupName(RankGroup group) {
  switch (group) {
    case RankGroup::kTensor:
      return "tp";
    case RankGroup::kContext:
      return "cp";
    case RankGroup::kDataContext:
      return "dp";
    case RankGroup::kPipeline:
      return "pp";
  }
  return "unknown";
}

RankCoordinates RankLayout::CoordinatesOf(int64_t rank) const {
  RankCoordinates c;
  c.tp = rank % tp_;
  c.cp = rank / tp_ % cp_;
  c.dp = rank / (tp_ * cp_) % dp_;
  c.pp = rank / (tp_ * cp_ * dp_);
  return c;
}

int64_t RankLayout::RankOf(const RankCoordinates& c) const {
  return c.tp + tp_ * (c.cp + cp_ * (c.dp + dp_ * c.pp));
}

int64_t RankLayout::GroupSize(RankGroup group) const {
  switch (group) {
    case RankGroup::kTensor:
      return tp_;
    case RankGroup::kContext:
      return cp_;
    case RankGroup::kDataContext:
      return dp_ * cp_;
    case RankGroup::kPipeline:
      return pp_;
  }
  return 1;
}

int64_t RankLayout::GroupColor(RankGroup group, int64_t rank) const {
  RankCoordinates lowest = CoordinatesOf(rank);
  switch (group) {
    case RankGroup::kTensor:
      lowest.tp = 0;
      break;
    case RankGroup::kContext:
      lowest.cp = 0;
      break;
    case RankGroup::kDataContext:
      lowest.cp = 0;
      lowest.dp = 0;
      break;
    case RankGroup::kPipeline:
      lowest.pp = 0;
      break;
  }
  return RankOf(lowest);
}

int64_t RankLayout::GroupRank(RankGroup group, int64_t rank) const {
  const RankCoordinates c = CoordinatesOf(rank);
  switch (group) {
    case RankGroup::kTensor:
      return c.tp;
    case RankGroup::kContext:
      return c.cp;
    case RankGroup::kDataContext:
      return c.cp + cp_ * c.dp;
    case RankGroup::kPipeline:
      return c.pp;
  }
  return 0;
}

}  // namespace paratune
