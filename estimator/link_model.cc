#include "estimator/link_model.h"

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

double GemmSeconds(double flops, double peak_flops, const PerformanceParameters& params) {
  const double efficiency =
      params.gemm_efficiency_max * flops / (flops + params.gemm_half_efficiency_flops);
  return flops / (peak_flops * efficiency);
}

}  // namespace paratune
