#include "cli/report.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/table.h"
#include "convert/search_text.h"
#include "convert/spec_convert.h"
#include "google/protobuf/util/time_util.h"

namespace paratune {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string GiB(int64_t bytes) { return absl::StrFormat("%.2f", bytes / kGiB); }

std::string Percent(double fraction) { return absl::StrFormat("%.1f%%", 100.0 * fraction); }

std::string VerdictName(v1::MemoryVerdict verdict) {
  switch (verdict) {
    case v1::SAFE:
      return "SAFE";
    case v1::RISKY:
      return "RISKY";
    case v1::OUT_OF_MEMORY:
      return "OOM";
    default:
      return "?";
  }
}

std::string CandidateStateName(v1::CandidateState state) {
  switch (state) {
    case v1::CANDIDATE_PLANNED:
      return "planned";
    case v1::CANDIDATE_QUEUED:
      return "queued";
    case v1::CANDIDATE_RUNNING:
      return "running";
    case v1::CANDIDATE_SKIPPED:
      return "skipped";
    default:
      return "?";
  }
}

std::string ModelName(const v1::ModelSpec& model) {
  if (!model.preset().empty()) return model.preset();
  return absl::StrFormat("custom (h %d, L %d, a %d, kv %d)", model.hidden_size(),
                         model.num_layers(), model.num_attention_heads(), model.num_kv_heads());
}

std::string ClusterName(const v1::ClusterSpec& cluster) {
  return absl::StrFormat("%d nodes x %d %s", cluster.num_nodes(), cluster.gpus_per_node(),
                         cluster.gpu().type().empty() ? "custom GPU" : cluster.gpu().type());
}

std::string PolicyName(v1::SearchPolicy policy) {
  return policy == v1::SEARCH_POLICY_UNSPECIFIED ? "ADAPTIVE" : v1::SearchPolicy_Name(policy);
}

// ": 2 out of memory, 1 timeout" from failed_by_outcome, in outcome order; "" when none.
std::string FailureBreakdown(const v1::SearchCounts& counts) {
  std::vector<std::string> parts;
  for (int outcome = v1::ProbeOutcome_MIN; outcome <= v1::ProbeOutcome_MAX; ++outcome) {
    if (!v1::ProbeOutcome_IsValid(outcome)) continue;
    const auto it = counts.failed_by_outcome().find(
        v1::ProbeOutcome_Name(static_cast<v1::ProbeOutcome>(outcome)));
    if (it == counts.failed_by_outcome().end()) continue;
    parts.push_back(
        absl::StrCat(it->second, " ", DescribeOutcome(static_cast<v1::ProbeOutcome>(outcome))));
  }
  return parts.empty() ? "" : absl::StrCat(": ", absl::StrJoin(parts, ", "));
}

// Best measured TFLOP/s per GPU among the probed candidates, saying when simulated;
// "-" when nothing succeeded yet.
std::string BestMeasured(const v1::Search& search) {
  const v1::Candidate* best = nullptr;
  for (const auto& candidate : search.candidates()) {
    if (candidate.state() != v1::CANDIDATE_PROBED ||
        candidate.probe_result().outcome() != v1::PROBE_OK) {
      continue;
    }
    if (best == nullptr || candidate.probe_result().model_tflops_per_gpu() >
                               best->probe_result().model_tflops_per_gpu()) {
      best = &candidate;
    }
  }
  if (best == nullptr) return "-";
  return absl::StrFormat("%.1f TFLOP/s per GPU%s (%s)", best->probe_result().model_tflops_per_gpu(),
                         best->probe_result().simulated() ? " simulated" : "",
                         DescribeConfig(best->config()));
}

}  // namespace

