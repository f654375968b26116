// The events the scheduler logs of a search (proto/search_event.proto), one builder per kind,
// so that each kind's fields are set in one place and a test can hold every kind to its list.
// Pure: the scheduler stamps the time when it publishes them.
#ifndef PARATUNE_SERVER_CORE_SEARCH_EVENTS_H_
#define PARATUNE_SERVER_CORE_SEARCH_EVENTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "proto/probe.pb.h"
#include "proto/search.pb.h"
#include "proto/search_event.pb.h"
#include "proto/specs.pb.h"
#include "server/core/scheduler_state.pb.h"

namespace paratune {

// `search` (planned, its creator set) was created; `probes_risky`: its space probes RISKY
// candidates too.
v1::SearchEvent CreatedEvent(const v1::Search& search, bool probes_risky);

// The policy queued `candidate` for its screening probe, or (`confirmation`) for a
// confirmation probe; its selection_note says why.
v1::SearchEvent PlannedEvent(const v1::Candidate& candidate, bool confirmation);

// `lease` was taken for `candidate` (its attempts counting this one); a confirmation's
// attempt is its own (ProbeAttempts), with the first measurement it confirms.
v1::SearchEvent LeasedEvent(const v1::Candidate& candidate, const internal::LeaseState& lease,
                            int64_t max_attempts);

// Member `member` of `lease` reported its share; the others run on.
v1::SearchEvent ShareFinishedEvent(const internal::LeaseState& lease, int member);

// `ended` ended with `result` (the gang's combined result on success; the report of member
// `member` otherwise). Whether a failed confirmation leaves the screening result standing
// is known once the result is recorded (SearchEvent.screening_result_stands).
v1::SearchEvent ProbedEvent(const internal::LeaseState& ended, int member,
                            const v1::ProbeResult& result);

// The probe of `candidate` (named by its attempts) ended without a result for `reason`, and
// is queued again (`gave_up` false) or given up; a confirmation's attempt is its own.
v1::SearchEvent RequeuedEvent(const v1::Candidate& candidate, int64_t search_id, int64_t n,
                              int64_t max_attempts, bool gave_up, const std::string& reason);

// The calibrated memory estimate ruled `configs` out.
v1::SearchEvent SkippedEvent(const std::vector<v1::ParallelConfig>& configs);

// Candidate `candidate`'s waiting reason became `reason` (empty: it can be placed again).
v1::SearchEvent WaitingEvent(const std::string& candidate, const std::string& reason);

// The worker `worker_id`, a member of `lease`, was lost for `reason`.
v1::SearchEvent WorkerLostEvent(const internal::LeaseState& lease, int64_t worker_id,
                                const std::string& reason);

v1::SearchEvent ResumedEvent();

// `search` ended by itself (its state and stop reason), or was cancelled by `principal`
// (empty without tokens) with `stopped_probes` running probes told to stop.
v1::SearchEvent StoppedEvent(const v1::Search& search);
v1::SearchEvent CancelledEvent(const v1::Search& search, const std::string& principal,
                               int64_t stopped_probes);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_SEARCH_EVENTS_H_
