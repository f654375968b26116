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
    case RankGroup::kDataShard:
      return "dp_shard";
    case RankGroup::kDataReplica:
      return "dp_replica";
    case RankGroup::kPipeline:
      return "pp";
    case RankGroup::kExpertTensor:
      return "etp";
    case RankGroup::kExpert:
      return "ep";
    case RankGroup::kExpertData:
      return "edp";
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

ExpertCoordinates RankLayout::ExpertCoordinatesOf(int64_t rank) const {
  // The rank's place among its stage's tp x cp x dp ranks, read in the expert grid's radices.
  const int64_t in_stage = rank % (tp_ * cp_ * dp_);
  ExpertCoordinates c;
  c.etp = in_stage % etp_;
  c.ep = in_stage / etp_ % ep_;
  c.edp = in_stage / (etp_ * ep_);
  return c;
}

int64_t RankLayout::GroupSize(RankGroup group) const {
  switch (group) {
    case RankGroup::kTensor:
      return tp_;
    case RankGroup::kContext:
      return cp_;
    case RankGroup::kDataContext:
      return dp_ * cp_;
    case RankGroup::kDataShard:
      return dp_shard_ * cp_;
    case RankGroup::kDataReplica:
      return dp_ / dp_shard_;
    case RankGroup::kPipeline:
      return pp_;
    case RankGroup::kExpertTensor:
      return etp_;
    case RankGroup::kExpert:
      return ep_;
    case RankGroup::kExpertData:
      return edp();
  }
  return 1;
}

int64_t RankLayout::GroupColor(RankGroup group, int64_t rank) const {
  // The group's lowest rank: the rank less its offset along the group's axes.
  const RankCoordinates c = CoordinatesOf(rank);
  const ExpertCoordinates expert = ExpertCoordinatesOf(rank);
  switch (group) {
    case RankGroup::kTensor:
      return rank - c.tp;
    case RankGroup::kContext:
      return rank - c.cp * tp_;
    case RankGroup::kDataContext:
      return rank - (c.cp + cp_ * c.dp) * tp_;
    case RankGroup::kDataShard:
      return rank - (c.cp + cp_ * (c.dp % dp_shard_)) * tp_;
    case RankGroup::kDataReplica:
      return rank - c.dp / dp_shard_ * dp_shard_ * tp_ * cp_;
    case RankGroup::kPipeline:
      return rank - c.pp * tp_ * cp_ * dp_;
    case RankGroup::kExpertTensor:
      return rank - expert.etp;
    case RankGroup::kExpert:
      return rank - expert.ep * etp_;
    case RankGroup::kExpertData:
      return rank - expert.edp * etp_ * ep_;
  }
  return rank;
}

int64_t RankLayout::GroupRank(RankGroup group, int64_t rank) const {
  const RankCoordinates c = CoordinatesOf(rank);
  const ExpertCoordinates expert = ExpertCoordinatesOf(rank);
  switch (group) {
    case RankGroup::kTensor:
      return c.tp;
    case RankGroup::kContext:
      return c.cp;
    case RankGroup::kDataContext:
      return c.cp + cp_ * c.dp;
    case RankGroup::kDataShard:
      return c.cp + cp_ * (c.dp % dp_shard_);
    case RankGroup::kDataReplica:
      return c.dp / dp_shard_;
    case RankGroup::kPipeline:
      return c.pp;
    case RankGroup::kExpertTensor:
      return expert.etp;
    case RankGroup::kExpert:
      return expert.ep;
    case RankGroup::kExpertData:
      return expert.edp;
  }
  return 0;
}

}  // namespace paratune
