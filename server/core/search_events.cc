#include "server/core/search_events.h"

#include "convert/result_source.h"
#include "convert/search_progress.h"
#include "server/core/lease.h"
#include "server/core/resource_names.h"

namespace paratune {
namespace {

v1::SearchEvent OfKind(v1::SearchEventKind kind) {
  v1::SearchEvent event;
  event.set_kind(kind);
  return event;
}

// The event of `kind` about the probe of `lease`, with its candidate and probe names.
v1::SearchEvent OfProbe(v1::SearchEventKind kind, const internal::LeaseState& lease) {
  v1::SearchEvent event = OfKind(kind);
  event.set_candidate(CandidateName(lease.search_id(), lease.candidate()));
  event.set_probe(lease.probe());
  return event;
}

void AddHost(const v1::ProbeHost& host, v1::SearchEvent& event) { *event.add_workers() = host; }

}  // namespace

v1::SearchEvent CreatedEvent(const v1::Search& search, bool probes_risky) {
  v1::SearchEvent event = OfKind(v1::EVENT_CREATED);
  event.set_principal(search.creator());
  event.set_policy(search.spec().policy());
  *event.mutable_counts() = search.counts();
  event.set_probes_risky(probes_risky);
  return event;
}

v1::SearchEvent PlannedEvent(const v1::Candidate& candidate, bool confirmation) {
  v1::SearchEvent event = OfKind(confirmation ? v1::EVENT_CONFIRMING : v1::EVENT_PLANNED);
  event.set_candidate(candidate.name());
  *event.mutable_config() = candidate.config();
  event.set_reason(candidate.selection_note());
  return event;
}

v1::SearchEvent LeasedEvent(const v1::Candidate& candidate, const internal::LeaseState& lease,
                            int64_t max_attempts) {
  v1::SearchEvent event = OfProbe(v1::EVENT_LEASED, lease);
  event.set_attempt(ProbeAttempts(candidate));
  event.set_max_attempts(max_attempts);
  if (candidate.has_screening_result()) {
    event.set_confirmation(true);
    event.set_tflops_per_gpu(candidate.screening_result().model_tflops_per_gpu());
    event.set_result_source(ResultSource(candidate.screening_result()));
  }
  event.set_scope(lease.scope());
  event.set_gpus(lease.num_ranks());
  for (const v1::ProbeHost& host : LeaseHosts(lease)) AddHost(host, event);
  return event;
}

v1::SearchEvent ShareFinishedEvent(const internal::LeaseState& lease, int member) {
  v1::SearchEvent event = OfProbe(v1::EVENT_SHARE_FINISHED, lease);
  AddHost(LeaseHosts(lease)[member], event);
  return event;
}

v1::SearchEvent ProbedEvent(const internal::LeaseState& ended, int member,
                            const v1::ProbeResult& result) {
  v1::SearchEvent event = OfProbe(v1::EVENT_PROBED, ended);
  const std::vector<v1::ProbeHost> hosts = LeaseHosts(ended);
  if (result.outcome() == v1::PROBE_OK) {
    for (const v1::ProbeHost& host : hosts) AddHost(host, event);
    event.set_tflops_per_gpu(result.model_tflops_per_gpu());
  } else {
    AddHost(hosts[member], event);
    event.set_reason(result.message());
  }
  event.set_outcome(result.outcome());
  event.set_result_source(ResultSource(result));
  return event;
}

v1::SearchEvent RequeuedEvent(const v1::Candidate& candidate, int64_t search_id, int64_t n,
                              int64_t max_attempts, bool gave_up, const std::string& reason) {
  v1::SearchEvent event = OfKind(gave_up ? v1::EVENT_GAVE_UP : v1::EVENT_REQUEUED);
  event.set_candidate(candidate.name());
  event.set_probe(ProbeName(search_id, n, candidate.attempts()));
  event.set_attempt(ProbeAttempts(candidate));
  event.set_max_attempts(max_attempts);
  // A given-up confirmation has its screening result back as its result already.
  event.set_confirmation(candidate.screening_attempts() > 0);
  event.set_reason(reason);
  return event;
}

v1::SearchEvent SkippedEvent(const std::vector<v1::ParallelConfig>& configs) {
  v1::SearchEvent event = OfKind(v1::EVENT_SKIPPED);
  for (const v1::ParallelConfig& config : configs) *event.add_ruled_out() = config;
  event.set_reason("not fitting in memory (calibrated estimate)");
  return event;
}

v1::SearchEvent WaitingEvent(const std::string& candidate, const std::string& reason) {
  v1::SearchEvent event = OfKind(v1::EVENT_WAITING);
  event.set_candidate(candidate);
  event.set_reason(reason);
  return event;
}

v1::SearchEvent WorkerLostEvent(const internal::LeaseState& lease, int64_t worker_id,
                                const std::string& reason) {
  v1::SearchEvent event = OfProbe(v1::EVENT_WORKER_LOST, lease);
  const int member = MemberIndex(lease, worker_id);
  if (member >= 0) AddHost(LeaseHosts(lease)[member], event);
  event.set_reason(reason);
  return event;
}

v1::SearchEvent ResumedEvent() { return OfKind(v1::EVENT_RESUMED); }

v1::SearchEvent StoppedEvent(const v1::Search& search) {
  v1::SearchEvent event = OfKind(v1::EVENT_STOPPED);
  event.set_state(search.state());
  event.set_reason(search.stop_reason());
  return event;
}

v1::SearchEvent CancelledEvent(const v1::Search& search, const std::string& principal,
                               int64_t stopped_probes) {
  v1::SearchEvent event = OfKind(v1::EVENT_CANCELLED);
  event.set_state(search.state());
  event.set_reason(search.stop_reason());
  event.set_principal(principal);
  event.set_stopped_probes(stopped_probes);
  return event;
}

}  // namespace paratune
