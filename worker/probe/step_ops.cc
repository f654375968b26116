#include "worker/probe/step_ops.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace paratune {

int64_t BytesOf(ElementType type) {
  switch (type) {
    case ElementType::kBf16:
      return 2;
    case ElementType::kFloat32:
      return 4;
    case ElementType::kE4M3:
    case ElementType::kE5M2:
    case ElementType::kUint8:
      return 1;
  }
  return 0;
}

ElementType GradientElementType(bool fp32_gradients) {
  return fp32_gradients ? ElementType::kFloat32 : ElementType::kBf16;
}

const char* ElementTypeName(ElementType type) {
  switch (type) {
    case ElementType::kBf16:
      return "bf16";
    case ElementType::kFloat32:
      return "f32";
    case ElementType::kE4M3:
      return "e4m3";
    case ElementType::kE5M2:
      return "e5m2";
    case ElementType::kUint8:
      return "u8";
  }
  return "?";
}

const char* CollectiveFamilyName(CollectiveFamily family) {
  switch (family) {
    case CollectiveFamily::kTensor:
      return "tp";
    case CollectiveFamily::kContext:
      return "cp";
    case CollectiveFamily::kData:
      return "dp";
    case CollectiveFamily::kDataReplica:
      return "dp_replica";
    case CollectiveFamily::kPipeline:
      return "pp";
    case CollectiveFamily::kFp8Amax:
      return "amax";
    case CollectiveFamily::kExpertData:
      return "edp";
    case CollectiveFamily::kExpert:
      return "ep";
    case CollectiveFamily::kExpertTensor:
      return "etp";
  }
  return "?";
}

NormLinearBackwardPath NormLinearBackwardPathOf(bool fp8, bool overlapped) {
  if (fp8)
    return overlapped ? NormLinearBackwardPath::kFp8Overlapped : NormLinearBackwardPath::kFp8;
  return overlapped ? NormLinearBackwardPath::kBf16Overlapped : NormLinearBackwardPath::kBf16;
}

RowLinearBackwardPath RowLinearBackwardPathOf(bool fp8, bool overlapped, bool sequence_parallel) {
  if (overlapped) {
    return fp8 ? RowLinearBackwardPath::kFp8Overlapped : RowLinearBackwardPath::kBf16Overlapped;
  }
  if (fp8) {
    return sequence_parallel ? RowLinearBackwardPath::kFp8SequenceParallel
                             : RowLinearBackwardPath::kFp8;
  }
  return RowLinearBackwardPath::kBf16;
}

double GemmOp::Flops() const {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

double AttentionOp::ModelFlops() const {
  const double forward = 4.0 * static_cast<double>(batch) * static_cast<double>(queries) *
                         static_cast<double>(keys) * static_cast<double>(heads * head_dim);
  return backward ? 2 * forward : forward;
}

const char* LinearWeightName(LinearWeight weight) {
  switch (weight) {
    case LinearWeight::kQkv:
      return "qkv";
    case LinearWeight::kAttentionOutput:
      return "proj";
    case LinearWeight::kGateUp:
      return "fc1";
    case LinearWeight::kDown:
      return "fc2";
    case LinearWeight::kLmHead:
      return "lm_head";
    case LinearWeight::kRouter:
      return "router";
    case LinearWeight::kExpertFc1:
      return "expert_fc1";
    case LinearWeight::kExpertFc2:
      return "expert_fc2";
    case LinearWeight::kSharedFc1:
      return "shared_fc1";
    case LinearWeight::kSharedFc2:
      return "shared_fc2";
  }
  return "?";
}

namespace {

const char* GemmRoleName(GemmRole role) {
  switch (role) {
    case GemmRole::kForward:
      return "fprop";
    case GemmRole::kInputGradient:
      return "dgrad";
    case GemmRole::kWeightGradient:
      return "wgrad";
  }
  return "?";
}

const char* CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kSend:
      return "send";
    case CollectiveKind::kReceive:
      return "recv";
    case CollectiveKind::kExchange:
      return "exchange";
    case CollectiveKind::kAllToAll:
      return "all_to_all";
  }
  return "?";
}

const char* StreamName(StepStream stream) {
  switch (stream) {
    case StepStream::kCompute:
      return "compute";
    case StepStream::kDataParallel:
      return "dp_stream";
    case StepStream::kTensorParallel:
      return "tp_stream";
    case StepStream::kContextRing:
      return "ring_stream";
  }
  return "?";
}