std::string FormatEstimate(const v1::ParallelConfig& config, const v1::EstimateResponse& estimate) {
  const v1::MemoryEstimate& memory = estimate.memory();
  std::string out = absl::StrCat("Configuration: ", DescribeConfig(config), "\n\n");

  std::vector<Table::Column> columns = {{"memory per GPU (GiB)", false}};
  for (const auto& stage : memory.stages()) {
    columns.push_back({absl::StrCat("stage ", stage.stage()), true});
  }
  Table breakdown(columns);
  if (!memory.stages().empty()) {
    for (int t = 0; t < memory.stages(0).terms_size(); ++t) {
      std::vector<std::string> row = {memory.stages(0).terms(t).name()};
      for (const auto& stage : memory.stages()) row.push_back(GiB(stage.terms(t).bytes()));
      breakdown.AddRow(std::move(row));
    }
    std::vector<std::string> total = {"total"};
    for (const auto& stage : memory.stages()) total.push_back(GiB(stage.total_bytes()));
    breakdown.AddRow(std::move(total));
  }
  absl::StrAppend(&out, breakdown.Render());
  absl::StrAppendFormat(&out, "peak %s GiB of %s GiB = %s of capacity -> %s (SAFE below %s)\n\n",
                        GiB(memory.peak_bytes()), GiB(memory.capacity_bytes()),
                        Percent(memory.fraction_of_capacity()), VerdictName(memory.verdict()),
                        Percent(memory.safe_threshold()));

  const v1::PerformanceEstimate& perf = estimate.performance();
  Table timing({{"predicted step (performance model)", false}, {"seconds", true}});
  timing.AddRow({"step time", absl::StrFormat("%.3f", perf.step_time_seconds())});
  timing.AddRow({"  compute", absl::StrFormat("%.3f", perf.compute_seconds())});
  timing.AddRow({"  pipeline bubble", absl::StrFormat("%.3f", perf.pipeline_bubble_seconds())});
  timing.AddRow(
      {"  TP communication (exposed)", absl::StrFormat("%.3f", perf.tp_communication_seconds())});
  timing.AddRow(
      {"  CP communication (exposed)", absl::StrFormat("%.3f", perf.cp_communication_seconds())});
  timing.AddRow(
      {"  DP communication (exposed)", absl::StrFormat("%.3f", perf.dp_communication_seconds())});
  timing.AddRow(
      {"  PP communication (exposed)", absl::StrFormat("%.3f", perf.pp_communication_seconds())});
  timing.AddRow({"  optimizer step", absl::StrFormat("%.3f", perf.optimizer_seconds())});
  absl::StrAppend(&out, timing.Render());
  absl::StrAppendFormat(&out,
                        "throughput %.0f tokens/s, %.1f TFLOP/s per GPU (+- %s, one sigma), MFU "
                        "%s (%.3g model FLOPs per step)\n",
                        perf.tokens_per_second(), perf.model_tflops_per_gpu(),
                        Percent(perf.relative_error()), Percent(perf.mfu()),
                        perf.model_flops_per_step());
  return out;
}

std::string FormatPlanSummary(const v1::SearchSpec& spec, const v1::PlanResponse& plan) {
  const v1::SearchCounts& counts = plan.counts();
  std::string out = absl::StrFormat(
      "%s on %s, global batch %d, sequence %d\n"
      "enumerated %d, valid %d, candidates %s, out of memory %d\n",
      ModelName(spec.model()), ClusterName(spec.cluster()), spec.training().global_batch_size(),
      spec.training().seq_len(), counts.enumerated(), counts.valid(),
      DescribeMemoryEligible(counts, ProbesRiskyConfigurations(spec.space())),
      counts.memory_out_of_memory());
  if (!plan.rejections().empty()) {
    Table rejections({{"rejected because", false}, {"configs", true}});
    for (const auto& rejection : plan.rejections()) {
      rejections.AddRow({rejection.reason(), absl::StrCat(rejection.count())});
    }
    absl::StrAppend(&out, "\n", rejections.Render());
  }
  return out;
}

