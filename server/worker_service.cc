#include "server/worker_service.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/grpc_status.h"

namespace paratune {
namespace {

constexpr double kDefaultWaitSeconds = 10;
constexpr double kMaxWaitSeconds = 60;
// An empty answer must reach the client before its own deadline turns the poll into an
// error; this much is kept for the trip back.
constexpr absl::Duration kDeadlineMargin = absl::Milliseconds(500);

}  // namespace

grpc::ServerUnaryReactor* WorkerService::RegisterWorker(grpc::CallbackServerContext* context,
                                                        const v1::RegisterWorkerRequest* request,
                                                        v1::RegisterWorkerResponse* response) {
  return FinishUnary(context, scheduler_->RegisterWorker(*request), response);
}

grpc::ServerUnaryReactor* WorkerService::Heartbeat(grpc::CallbackServerContext* context,
                                                   const v1::HeartbeatRequest* request,
                                                   v1::HeartbeatResponse* response) {
  return FinishUnary(context, scheduler_->Heartbeat(*request), response);
}

grpc::ServerUnaryReactor* WorkerService::AcquireProbe(grpc::CallbackServerContext* context,
                                                      const v1::AcquireProbeRequest* request,
                                                      v1::AcquireProbeResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const double wait_seconds = request->wait_seconds();
  if (!std::isfinite(wait_seconds) || wait_seconds < 0 || wait_seconds > kMaxWaitSeconds) {
    reactor->Finish(ToGrpcStatus(absl::InvalidArgumentError(
        absl::StrCat("wait_seconds (", wait_seconds, ") must be in [0, ", kMaxWaitSeconds, "]"))));
    return reactor;
  }
  absl::Time deadline =
      absl::Now() + absl::Seconds(wait_seconds == 0 ? kDefaultWaitSeconds : wait_seconds);
  deadline = std::min(deadline, absl::FromChrono(context->deadline()) - kDeadlineMargin);
  wait_list_->Wait(request->worker(), deadline,
                   [reactor, response](ProbeWaitList::AcquireResult result) {
                     if (result.ok() && result->has_value()) {
                       *response->mutable_assignment() = **std::move(result);
                     }
                     reactor->Finish(ToGrpcStatus(result.status()));
                   });
  return reactor;
}

grpc::ServerUnaryReactor* WorkerService::ReportProbe(grpc::CallbackServerContext* context,
                                                     const v1::ReportProbeRequest* request,
                                                     v1::ReportProbeResponse* response) {
  absl::Status status = scheduler_->ReportProbe(*request);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

grpc::ServerUnaryReactor* WorkerService::Rendezvous(grpc::CallbackServerContext* context,
                                                    const v1::RendezvousRequest* request,
                                                    v1::RendezvousResponse* response) {
  return FinishUnary(context, scheduler_->Rendezvous(*request), response);
}

grpc::ServerUnaryReactor* WorkerService::DeregisterWorker(
    grpc::CallbackServerContext* context, const v1::DeregisterWorkerRequest* request,
    v1::DeregisterWorkerResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(scheduler_->DeregisterWorker(*request)));
  return reactor;
}

}  // namespace paratune
