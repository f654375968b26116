#include "cli/report.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/human_time.h"
#include "cli/progress_line.h"
#include "cli/table.h"
#include "cli/text_width.h"
#include "convert/result_source.h"
#include "convert/search_progress.h"
#include "convert/search_state.h"
#include "convert/search_text.h"
#include "convert/spec_convert.h"
#include "convert/worker_kind.h"
#include "google/protobuf/util/time_util.h"

namespace paratune {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string GiB(int64_t bytes) { return absl::StrFormat("%.2f", bytes / kGiB); }

std::string Percent(double fraction) { return absl::StrFormat("%.1f%%", 100.0 * fraction); }

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

absl::Time ToTime(const google::protobuf::Timestamp& timestamp) {
  return absl::FromUnixSeconds(timestamp.seconds()) + absl::Nanoseconds(timestamp.nanos());
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

// "; 2 out of memory, 1 timeout" from failed_by_outcome, in outcome order; "" when none.
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
  return parts.empty() ? "" : absl::StrCat("; ", absl::StrJoin(parts, ", "));
}

// "the 1978 TFLOP/s dense fp8 peak": the peak the estimate's MFU is computed against
// (PerformanceEstimate.mfu_peak_tflops and mfu_peak_precision); "the dense peak" from a
// server that does not report it.
std::string MfuPeakName(const v1::PerformanceEstimate& perf) {
  if (perf.mfu_peak_tflops() <= 0) return "the dense peak";
  return absl::StrFormat(
      "the %.0f TFLOP/s dense %s peak", perf.mfu_peak_tflops(),
      perf.mfu_peak_precision().empty() ? std::string("tensor-core") : perf.mfu_peak_precision());
}

}  // namespace

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
  // Mixture-of-experts models only, a dense model's report stays as it was; shown at 0 where
  // the overlaps hide all of it (expert parallelism with nothing exposed).
  if (perf.ep_communication_seconds() > 0 || config.expert_parallel() > 1) {
    timing.AddRow(
        {"  EP communication (exposed)", absl::StrFormat("%.3f", perf.ep_communication_seconds())});
  }
  timing.AddRow(
      {"  DP communication (exposed)", absl::StrFormat("%.3f", perf.dp_communication_seconds())});
  timing.AddRow(
      {"  PP communication (exposed)", absl::StrFormat("%.3f", perf.pp_communication_seconds())});
  timing.AddRow({"  optimizer step", absl::StrFormat("%.3f", perf.optimizer_seconds())});
  absl::StrAppend(&out, timing.Render());
  absl::StrAppendFormat(&out,
                        "throughput %.0f tokens/s, %.1f TFLOP/s per GPU (+- %s, one sigma), MFU "
                        "%s of %s (%.3g model FLOPs per step)\n",
                        perf.tokens_per_second(), perf.model_tflops_per_gpu(),
                        Percent(perf.relative_error()), Percent(perf.mfu()), MfuPeakName(perf),
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

namespace {

// The flags of plan and submit that make `advice`'s change.
std::string AdviceFlags(const v1::PlanAdvice& advice) {
  switch (advice.kind()) {
    case v1::ADVICE_RECOMPUTE: {
      std::vector<std::string> modes;
      for (int mode : advice.recompute_modes()) {
        modes.push_back(RecomputeModeName(static_cast<v1::Recompute>(mode)));
      }
      return absl::StrCat("--recompute_modes=", absl::StrJoin(modes, ","));
    }
    case v1::ADVICE_NODES:
      return absl::StrCat("--nodes=", advice.num_nodes());
    case v1::ADVICE_GPU_TYPE:
      return absl::StrCat("--gpu=", advice.gpu_type());
    case v1::ADVICE_FP8_PARAMETERS:
      return "--fp8 --fp8_param_gather";
    case v1::ADVICE_SEQUENCE_LENGTH:
      return absl::StrCat("--seq_len=", advice.seq_len());
    case v1::ADVICE_MICRO_BATCH_SIZES:
      return absl::StrCat("--micro_batches=", absl::StrJoin(advice.micro_batch_sizes(), ","));
    default:
      return "";
  }
}

}  // namespace

std::string FormatPlanAdvice(const v1::PlanResponse& plan) {
  std::string out;
  if (plan.recompute_added()) {
    out =
        "Nothing fits as requested, without activation recompute: this plan, like a search "
        "of the same flags, also searches selective and full recompute (--recompute_modes=none "
        "keeps it to none).\n";
  }
  if (plan.advice().empty()) return out.empty() ? out : absl::StrCat(out, "\n");
  Table changes({{"change", false}, {"flags", false}});
  for (const v1::PlanAdvice& advice : plan.advice()) {
    changes.AddRow({DescribePlanAdvice(advice), AdviceFlags(advice)});
  }
  absl::StrAppend(&out,
                  plan.recompute_added()
                      ? "Each of these changes to the request alone gives candidates (the "
                        "first is what this plan did):\n"
                      : "Nothing fits. Each of these changes alone gives candidates:\n",
                  changes.Render(), "\n");
  return out;
}

std::string FormatPlanCandidates(const v1::PlanResponse& plan) {
  const auto seconds = [](double value) { return absl::StrFormat("%.2f", value); };
  // The EP column only where a candidate has exposed expert-parallel communication (a
  // mixture-of-experts model): a dense model's table stays as it was.
  bool any_ep = false;
  for (const v1::Candidate& c : plan.candidates()) {
    any_ep = any_ep || c.predicted().ep_communication_seconds() > 0;
  }
  std::vector<Table::Column> columns = {
      {"#", true},        {"config", false},     {"mem GiB", true}, {"mem %", true},
      {"verdict", false}, {"TFLOP/s/GPU", true}, {"+-", true},      {"MFU", true},
      {"step s", true},   {"compute", true},     {"bubble", true},  {"TP", true},
      {"CP", true}};
  if (any_ep) columns.push_back({"EP", true});
  for (const char* name : {"DP", "PP", "optim"}) columns.push_back({name, true});
  Table candidates(std::move(columns));
  for (int i = 0; i < plan.candidates_size(); ++i) {
    const v1::Candidate& c = plan.candidates(i);
    const v1::PerformanceEstimate& p = c.predicted();
    std::vector<std::string> row = {absl::StrCat(i + 1),
                                    DescribeConfig(c.config()),
                                    GiB(c.memory().peak_bytes()),
                                    Percent(c.memory().fraction_of_capacity()),
                                    VerdictName(c.memory().verdict()),
                                    absl::StrFormat("%.1f", p.model_tflops_per_gpu()),
                                    Percent(p.relative_error()),
                                    Percent(p.mfu()),
                                    seconds(p.step_time_seconds()),
                                    seconds(p.compute_seconds()),
                                    seconds(p.pipeline_bubble_seconds()),
                                    seconds(p.tp_communication_seconds()),
                                    seconds(p.cp_communication_seconds())};
    if (any_ep) row.push_back(seconds(p.ep_communication_seconds()));
    for (double value :
         {p.dp_communication_seconds(), p.pp_communication_seconds(), p.optimizer_seconds()}) {
      row.push_back(seconds(value));
    }
    candidates.AddRow(std::move(row));
  }
  // Every candidate of a plan trains in the same precision on the same GPU: one MFU peak.
  const std::string mfu_peak =
      plan.candidates_size() > 0 ? MfuPeakName(plan.candidates(0).predicted()) : "the dense peak";
  std::string out = absl::StrCat(
      "Candidates in predicted order (TFLOP/s per GPU +- one-sigma relative error; MFU of ",
      mfu_peak, "; step time and its exposed parts in seconds)\n", candidates.Render());
  if (plan.candidates_size() < plan.counts().memory_safe()) {
    absl::StrAppendFormat(&out, "(%d of %d candidates shown; --limit=0 shows all)\n",
                          plan.candidates_size(), plan.counts().memory_safe());
  }
  return out;
}

SourceMark SourceMarkOf(absl::string_view source) {
  if (source == "simulated") {
    return {" (sim)",
            "(sim) = SIMULATED by the sim backend: the performance model plus seeded noise, not a "
            "GPU measurement.",
            "(sim) = simulated"};
  }
  if (source == "replayed") {
    return {" (replay)",
            "(replay) = a published measurement replayed by the replay backend, not run by this "
            "search.",
            "(replay) = a published measurement replayed"};
  }
  if (source == "extrapolated") {
    return {" (extrap)",
            "(extrap) = the full step extrapolated from short steps measured on GPUs "
            "(docs/short_probes.md).",
            "(extrap) = extrapolated from short steps"};
  }
  return {};
}

namespace {

// "412.3 (sim)": an OK result's TFLOP/s per GPU, marked unless measured (SourceMarkOf).
std::string MeasuredTflops(const v1::ProbeResult& result) {
  return absl::StrCat(absl::StrFormat("%.1f", result.model_tflops_per_gpu()),
                      SourceMarkOf(ResultSource(result)).mark);
}

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

// The result column: the outcome of a probed candidate, else its state; a queued one that no
// live workers can host "waits" (its reason goes below the table); a leader probed again
// longer is "confirming".
std::string ResultCell(const v1::Candidate& c) {
  if (c.state() == v1::CANDIDATE_PROBED) return DescribeOutcome(c.probe_result().outcome());
  if (c.state() == v1::CANDIDATE_QUEUED && !c.waiting_reason().empty()) return "waiting";
  if (c.has_screening_result()) return "confirming";
  return CandidateStateName(c.state());
}

}  // namespace

CandidateTable RankedCandidates(const v1::Search& search, int max_rows) {
  CandidateTable out{Table({{"rank", true},
                            {"config", false, /*cut_step=*/6, /*min_width=*/12},
                            {"mem GiB est/cal/meas", true, 0, 0, /*drop_step=*/1},
                            {"mem %", true, 0, 0, /*drop_step=*/4},
                            {"pred TFLOP/s/GPU", true, 0, 0, /*drop_step=*/5},
                            {"probed TFLOP/s/GPU", true},
                            {"step s", true, 0, 0, /*drop_step=*/3},
                            {"result", false, /*cut_step=*/2, /*min_width=*/10, /*drop_step=*/7}})};
  int rank = 0;
  for (const auto& c : search.candidates()) {
    if (max_rows > 0 && out.table.rows() >= max_rows) break;
    // Only probed candidates have a rank (the server's order); a leader being confirmed shows
    // its first measurement, unranked.
    const bool ok = c.state() == v1::CANDIDATE_PROBED && c.probe_result().outcome() == v1::PROBE_OK;
    const v1::ProbeResult* latest = LatestResult(c);
    std::string probed = "-";
    std::string step = "-";
    if (latest != nullptr && latest->outcome() == v1::PROBE_OK) {
      out.sources.insert(ResultSource(*latest));
      probed = MeasuredTflops(*latest);
      step = absl::StrFormat("%.3f", latest->mean_step_time_seconds());
    }
    // The estimate's verdict beside its share, so that RISKY probes stand out.
    out.table.AddRow({ok ? absl::StrCat(++rank) : "-", DescribeConfig(c.config()), MemoryCell(c),
                      absl::StrCat(Percent(c.memory().fraction_of_capacity()), " ",
                                   VerdictName(c.memory().verdict())),
                      absl::StrFormat("%.1f", c.predicted().model_tflops_per_gpu()), probed, step,
                      ResultCell(c)});
  }
  return out;
}

std::string FormatSearch(const v1::Search& search) {
  const v1::SearchSpec& spec = search.spec();
  const std::string backend = WorkerKindOf(spec).backend;
  std::string out = absl::StrFormat(
      "%s%s\n  model %s, %s, global batch %d, sequence %d\n  policy %s, backend %s\n"
      "  state %s%s\n",
      search.name(), search.display_name().empty() ? "" : " (" + search.display_name() + ")",
      ModelName(spec.model()), ClusterName(spec.cluster()), spec.training().global_batch_size(),
      spec.training().seq_len(), PolicyName(spec.policy()), backend,
      v1::SearchState_Name(search.state()),
      // Empty on a server without tokens: there are no principals then.
      search.creator().empty() ? "" : absl::StrCat(", created by ", search.creator()));
  const v1::SearchCounts& counts = search.counts();
  absl::StrAppendFormat(&out, "  enumerated %d, valid %d, candidates %s\n  %s\n",
                        counts.enumerated(), counts.valid(),
                        DescribeMemoryEligible(counts, ProbesRiskyConfigurations(spec.space())),
                        DescribeProgress(search.progress()));
  const bool simulated = backend == "sim";
  if (counts.probed() > 0 || counts.gpu_seconds() > 0) {
    // Probes, not candidates: a confirmation is a second probe of a candidate. A sim's
    // GPU-hours are what its probes would cost on real GPUs (docs/short_probes.md).
    absl::StrAppendFormat(&out, "  %d probes (%d confirmations%s), %.2f GPU-hours%s\n",
                          counts.probed(), counts.confirmations(), FailureBreakdown(counts),
                          counts.gpu_seconds() / 3600,
                          simulated ? " (simulated: the real-equivalent cost)" : "");
  }
  if (counts.projected_remaining_gpu_seconds() > 0) {
    absl::StrAppendFormat(&out, "  ~%.2f GPU-hours, ~%.2f h left (projected from predictions)\n",
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

  const CandidateTable table = RankedCandidates(search, 0);
  absl::StrAppend(&out, "\n", table.table.Render());
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
  for (const std::string& source : table.sources) {
    const SourceMark mark = SourceMarkOf(source);
    if (!mark.mark.empty()) absl::StrAppend(&out, mark.legend, "\n");
  }
  return out;
}

std::string FormatSearchList(const v1::ListSearchesResponse& response, absl::Time now,
                             size_t width) {
  Table table({{"search", false},
               {"name", false, /*cut_step=*/4, /*min_width=*/8, /*drop_step=*/6},
               {"state", false},
               {"probed", true},
               {"best config", false, /*cut_step=*/7, /*min_width=*/12},
               {"TFLOP/s/GPU", true},
               {"created", true, 0, 0, /*drop_step=*/5},
               {"ran", true, 0, 0, /*drop_step=*/2},
               {"stop reason", false, /*cut_step=*/1, /*min_width=*/20, /*drop_step=*/3}});
  // Why each failed search failed, whole, below the table, whatever the width leaves of the
  // stop reason column; and why a search's candidates wait, which only its progress says here.
  std::string notes;
  for (const auto& search : response.searches()) {
    const v1::SearchProgress& progress = search.progress();
    const v1::Candidate* best = search.has_best_candidate() ? &search.best_candidate() : nullptr;
    const absl::Time created = ToTime(search.create_time());
    // An ended search ran until its last update; a running one runs on.
    const absl::Time ended = SearchEnded(search.state()) ? ToTime(search.update_time()) : now;
    table.AddRow(
        {search.name(), search.display_name().empty() ? "-" : search.display_name(),
         v1::SearchState_Name(search.state()),
         absl::StrFormat("%d/%d", progress.probed(), progress.candidates()),
         best == nullptr ? "-" : DescribeConfigApart(best->config(), search.spec().space()),
         best == nullptr ? "-" : MeasuredTflops(*LatestResult(*best)),
         search.has_create_time() ? TimeAgo(created, now) : "-",
         search.has_create_time() ? ShortDuration(ended - created) : "-",
         search.stop_reason().empty() ? "-" : CutToWidth(search.stop_reason(), 48)});
    std::string note;
    if (search.state() == v1::FAILED) {
      note = absl::StrCat(
          search.name(),
          " failed: ", search.stop_reason().empty() ? "no reason recorded" : search.stop_reason());
    } else if (!progress.waiting_reason().empty()) {
      note = absl::StrCat(search.name(), " waiting: ", progress.waiting_reason());
    }
    // Wrapped, not cut: the reason is the point.
    if (!note.empty()) {
      absl::StrAppend(&notes, width > 0 ? WrapToWidth(note, width, 2) : note + "\n");
    }
  }
  std::string out = width > 0 ? table.RenderFitted(width) : table.Render();
  absl::StrAppend(&out, notes);
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
