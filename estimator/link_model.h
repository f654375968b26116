// The time primitives of the performance model (performance_model.h) and of its
// mixture-of-experts terms (moe_performance.h): a link's bus bandwidth and latency, where a
// group of ranks communicates, the collectives' times, and a GEMM's time at a size-dependent
// efficiency. Pure.
#ifndef PARATUNE_ESTIMATOR_LINK_MODEL_H_
#define PARATUNE_ESTIMATOR_LINK_MODEL_H_

#include <cstdint>

#include "estimator/cluster_spec.h"
#include "estimator/performance_parameters.h"

namespace paratune {

// A link: achievable bus bandwidth in bytes/s and the latency of one operation.
struct Link {
  double bytes_per_second;
  double latency_seconds;
};

Link NvLink(const GpuSpec& gpu, const PerformanceParameters& params);
Link Network(const GpuSpec& gpu, const PerformanceParameters& params);

// Megatron places ranks tp-innermost, then cp, dp, pp: a group whose span of consecutive
// ranks tiles a node stays on NVLink, otherwise it crosses the network.
Link LinkForSpan(int64_t span, const ClusterSpec& cluster, const PerformanceParameters& params);

// Collective times from nccl-tests doc/PERFORMANCE.md: an all-gather or reduce-scatter of a
// `bytes`-sized (full) buffer over n ranks moves bytes x (n-1)/n per rank at the bus
// bandwidth (so does an all-to-all of a `bytes`-sized send buffer); an all-reduce moves bytes x
// 2(n-1)/n.
double GatherOrScatterSeconds(double bytes, double n, const Link& link);
double AllReduceSeconds(double bytes, double n, const Link& link);
double SendRecvSeconds(double bytes, const Link& link);
// An all-to-all in which each of n ranks sends `bytes` (its whole send buffer, an even share to
// every rank of the group, its own included) over a group of n ranks spread evenly over
// `span` consecutive ranks: the shares for ranks of the same node cross NVLink and the others
// the network, both at once (NCCL posts every peer's send and receive together), so the
// slower of the two paces it. The network runs at `network_efficiency` of its bandwidth, the
// all-to-all's own figure (many peers at once, unlike a ring's one).
double AllToAllSeconds(double bytes, int64_t n, int64_t span, const ClusterSpec& cluster,
                       const PerformanceParameters& params, double network_efficiency);

// Seconds of one GEMM of `flops` at eff(x) = max x / (x + half) of `peak_flops`: small GEMMs
// leave SMs idle and are bound by memory traffic, so efficiency saturates with size.
double GemmSeconds(double flops, double peak_flops, const PerformanceParameters& params);

// Seconds of one fp8 GEMM of `flops` at Transformer Engine's fp8 efficiency, of the same form
// as GemmSeconds (fp8_gemm_efficiency_max, fp8_gemm_half_efficiency_flops), against the dense
// fp8 peak.
double Fp8GemmSeconds(double flops, double fp8_peak_flops, const PerformanceParameters& params);

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_LINK_MODEL_H_
