#include "server/rpc_metrics.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "metrics/instruments.h"

namespace paratune {
namespace {

constexpr char kOtherMethod[] = "other";

std::string CodeLabel(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

// One per call: created when the call arrives, records when the status goes out.
class RpcMetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  RpcMetricsInterceptor(RpcMetrics* metrics, std::string method)
      : metrics_(metrics), method_(std::move(method)), start_(absl::Now()) {}

  ~RpcMetricsInterceptor() override {
    // A call the client cancelled, or one cut short by shutdown, sends no status.
    if (!recorded_) Record(CodeLabel(grpc::StatusCode::CANCELLED));
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      Record(CodeLabel(methods->GetSendStatus().error_code()));
    }
    methods->Proceed();
  }

 private:
  void Record(const std::string& code) {
    recorded_ = true;
    metrics_->Record(method_, code, absl::ToDoubleSeconds(absl::Now() - start_));
  }

  RpcMetrics* const metrics_;
  const std::string method_;
  const absl::Time start_;
  bool recorded_ = false;
};

class RpcMetricsInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RpcMetricsInterceptorFactory(RpcMetrics* metrics) : metrics_(metrics) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new RpcMetricsInterceptor(metrics_, metrics_->MethodLabel(info->method()));
  }

 private:
  RpcMetrics* const metrics_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<RpcMetrics>> RpcMetrics::Create(metrics::Registry& registry,
                                                               std::vector<std::string> methods) {
  PT_ASSIGN_OR_RETURN(
      metrics::CounterFamily * calls,
      registry.AddCounter("paratune_rpcs_total",
                          "gRPC calls handled, by method and status code. Long polls "
                          "(AcquireProbe) and streams (WatchSearch) count when they end.",
                          {"method", "code"}));
  PT_ASSIGN_OR_RETURN(
      metrics::HistogramFamily * durations,
      registry.AddHistogram("paratune_rpc_duration_seconds",
                            "Time from a gRPC call's arrival to its status, by method and "
                            "status code. Includes the wait of long polls and streams.",
                            {"method", "code"}, metrics::ExponentialBuckets(0.0005, 4, 11)));
  std::sort(methods.begin(), methods.end());
  std::unique_ptr<RpcMetrics> rpc_metrics(new RpcMetrics(std::move(methods), calls, durations));
  const std::string ok = CodeLabel(grpc::StatusCode::OK);
  for (const std::string& method : rpc_metrics->methods_) {
    // Exported at zero from the start, so that rates and alerts see every method.
    const std::string label = rpc_metrics->MethodLabel(method.c_str());
    calls->WithLabels({label, ok});
    durations->WithLabels({label, ok});
  }
  return rpc_metrics;
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
RpcMetrics::NewInterceptorFactory() {
  return std::make_unique<RpcMetricsInterceptorFactory>(this);
}

std::string RpcMetrics::MethodLabel(const char* method) const {
  if (method == nullptr || !std::binary_search(methods_.begin(), methods_.end(), method)) {
    return kOtherMethod;
  }
  // "/paratune.v1.Autotuner/CreateSearch" is labelled "paratune.v1.Autotuner/CreateSearch".
  return std::string(absl::StripPrefix(method, "/"));
}

void RpcMetrics::RecordRefused(absl::string_view method, absl::StatusCode code) {
  calls_->WithLabels({MethodLabel(std::string(method).c_str()), absl::StatusCodeToString(code)})
      .Increment();
}

void RpcMetrics::Record(const std::string& method_label, const std::string& code, double seconds) {
  calls_->WithLabels({method_label, code}).Increment();
  durations_->WithLabels({method_label, code}).Observe(seconds);
}

}  // namespace paratune