const char* MaskName(RingMask mask) {
  switch (mask) {
    case RingMask::kCausal:
      return "causal";
    case RingMask::kNone:
      return "none";
    case RingMask::kCausalBottomRight:
      return "causal_br";
  }
  return "?";
}

const char* ExchangeName(AttentionExchange exchange) {
  switch (exchange) {
    case AttentionExchange::kNone:
      return "local";
    case AttentionExchange::kRing:
      return "ring";
    case AttentionExchange::kAllGather:
      return "all_gather";
  }
  return "?";
}

}  // namespace

// Where an op runs: "step", or "p<pass> c<chunk> mb<micro-batch> s<slot> <layers>[ recompute]"
// with `layers` "L<layer>" (empty outside a layer) or a folded run's range.
std::string DescribeContext(const StepOpContext& at, const std::string& layers) {
  if (at.pass < 0) return "step";
  std::string where = absl::StrCat("p", at.pass);
  if (at.chunk >= 0) absl::StrAppend(&where, " c", at.chunk, " mb", at.micro_batch, " s", at.slot);
  if (!layers.empty()) absl::StrAppend(&where, " ", layers);
  if (at.recompute) absl::StrAppend(&where, " recompute");
  return where;
}

std::string DescribeOp(const StepOp& op) {
  const StepOpContext& at = op.context;
  const std::string where =
      DescribeContext(at, at.layer >= 0 ? absl::StrCat("L", at.layer) : std::string());
  struct Visitor {
    std::string operator()(const GemmOp& g) const {
      std::string line =
          absl::StrCat("gemm ", LinearWeightName(g.weight), " ", GemmRoleName(g.role), " m", g.m,
                       " n", g.n, " k", g.k, " ", ElementTypeName(g.a), "x", ElementTypeName(g.b),
                       "->", ElementTypeName(g.c));
      if (g.parts > 1) absl::StrAppend(&line, " part ", g.part, "/", g.parts);
      return line;
    }
    std::string operator()(const AttentionOp& a) const {
      std::vector<std::string> products;
      for (const RingProduct& p : a.products) {
        products.push_back(absl::StrCat("q", p.first_query, "+", p.queries, ":k", p.first_key, "+",
                                        p.keys, ":", MaskName(p.mask)));
      }
      return absl::StrCat("attention ", a.backward ? "backward" : "forward", " b", a.batch, " h",
                          a.heads, " kv", a.kv_heads, " d", a.head_dim, " q", a.queries, " s",
                          a.keys, " ", ExchangeName(a.exchange), " [", absl::StrJoin(products, " "),
                          "]");
    }
    std::string operator()(const CollectiveOp& c) const {
      std::string line = absl::StrCat(CollectiveFamilyName(c.family), " ",
                                      CollectiveKindName(c.kind), " ", ElementTypeName(c.type), " ",
                                      c.bytes, "B ", StreamName(c.stream), " ", c.what);
      if (c.peer >= 0) {
        absl::StrAppend(&line, " peer ", c.peer, " c", c.chunk, " mb", c.micro_batch);
      }
      return line;
    }
    std::string operator()(const CastOp& c) const {
      return absl::StrCat("cast ", LinearWeightName(c.weight), " ", c.what, " ", c.rows, "x",
                          c.columns, "->", ElementTypeName(c.to));
    }
    std::string operator()(const AmaxUpdateOp& a) const {
      return absl::StrCat("amax update ", a.what, " ", a.tensors, " tensors");
    }
    std::string operator()(const OptimizerOp& o) const {
      return absl::StrCat("optimizer ", o.what, " ", o.elements);
    }
    std::string operator()(const ElementwiseOp& e) const {
      return absl::StrCat("elementwise ", e.what, " ", e.elements);
    }
    std::string operator()(const WaitOp& w) const {
      return absl::StrCat("wait ", StreamName(w.stream), " ", w.what);
    }
  };
  std::string line = absl::StrCat(where, ": ", std::visit(Visitor{}, op.detail));
  if (!op.buffers.empty()) {
    absl::StrAppend(&line, " @",
                    absl::StrJoin(op.buffers, ",", [](std::string* out, ProbeBuffer buffer) {
                      out->append(ProbeBufferName(buffer));
                    }));
  }
  return line;
}

}  // namespace paratune
