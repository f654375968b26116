#include "server/worker_service.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/time/clock.h"
#include "common/grpc_status.h"
#include "server/core/worker_request.h"
#include "server/security/rpc_authorization.h"

namespace paratune {
namespace {

constexpr double kDefaultWaitSeconds = 10;
// An empty answer must reach the client before its own deadline turns the poll into an
// error; this much is kept for the trip back.
constexpr absl::Duration kDeadlineMargin = absl::Milliseconds(500);

// Ends the call with `status`.
grpc::ServerUnaryReactor* Refuse(grpc::CallbackServerContext* context, const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace

grpc::ServerUnaryReactor* WorkerService::RegisterWorker(grpc::CallbackServerContext* context,
                                                        const v1::RegisterWorkerRequest* request,
                                                        v1::RegisterWorkerResponse* response) {
  absl::StatusOr<Caller> caller = CallerOf(tokens_, *context);
  if (!caller.ok()) return Refuse(context, caller.status());
  return FinishUnary(context, fleet_->RegisterWorker(*request, *caller), response);
}

grpc::ServerUnaryReactor* WorkerService::Heartbeat(grpc::CallbackServerContext* context,
                                                   const v1::HeartbeatRequest* request,
                                                   v1::HeartbeatResponse* response) {
  absl::StatusOr<Caller> caller = CallerOf(tokens_, *context);
  if (!caller.ok()) return Refuse(context, caller.status());
  if (absl::Status access = fleet_->CheckWorkerAccess(request->worker(), *caller); !access.ok()) {
    return Refuse(context, access);
  }
  return FinishUnary(context, fleet_->Heartbeat(*request), response);
}

grpc::ServerUnaryReactor* WorkerService::AcquireProbe(grpc::CallbackServerContext* context,
                                                      const v1::AcquireProbeRequest* request,
                                                      v1::AcquireProbeResponse* response) {
  absl::StatusOr<Caller> caller = CallerOf(tokens_, *context);
  if (!caller.ok()) return Refuse(context, caller.status());
  if (absl::Status access = fleet_->CheckWorkerAccess(request->worker(), *caller); !access.ok()) {
    return Refuse(context, access);
  }
  // Before wait_seconds sets the deadline (TryAcquireProbe checks the request as well).
  if (absl::Status valid = ValidateAcquireProbeRequest(*request); !valid.ok()) {
    return Refuse(context, valid);
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const double wait_seconds = request->wait_seconds();
  absl::Time deadline =
      absl::Now() + absl::Seconds(wait_seconds == 0 ? kDefaultWaitSeconds : wait_seconds);
  deadline = std::min(deadline, absl::FromChrono(context->deadline()) - kDeadlineMargin);
  wait_list_->Wait(*request, deadline, [reactor, response](ProbeWaitList::AcquireResult result) {
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
  absl::StatusOr<Caller> caller = CallerOf(tokens_, *context);
  if (!caller.ok()) return Refuse(context, caller.status());
  absl::Status status = fleet_->CheckWorkerAccess(request->worker(), *caller);
  if (status.ok()) status = fleet_->ReportProbe(*request);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

grpc::ServerUnaryReactor* WorkerService::Rendezvous(grpc::CallbackServerContext* context,
                                                    const v1::RendezvousRequest* request,
                                                    v1::RendezvousResponse* response) {
  absl::StatusOr<Caller> caller = CallerOf(tokens_, *context);
  if (!caller.ok()) return Refuse(context, caller.status());
  if (absl::Status access = fleet_->CheckWorkerAccess(request->worker(), *caller); !access.ok()) {
    return Refuse(context, access);
  }
  return FinishUnary(context, fleet_->Rendezvous(*request), response);
}

grpc::ServerUnaryReactor* WorkerService::DeregisterWorker(
    grpc::CallbackServerContext* context, const v1::DeregisterWorkerRequest* request,
    v1::DeregisterWorkerResponse* response) {
  absl::StatusOr<Caller> caller = CallerOf(tokens_, *context);
  if (!caller.ok()) return Refuse(context, caller.status());
  absl::Status status = fleet_->CheckWorkerAccess(request->worker(), *caller);
  if (status.ok()) status = fleet_->DeregisterWorker(*request);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace paratune