std::string FormatPlanCandidates(const v1::PlanResponse& plan) {
  const auto seconds = [](double value) { return absl::StrFormat("%.2f", value); };
  Table candidates({{"#", true},
                    {"config", false},
                    {"mem GiB", true},
                    {"mem %", true},
                    {"verdict", false},
                    {"TFLOP/s/GPU", true},
                    {"+-", true},
                    {"MFU", true},
                    {"step s", true},
                    {"compute", true},
                    {"bubble", true},
                    {"TP", true},
                    {"CP", true},
                    {"DP", true},
                    {"PP", true},
                    {"optim", true}});
  for (int i = 0; i < plan.candidates_size(); ++i) {
    const v1::Candidate& c = plan.candidates(i);
    const v1::PerformanceEstimate& p = c.predicted();
    candidates.AddRow(
        {absl::StrCat(i + 1), DescribeConfig(c.config()), GiB(c.memory().peak_bytes()),
         Percent(c.memory().fraction_of_capacity()), VerdictName(c.memory().verdict()),
         absl::StrFormat("%.1f", p.model_tflops_per_gpu()), Percent(p.relative_error()),
         Percent(p.mfu()), seconds(p.step_time_seconds()), seconds(p.compute_seconds()),
         seconds(p.pipeline_bubble_seconds()), seconds(p.tp_communication_seconds()),
         seconds(p.cp_communication_seconds()), seconds(p.dp_communication_seconds()),
         seconds(p.pp_communication_seconds()), seconds(p.optimizer_seconds())});
  }
  std::string out = absl::StrCat(
      "Candidates in predicted order (TFLOP/s per GPU +- one-sigma relative error; step time "
      "and its exposed parts in seconds)\n",
      candidates.Render());
  if (plan.candidates_size() < plan.counts().memory_safe()) {
    absl::StrAppendFormat(&out, "(%d of %d candidates shown; --limit=0 shows all)\n",
                          plan.candidates_size(), plan.counts().memory_safe());
  }
  return out;
}

// Where a measured number came from, when it was not measured on GPUs by this search.
enum class Origin { kMeasured, kSimulated, kReplayed };

Origin OriginOf(const v1::ProbeResult& result) {
  if (result.simulated()) return Origin::kSimulated;
  if (result.backend() == "replay") return Origin::kReplayed;
  return Origin::kMeasured;
}

// The ranked candidates as a table (the first `max_rows`, all when 0), and the origins of the
// numbers in it other than measured.
struct CandidateTable {
  std::string text;
  bool any_simulated = false;
  bool any_replayed = false;
};

// "estimated/calibrated/measured" peak memory per GPU in GiB, "-" for what is not known
// (docs/memory.md).
std::string MemoryCell(const v1::Candidate& c) {
  const auto known = [](int64_t bytes) { return bytes > 0 ? GiB(bytes) : std::string("-"); };
  // A probe that ran out of memory never reached its peak: only an OK one measured it.
  const bool measured =
      c.state() == v1::CANDIDATE_PROBED && c.probe_result().outcome() == v1::PROBE_OK;
  return absl::StrCat(GiB(c.memory().peak_bytes()), "/", known(c.calibrated_memory().peak_bytes()),
                      "/", known(measured ? c.probe_result().peak_memory_bytes() : 0));
}

CandidateTable CandidatesTable(const v1::Search& search, int max_rows) {
  Table table({{"rank", true},
               {"config", false},
               {"mem GiB est/cal/meas", true},
               {"mem %", true},
               {"pred TFLOP/s/GPU", true},
               {"probed TFLOP/s/GPU", true},
               {"step s", true},
               {"result", false}});
  CandidateTable out;
  int rank = 0;
  for (const auto& c : search.candidates()) {
    if (max_rows > 0 && table.rows() >= max_rows) break;
    const bool ok = c.state() == v1::CANDIDATE_PROBED && c.probe_result().outcome() == v1::PROBE_OK;
    std::string probed = "-";
    std::string step = "-";
    std::string result = c.state() == v1::CANDIDATE_PROBED
                             ? DescribeOutcome(c.probe_result().outcome())
                             : CandidateStateName(c.state());
    if (ok) {
      const Origin origin = OriginOf(c.probe_result());
      out.any_simulated |= origin == Origin::kSimulated;
      out.any_replayed |= origin == Origin::kReplayed;
      probed = absl::StrFormat("%.1f%s", c.probe_result().model_tflops_per_gpu(),
                               origin == Origin::kSimulated  ? " (sim)"
                               : origin == Origin::kReplayed ? " (replay)"
                                                             : "");
      step = absl::StrFormat("%.3f", c.probe_result().mean_step_time_seconds());
    }
    // The estimate's verdict beside its share, so that RISKY probes stand out.
    table.AddRow({ok ? absl::StrCat(++rank) : "-", DescribeConfig(c.config()), MemoryCell(c),
                  absl::StrCat(Percent(c.memory().fraction_of_capacity()), " ",
                               VerdictName(c.memory().verdict())),
                  absl::StrFormat("%.1f", c.predicted().model_tflops_per_gpu()), probed, step,
                  result});
  }
  out.text = table.Render();
  return out;
}

