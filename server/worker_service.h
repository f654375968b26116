// The WorkerService gRPC service (proto/worker_service.proto) over the scheduler's Fleet, with
// the callback API; AcquireProbe is a long poll parked in a ProbeWaitList. A worker principal
// acts only as the workers it registered (Scheduler::Fleet::CheckWorkerAccess): for another's,
// every call but RegisterWorker is NOT_FOUND, which makes a worker daemon register again.
#ifndef PARATUNE_SERVER_WORKER_SERVICE_H_
#define PARATUNE_SERVER_WORKER_SERVICE_H_

#include "proto/worker_service.grpc.pb.h"
#include "server/core/probe_wait_list.h"
#include "server/core/scheduler.h"
#include "server/security/rpc_authorization.h"

namespace paratune {

// Thread-safe. `fleet`, `wait_list` and `tokens` must outlive the service and every call it
// serves.
class WorkerService final : public v1::WorkerService::CallbackService {
 public:
  // `tokens` names the callers (CallerOf); null on a server without tokens.
  WorkerService(Scheduler::Fleet* fleet, ProbeWaitList* wait_list,
                const TokenAuthMetadataProcessor* tokens = nullptr)
      : fleet_(fleet), wait_list_(wait_list), tokens_(tokens) {}

  grpc::ServerUnaryReactor* RegisterWorker(grpc::CallbackServerContext* context,
                                           const v1::RegisterWorkerRequest* request,
                                           v1::RegisterWorkerResponse* response) override;
  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* context,
                                      const v1::HeartbeatRequest* request,
                                      v1::HeartbeatResponse* response) override;
  // Answers at once when a probe fits, else when one is queued that fits, else empty at
  // wait_seconds (0 means 10, at most 60) or shortly before the client's deadline, whichever
  // is first. INVALID_ARGUMENT for wait_seconds outside [0, 60].
  grpc::ServerUnaryReactor* AcquireProbe(grpc::CallbackServerContext* context,
                                         const v1::AcquireProbeRequest* request,
                                         v1::AcquireProbeResponse* response) override;
  grpc::ServerUnaryReactor* ReportProbe(grpc::CallbackServerContext* context,
                                        const v1::ReportProbeRequest* request,
                                        v1::ReportProbeResponse* response) override;
  grpc::ServerUnaryReactor* Rendezvous(grpc::CallbackServerContext* context,
                                       const v1::RendezvousRequest* request,
                                       v1::RendezvousResponse* response) override;
  grpc::ServerUnaryReactor* DeregisterWorker(grpc::CallbackServerContext* context,
                                             const v1::DeregisterWorkerRequest* request,
                                             v1::DeregisterWorkerResponse* response) override;

 private:
  Scheduler::Fleet* const fleet_;
  ProbeWaitList* const wait_list_;
  const TokenAuthMetadataProcessor* const tokens_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_WORKER_SERVICE_H_
