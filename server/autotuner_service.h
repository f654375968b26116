// The Autotuner gRPC service (proto/autotuner_service.proto) over the Scheduler, with the
// callback API. Each call passes its caller's principal (server/security/rpc_authorization.h,
// CallerOf) to the scheduler, which records it as a search's creator and lets a client
// principal reach its own searches only.
#ifndef PARATUNE_SERVER_AUTOTUNER_SERVICE_H_
#define PARATUNE_SERVER_AUTOTUNER_SERVICE_H_

#include "proto/autotuner_service.grpc.pb.h"
#include "server/core/scheduler.h"
#include "server/security/rpc_authorization.h"

namespace paratune {

// Thread-safe. `scheduler` and `tokens` must outlive the service and every call it serves.
class AutotunerService final : public v1::Autotuner::CallbackService {
 public:
  // `tokens` names the callers (CallerOf); null on a server without tokens.
  explicit AutotunerService(Scheduler* scheduler,
                            const TokenAuthMetadataProcessor* tokens = nullptr)
      : scheduler_(scheduler), tokens_(tokens) {}

  grpc::ServerUnaryReactor* CreateSearch(grpc::CallbackServerContext* context,
                                         const v1::CreateSearchRequest* request,
                                         v1::Search* response) override;
  grpc::ServerUnaryReactor* GetSearch(grpc::CallbackServerContext* context,
                                      const v1::GetSearchRequest* request,
                                      v1::Search* response) override;
  grpc::ServerUnaryReactor* ListSearches(grpc::CallbackServerContext* context,
                                         const v1::ListSearchesRequest* request,
                                         v1::ListSearchesResponse* response) override;
  grpc::ServerUnaryReactor* CancelSearch(grpc::CallbackServerContext* context,
                                         const v1::CancelSearchRequest* request,
                                         v1::Search* response) override;
  // Streams the search at once and after every change; finishes OK after the message that
  // shows it ended, UNAVAILABLE when the server shuts down.
  grpc::ServerWriteReactor<v1::WatchSearchResponse>* WatchSearch(
      grpc::CallbackServerContext* context, const v1::WatchSearchRequest* request) override;
  // Estimate and Plan answer from the estimator alone (convert/estimate_requests.h), so the
  // CLI's offline commands give the same answers. CreateSearch, Estimate and Plan requests
  // over the scheduler's limits().max_request_bytes are INVALID_ARGUMENT naming
  // --max_request_bytes; a Plan enumerating more than max_enumerated_candidates is
  // INVALID_ARGUMENT naming --max_enumerated_candidates (server/core/limits.h).
  grpc::ServerUnaryReactor* Estimate(grpc::CallbackServerContext* context,
                                     const v1::EstimateRequest* request,
                                     v1::EstimateResponse* response) override;
  grpc::ServerUnaryReactor* Plan(grpc::CallbackServerContext* context,
                                 const v1::PlanRequest* request,
                                 v1::PlanResponse* response) override;
  grpc::ServerUnaryReactor* ListWorkers(grpc::CallbackServerContext* context,
                                        const v1::ListWorkersRequest* request,
                                        v1::ListWorkersResponse* response) override;
  grpc::ServerUnaryReactor* ListSearchEvents(grpc::CallbackServerContext* context,
                                             const v1::ListSearchEventsRequest* request,
                                             v1::ListSearchEventsResponse* response) override;

 private:
  Scheduler* const scheduler_;
  const TokenAuthMetadataProcessor* const tokens_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_AUTOTUNER_SERVICE_H_