std::string FormatProgress(const v1::Search& search) {
  const v1::SearchCounts& counts = search.counts();
  // The total is what has been probed, what is queued or running, and what the policy may
  // still pick: it shrinks as ADAPTIVE rules candidates out.
  const int64_t pending = counts.selected() - counts.probed();
  std::string line = absl::StrFormat("%s %s: probed %d of %d (%d ok, %d failed)", search.name(),
                                     v1::SearchState_Name(search.state()), counts.probed(),
                                     counts.probed() + pending + counts.still_contending(),
                                     counts.succeeded(), counts.failed());
  if (counts.still_contending() > 0) {
    absl::StrAppendFormat(&line, ", %d more could still win", counts.still_contending());
  }
  absl::StrAppend(&line, "; best ", BestMeasured(search));
  if (counts.projected_remaining_gpu_seconds() > 0) {
    absl::StrAppendFormat(&line, "; ~%.2f GPU-hours, ~%.2f h left (projected)",
                          counts.projected_remaining_gpu_seconds() / 3600,
                          counts.projected_remaining_wall_seconds() / 3600);
  }
  return line;
}

std::string FormatSearch(const v1::Search& search) {
  const v1::SearchSpec& spec = search.spec();
  std::string out = absl::StrFormat(
      "%s%s\n  model %s, %s, global batch %d, sequence %d\n  policy %s, backend %s\n"
      "  state %s%s\n",
      search.name(), search.display_name().empty() ? "" : " (" + search.display_name() + ")",
      ModelName(spec.model()), ClusterName(spec.cluster()), spec.training().global_batch_size(),
      spec.training().seq_len(), PolicyName(spec.policy()),
      spec.probe().backend().empty() ? "sim" : spec.probe().backend(),
      v1::SearchState_Name(search.state()),
      // Empty on a server without tokens: there are no principals then.
      search.creator().empty() ? "" : absl::StrCat(", created by ", search.creator()));
  const v1::SearchCounts& counts = search.counts();
  absl::StrAppendFormat(&out,
                        "  enumerated %d, valid %d, candidates %s, selected %d, probed %d "
                        "(%d ok, %d failed%s)\n",
                        counts.enumerated(), counts.valid(),
                        DescribeMemoryEligible(counts, ProbesRiskyConfigurations(spec.space())),
                        counts.selected(), counts.probed(), counts.succeeded(), counts.failed(),
                        FailureBreakdown(counts));
  const bool simulated = spec.probe().backend().empty() || spec.probe().backend() == "sim";
  if (counts.confirmations() > 0 || counts.gpu_seconds() > 0) {
    // A sim's GPU-hours are what its probes would cost on real GPUs (docs/short_probes.md).
    absl::StrAppendFormat(&out, "  %d confirmation probes, %.2f GPU-hours%s\n",
                          counts.confirmations(), counts.gpu_seconds() / 3600,
                          simulated ? " (simulated: the real-equivalent cost)" : "");
  }
  if (counts.still_contending() > 0 || counts.projected_remaining_gpu_seconds() > 0) {
    absl::StrAppendFormat(&out,
                          "  %d more could still win; ~%.2f GPU-hours, ~%.2f h left (projected "
                          "from predictions)\n",
                          counts.still_contending(),
                          counts.projected_remaining_gpu_seconds() / 3600,
                          counts.projected_remaining_wall_seconds() / 3600);
  }
  const v1::MemoryCalibrationSummary& memory = search.memory_calibration();
  if (memory.measurements() > 0 || memory.out_of_memory() > 0) {
    absl::StrAppendFormat(
        &out,
        "  memory: estimates x %.3f +- %.1f%%, calibrated on %d %s peak(s); %d probe(s) ran "
        "out of memory\n",
        memory.ratio(), 100 * memory.relative_error(), memory.measurements(),
        simulated ? "modelled (simulated)" : "measured", memory.out_of_memory());
  }
  if (!search.stop_reason().empty()) absl::StrAppend(&out, "  ", search.stop_reason(), "\n");
  if (search.candidates().empty()) return out;

  const CandidateTable table = CandidatesTable(search, 0);
  absl::StrAppend(&out, "\n", table.text);
  // Where each probe ran goes below the table: a gang's hosts would make a column too wide.
  for (const auto& c : search.candidates()) {
    if (c.state() != v1::CANDIDATE_PROBED || c.probe_result().ran_on().empty()) continue;
    absl::StrAppend(&out, DescribeConfig(c.config()), " ", DescribeRanOn(c.probe_result()), "\n");
  }
  // Candidates are ranked, so the first measured OK is the best: how much memory it leaves
  // matters most when it is RISKY.
  for (const auto& c : search.candidates()) {
    if (c.state() != v1::CANDIDATE_PROBED || c.probe_result().outcome() != v1::PROBE_OK) continue;
    absl::StrAppend(&out, "best ", DescribeConfig(c.config()), ": ",
                    DescribeMemoryHeadroom(c.memory(), c.probe_result()), "\n");
    break;
  }
  for (const auto& c : search.candidates()) {
    if (c.waiting_reason().empty()) continue;
    absl::StrAppend(&out, "waiting: ", DescribeConfig(c.config()), " ", c.waiting_reason(), "\n");
  }
  if (table.any_simulated) {
    absl::StrAppend(&out,
                    "(sim) = SIMULATED by the sim backend: the performance model plus seeded "
                    "noise, not a GPU measurement.\n");
  }
  if (table.any_replayed) {
    absl::StrAppend(&out,
                    "(replay) = a published measurement replayed by the replay backend, not "
                    "run by this search.\n");
  }
  return out;
}

