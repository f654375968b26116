#include "estimator/link_model.h"

#include <algorithm>

namespace paratune {
namespace {

constexpr double kGiga = 1e9;

}  // namespace

Link NvLink(const GpuSpec& gpu, const PerformanceParameters& params) {
  return {gpu.nvlink_bandwidth_gbps * kGiga * params.nvlink_efficiency,
          params.nvlink_latency_seconds};
}

Link Network(const GpuSpec& gpu, const PerformanceParameters& params) {
  return {gpu.network_bandwidth_gbps * kGiga * params.network_efficiency,
          params.network_latency_seconds};
}

Link LinkForSpan(int64_t span, const ClusterSpec& cluster, const PerformanceParameters& params) {
  const bool within_node = span <= cluster.gpus_per_node() && cluster.gpus_per_node() % span == 0;
  return within_node ? NvLink(cluster.gpu(), params) : Network(cluster.gpu(), params);
}

double GatherOrScatterSeconds(double bytes, double n, const Link& link) {
  return link.latency_seconds + bytes * (n - 1) / n / link.bytes_per_second;
}

double AllReduceSeconds(double bytes, double n, const Link& link) {
  return link.latency_seconds + bytes * 2 * (n - 1) / n / link.bytes_per_second;
}

double SendRecvSeconds(double bytes, const Link& link) {
  return link.latency_seconds + bytes / link.bytes_per_second;
}

double AllToAllSeconds(double bytes, int64_t n, int64_t span, const ClusterSpec& cluster,
                       const PerformanceParameters& params, double network_efficiency) {
  const GpuSpec& gpu = cluster.gpu();
  const Link nvlink = NvLink(gpu, params);
  const double ranks = static_cast<double>(n);
  // The group's ranks on one node: all of them when the span fits in a node, else n over the
  // nodes the span covers.
  const double per_node =
      span <= cluster.gpus_per_node()
          ? ranks
          : ranks * static_cast<double>(cluster.gpus_per_node()) / static_cast<double>(span);
  const double nvlink_seconds = bytes * (per_node - 1) / ranks / nvlink.bytes_per_second;
  if (per_node >= ranks) return nvlink.latency_seconds + nvlink_seconds;
  const double network_seconds = bytes * (ranks - per_node) / ranks /
                                 (gpu.network_bandwidth_gbps * kGiga * network_efficiency);
  return params.network_latency_seconds + std::max(nvlink_seconds, network_seconds);
}

double GemmSeconds(double flops, double peak_flops, const PerformanceParameters& params) {
  const double efficiency =
      params.gemm_efficiency_max * flops / (flops + params.gemm_half_efficiency_flops);
  return flops / (peak_flops * efficiency);
}

double Fp8GemmSeconds(double flops, double fp8_peak_flops, const PerformanceParameters& params) {
  const double efficiency =
      params.fp8_gemm_efficiency_max * flops / (flops + params.fp8_gemm_half_efficiency_flops);
  return flops / (fp8_peak_flops * efficiency);
}

}  // namespace paratune
