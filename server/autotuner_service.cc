#include "server/autotuner_service.h"

#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/grpc_status.h"
#include "convert/estimate_requests.h"
#include "convert/search_event_text.h"
#include "convert/search_state.h"
#include "server/core/limits.h"
#include "server/core/plan_request.h"
#include "server/security/rpc_authorization.h"

namespace paratune {
namespace {

// One WatchSearch stream. gRPC allows one write in flight, so changes queue here and are
// written in order; the stream finishes after the write that shows the search ended. The
// reactor deletes itself in OnDone, after unregistering from the scheduler.
class SearchWatch final : public grpc::ServerWriteReactor<v1::WatchSearchResponse>,
                          public SearchObserver {
 public:
  SearchWatch(Scheduler* scheduler, std::string name)
      : scheduler_(scheduler), name_(std::move(name)) {}

  // Starts with the caller's error when it has no principal.
  void Start(const absl::StatusOr<Caller>& caller) {
    absl::StatusOr<Scheduler::WatchStart> start =
        caller.ok() ? scheduler_->Watch(name_, this, *caller)
                    : absl::StatusOr<Scheduler::WatchStart>(caller.status());
    absl::MutexLock lock(&mu_);
    if (!start.ok()) {
      RequestFinishLocked(ToGrpcStatus(start.status()));
    } else {
      v1::WatchSearchResponse first;
      *first.mutable_search() = std::move(start->search);
      EnqueueLocked(std::move(first));
      if (start->ended) RequestFinishLocked(grpc::Status::OK);
    }
    PumpLocked();
  }

  void OnSearchChanged(const v1::WatchSearchResponse& change) override {
    absl::MutexLock lock(&mu_);
    EnqueueLocked(change);
    if (SearchEnded(change.search().state())) RequestFinishLocked(grpc::Status::OK);
    PumpLocked();
  }

  void OnSchedulerShutdown() override {
    absl::MutexLock lock(&mu_);
    pending_.clear();
    RequestFinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down"));
    PumpLocked();
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) {
      // The stream broke (client gone): nothing more can be written.
      pending_.clear();
      RequestFinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "the stream broke"));
    }
    PumpLocked();
  }

  void OnCancel() override {
    absl::MutexLock lock(&mu_);
    pending_.clear();
    RequestFinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "the client cancelled"));
    PumpLocked();
  }

  void OnDone() override {
    scheduler_->Unwatch(name_, this);
    delete this;
  }

 private:
  // Queues `response`, each event's text rendered.
  void EnqueueLocked(v1::WatchSearchResponse response) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finish_requested_) return;
    for (v1::SearchEvent& event : *response.mutable_events()) {
      event.set_text(RenderSearchEvent(event));
    }
    pending_.push_back(std::move(response));
  }

  // The first requested status wins.
  void RequestFinishLocked(grpc::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finish_requested_) return;
    finish_requested_ = true;
    finish_status_ = std::move(status);
  }

  void PumpLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_ || writing_) return;
    if (!pending_.empty()) {
      in_flight_ = std::move(pending_.front());
      pending_.pop_front();
      writing_ = true;
      StartWrite(&in_flight_);
      return;
    }
    if (finish_requested_) {
      finished_ = true;
      Finish(finish_status_);
    }
  }

  Scheduler* const scheduler_;
  const std::string name_;
  absl::Mutex mu_;
  std::deque<v1::WatchSearchResponse> pending_ ABSL_GUARDED_BY(mu_);
  v1::WatchSearchResponse in_flight_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status finish_status_ ABSL_GUARDED_BY(mu_);
};