std::string FormatLiveView(const v1::Search& search, const std::string& event, int max_rows) {
  std::string out = absl::StrCat(FormatProgress(search), "\n");
  if (!event.empty()) absl::StrAppend(&out, "  ", event, "\n");
  const CandidateTable table = CandidatesTable(search, max_rows);
  if (!search.candidates().empty()) absl::StrAppend(&out, table.text);
  if (search.candidates_size() > max_rows) {
    absl::StrAppend(&out, "(", search.candidates_size() - max_rows, " more)\n");
  }
  if (table.any_simulated) absl::StrAppend(&out, "(sim) = simulated\n");
  if (table.any_replayed) absl::StrAppend(&out, "(replay) = a published measurement replayed\n");
  return out;
}

std::string FormatSearchList(const v1::ListSearchesResponse& response) {
  Table table({{"search", false},
               {"name", false},
               {"state", false},
               {"probed", true},
               {"stop reason", false},
               {"created", false}});
  for (const auto& search : response.searches()) {
    table.AddRow({search.name(), search.display_name(), v1::SearchState_Name(search.state()),
                  absl::StrFormat("%d/%d", search.counts().probed(), search.counts().selected()),
                  search.stop_reason(),
                  google::protobuf::util::TimeUtil::ToString(search.create_time())});
  }
  std::string out = table.Render();
  if (!response.next_page_token().empty()) {
    absl::StrAppend(&out, "(more: --page_token=", response.next_page_token(), ")\n");
  }
  return out;
}

std::string FormatWorkers(const v1::ListWorkersResponse& response) {
  Table table({{"worker", false},
               {"host", false},
               {"GPUs", false},
               {"backends", false},
               {"state", false},
               {"probes done", true},
               {"registered by", false},
               {"labels", false}});
  for (const auto& worker : response.workers()) {
    const std::string gpus =
        worker.gpus().empty()
            ? "none"
            : DescribeGpus(worker.gpus_size(), worker.gpu_type(), worker.gpus(0).name());
    // Sorted: a protobuf map has no order. A Slurm job's worker shows its job and probe here.
    const std::map<std::string, std::string> labels(worker.labels().begin(), worker.labels().end());
    table.AddRow({worker.name(), worker.hostname(), gpus, absl::StrJoin(worker.backends(), ","),
                  v1::WorkerState_Name(worker.state()), absl::StrCat(worker.probes_completed()),
                  worker.registered_by().empty() ? "-" : worker.registered_by(),
                  absl::StrJoin(labels, ",", absl::PairFormatter("="))});
  }
  return table.Render();
}

std::string FormatEvents(const v1::ListSearchEventsResponse& response) {
  std::string out;
  for (const auto& event : response.events()) {
    absl::StrAppend(&out, google::protobuf::util::TimeUtil::ToString(event.time()), "  ",
                    event.text(), "\n");
  }
  if (!response.next_page_token().empty()) {
    absl::StrAppend(&out, "(more: --page_token=", response.next_page_token(), ")\n");
  }
  return out;
}

}  // namespace paratune