// Ends the call with `status`.
grpc::ServerUnaryReactor* Refuse(grpc::CallbackServerContext* context, const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace

grpc::ServerUnaryReactor* AutotunerService::CreateSearch(grpc::CallbackServerContext* context,
                                                         const v1::CreateSearchRequest* request,
                                                         v1::Search* response) {
  absl::StatusOr<Caller> caller = CallerOf(tokens_, *context);
  if (!caller.ok()) return Refuse(context, caller.status());
  if (absl::Status size = CheckRequestBytes("CreateSearch", request->ByteSizeLong(),
                                            scheduler_->limits().max_request_bytes);
      !size.ok()) {
    return Refuse(context, size);
  }
  return FinishUnary(context, scheduler_->CreateSearch(*request, *caller), response);
}

grpc::ServerUnaryReactor* AutotunerService::GetSearch(grpc::CallbackServerContext* context,
                                                      const v1::GetSearchRequest* request,
                                                      v1::Search* response) {
  absl::StatusOr<Caller> caller = CallerOf(tokens_, *context);
  if (!caller.ok()) return Refuse(context, caller.status());
  return FinishUnary(context, scheduler_->reader().GetSearch(request->name(), *caller), response);
}

grpc::ServerUnaryReactor* AutotunerService::ListSearches(grpc::CallbackServerContext* context,
                                                         const v1::ListSearchesRequest* request,
                                                         v1::ListSearchesResponse* response) {
  absl::StatusOr<Caller> caller = CallerOf(tokens_, *context);
  if (!caller.ok()) return Refuse(context, caller.status());
  return FinishUnary(context, scheduler_->reader().ListSearches(*request, *caller), response);
}

grpc::ServerUnaryReactor* AutotunerService::CancelSearch(grpc::CallbackServerContext* context,
                                                         const v1::CancelSearchRequest* request,
                                                         v1::Search* response) {
  absl::StatusOr<Caller> caller = CallerOf(tokens_, *context);
  if (!caller.ok()) return Refuse(context, caller.status());
  return FinishUnary(context, scheduler_->CancelSearch(request->name(), *caller), response);
}

grpc::ServerWriteReactor<v1::WatchSearchResponse>* AutotunerService::WatchSearch(
    grpc::CallbackServerContext* context, const v1::WatchSearchRequest* request) {
  absl::StatusOr<Caller> caller = CallerOf(tokens_, *context);
  auto* watch = new SearchWatch(scheduler_, request->name());
  watch->Start(caller);
  return watch;
}

grpc::ServerUnaryReactor* AutotunerService::Estimate(grpc::CallbackServerContext* context,
                                                     const v1::EstimateRequest* request,
                                                     v1::EstimateResponse* response) {
  if (absl::Status size = CheckRequestBytes("Estimate", request->ByteSizeLong(),
                                            scheduler_->limits().max_request_bytes);
      !size.ok()) {
    return Refuse(context, size);
  }
  return FinishUnary(context, AnswerEstimate(*request), response);
}

grpc::ServerUnaryReactor* AutotunerService::Plan(grpc::CallbackServerContext* context,
                                                 const v1::PlanRequest* request,
                                                 v1::PlanResponse* response) {
  return FinishUnary(context, AnswerPlanWithinLimits(*request, scheduler_->limits()), response);
}

grpc::ServerUnaryReactor* AutotunerService::ListWorkers(grpc::CallbackServerContext* context,
                                                        const v1::ListWorkersRequest* request,
                                                        v1::ListWorkersResponse* response) {
  absl::StatusOr<Caller> caller = CallerOf(tokens_, *context);
  if (!caller.ok()) return Refuse(context, caller.status());
  return FinishUnary(context, scheduler_->reader().ListWorkers(*caller), response);
}

grpc::ServerUnaryReactor* AutotunerService::ListSearchEvents(
    grpc::CallbackServerContext* context, const v1::ListSearchEventsRequest* request,
    v1::ListSearchEventsResponse* response) {
  absl::StatusOr<Caller> caller = CallerOf(tokens_, *context);
  if (!caller.ok()) return Refuse(context, caller.status());
  return FinishUnary(context, scheduler_->reader().ListSearchEvents(*request, *caller), response);
}

}  // namespace paratune
