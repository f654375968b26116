// replay_study: what a user gets from each search policy on the held-out measurements (issues
// 4 and 12). For every (system, sequence, GPU count) group of
// data/measured/llama31_8b_4d_abci_tsubame.csv it creates three searches on a running
// paratune-server whose workers offer the replay backend over that table: ADAPTIVE with the
// default settings (memory policy MEASURE_RISKY), ADAPTIVE with SAFE_ONLY (the 80% rule), and
// EXHAUSTIVE with MEASURE_RISKY. It waits for all of them and writes a markdown table: the
// probes each used, its failed probes, the modelled GPU-hours of its probes, the best it found
// and its regret against the best run the table holds for the group.
// scripts/replay_study.sh starts the server and workers and runs it.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/command_line.h"
#include "common/grpc_client.h"
#include "common/grpc_status.h"
#include "common/status_macros.h"
#include "estimator/memory_model.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "measured/measured_runs.h"
#include "proto/autotuner_service.grpc.pb.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "paratune-server, host:port.");
ABSL_FLAG(std::string, data_dir, "data/measured", "Directory of the measured tables.");
ABSL_FLAG(std::string, out, "", "Markdown file to write; stdout when empty.");
ABSL_FLAG(absl::Duration, timeout, absl::Minutes(20), "Longest wait for all searches.");

namespace paratune {
namespace {

constexpr char kHeldOut[] = "llama31_8b_4d_abci_tsubame.csv";
// Issue 12's target for the default: regret <= 2% against the best run in the table wherever
// that run is a candidate, with at most a third of EXHAUSTIVE's probes over SAFE and RISKY.
constexpr double kRegretTarget = 0.02;
constexpr double kProbeFractionTarget = 1.0 / 3;

std::unique_ptr<grpc::ClientContext> Context() { return ContextWithTimeout(absl::Seconds(30)); }

// The searches run for every group, in the order they are shown.
struct Variant {
  const char* label;
  v1::SearchPolicy policy;
  v1::MemoryPolicy memory_policy;  // UNSPECIFIED: the default
};
constexpr Variant kVariants[] = {
    {"ADAPTIVE, default", v1::ADAPTIVE, v1::MEMORY_POLICY_UNSPECIFIED},
    {"ADAPTIVE, SAFE_ONLY", v1::ADAPTIVE, v1::SAFE_ONLY},
    {"EXHAUSTIVE, MEASURE_RISKY", v1::EXHAUSTIVE, v1::MEASURE_RISKY},
};
constexpr int kNumVariants = sizeof(kVariants) / sizeof(kVariants[0]);
constexpr int kDefault = 0;
constexpr int kExhaustive = 2;

struct Group {
  std::string name;
  const MeasuredRun* example = nullptr;
  const MeasuredRun* best = nullptr;  // the completed row with the most TFLOP/s per GPU
  double best_tflops = 0;
  int rows = 0;
  int64_t gpus = 0;
  std::string searches[kNumVariants];  // resource names
};

v1::CreateSearchRequest SearchOf(const Group& group, const Variant& variant) {
  const MeasuredRun& run = *group.example;
  v1::CreateSearchRequest request;
  request.set_display_name(absl::StrCat(group.name, " ", variant.label));
  v1::SearchSpec& spec = *request.mutable_spec();
  spec.mutable_model()->set_preset(run.model_name);
  spec.mutable_training()->set_global_batch_size(run.training.global_batch_size());
  spec.mutable_training()->set_seq_len(run.training.seq_len());
  spec.mutable_cluster()->mutable_gpu()->set_type(run.cluster.gpu().name);
  spec.mutable_cluster()->set_num_nodes(run.cluster.num_nodes());
  spec.mutable_cluster()->set_gpus_per_node(run.cluster.gpus_per_node());
  spec.set_policy(variant.policy);
  if (variant.memory_policy != v1::MEMORY_POLICY_UNSPECIFIED) {
    spec.mutable_space()->set_memory_policy(variant.memory_policy);
  }
  spec.mutable_probe()->set_backend("replay");
  return request;
}

// Whether a candidate is the table's run `run` (the replay backend's match: tables hold runs
// without interleaving or recompute).
bool IsRun(const v1::ParallelConfig& config, const MeasuredRun& run) {
  const ParallelDims& dims = run.config.dims();
  return config.data_parallel() == dims.dp && config.tensor_parallel() == dims.tp &&
         config.pipeline_parallel() == dims.pp && config.context_parallel() == dims.cp &&
         config.micro_batch_size() == dims.micro_batch &&
         std::max<int64_t>(config.virtual_pipeline(), 1) == dims.virtual_pipeline &&
         config.recompute() <= v1::RECOMPUTE_NONE && dims.recompute == Recompute::kNone;
}

int64_t Outcomes(const v1::Search& search, const char* outcome) {
  const auto it = search.counts().failed_by_outcome().find(outcome);
  return it == search.counts().failed_by_outcome().end() ? 0 : it->second;
}

bool Failed(v1::ProbeOutcome outcome) {
  return outcome == v1::PROBE_CRASH || outcome == v1::PROBE_OUT_OF_MEMORY ||
         outcome == v1::PROBE_TIMEOUT;
}

// What one search cost and found.
struct Summary {
  std::string state;  // empty when SUCCEEDED
  int64_t probes = 0;
  int64_t failed = 0;        // CRASH, OUT_OF_MEMORY, TIMEOUT
  int64_t not_measured = 0;  // asked the table for a run it does not hold
  double gpu_hours = 0;      // modelled: sum of wall_seconds x the group's GPUs
  double failed_gpu_hours = 0;
  double best = 0;  // TFLOP/s per GPU of the best OK probe
  double regret = 1;
};

Summary Summarize(const v1::Search& search, const Group& group) {
  Summary summary;
  if (search.state() != v1::SUCCEEDED) summary.state = v1::SearchState_Name(search.state());
  summary.probes = search.counts().probed();
  summary.failed = Outcomes(search, "PROBE_CRASH") + Outcomes(search, "PROBE_OUT_OF_MEMORY") +
                   Outcomes(search, "PROBE_TIMEOUT");
  summary.not_measured = Outcomes(search, "PROBE_NOT_MEASURED");
  int64_t results = 0;
  for (const v1::Candidate& candidate : search.candidates()) {
    for (const v1::ProbeResult* result :
         {&candidate.screening_result(), &candidate.probe_result()}) {
      if (result->outcome() == v1::PROBE_OUTCOME_UNSPECIFIED) continue;
      ++results;
      const double hours = result->wall_seconds() * static_cast<double>(group.gpus) / 3600;
      summary.gpu_hours += hours;
      if (Failed(result->outcome())) summary.failed_gpu_hours += hours;
      if (result->outcome() == v1::PROBE_OK) {
        summary.best = std::max(summary.best, result->model_tflops_per_gpu());
      }
    }
  }
  if (results != summary.probes) {
    std::fprintf(stderr,
                 "replay_study: %s (%s): %lld probe results in its candidates, counts.probed "
                 "%lld; GPU-hours are of the results it shows\n",
                 search.name().c_str(), search.display_name().c_str(),
                 static_cast<long long>(results), static_cast<long long>(summary.probes));
  }
  if (group.best_tflops > 0) summary.regret = 1 - summary.best / group.best_tflops;
  return summary;
}

// "495.9, RISKY" for the table's best run when EXHAUSTIVE over SAFE and RISKY had it as a
// candidate; why not otherwise. Sets `candidate`.
std::string TableBest(const Group& group, const v1::Search& exhaustive, bool& candidate) {
  candidate = false;
  if (group.best == nullptr) return "no completed run";
  for (const v1::Candidate& c : exhaustive.candidates()) {
    if (IsRun(c.config(), *group.best)) {
      candidate = true;
      return absl::StrFormat("%.1f, %s", group.best_tflops,
                             v1::MemoryVerdict_Name(c.memory().verdict()));
    }
  }
  const MemoryEstimate memory =
      EstimateMemory(group.best->model, group.best->training, group.best->cluster,
                     group.best->config, MemoryOptions());
  if (memory.verdict == MemoryVerdict::kOutOfMemory) {
    return absl::StrFormat("%.1f, not a candidate: estimated OUT_OF_MEMORY (%.0f%% of capacity)",
                           group.best_tflops, 100 * memory.fraction_of_capacity);
  }
  return absl::StrFormat("%.1f, not a candidate: %s is outside the search space", group.best_tflops,
                         group.best->config.ToString());
}

std::string Shown(const Summary& s, bool has_table_best) {
  const std::string best = s.best > 0 ? absl::StrFormat("%.1f", s.best) : std::string("none OK");
  const std::string regret =
      has_table_best ? absl::StrFormat("%.1f%%", 100 * s.regret) : std::string("-");
  return absl::StrFormat("%d | %d (%d) | %.2f (%.2f) | %s | %s", s.probes, s.failed, s.not_measured,
                         s.gpu_hours, s.failed_gpu_hours, best, regret);
}

struct Totals {
  int64_t probes = 0;
  int64_t failed = 0;
  int64_t not_measured = 0;
  double gpu_hours = 0;
  double failed_gpu_hours = 0;
  // Over the groups whose table's best is a candidate (the target's groups).
  int regret_met = 0;
  int64_t target_probes = 0;
  void Add(const Summary& s) {
    probes += s.probes;
    failed += s.failed;
    not_measured += s.not_measured;
    gpu_hours += s.gpu_hours;
    failed_gpu_hours += s.failed_gpu_hours;
  }
};

absl::StatusOr<std::string> Run() {
  const std::string data_dir = absl::GetFlag(FLAGS_data_dir);
  PT_ASSIGN_OR_RETURN(const std::vector<MeasuredRun> runs,
                      LoadMeasuredRuns(data_dir, MeasuredDataset{kHeldOut, false}));
  // Ordered by GPU type, sequence length and GPU count.
  std::map<std::tuple<std::string, int64_t, int64_t>, Group> groups;
  std::map<std::string, Group*> by_name;
  for (const MeasuredRun& run : runs) {
    Group*& found = by_name[run.group];
    if (found == nullptr) {
      const int64_t gpus = run.cluster.num_nodes() * run.cluster.gpus_per_node();
      found = &groups[{run.cluster.gpu().name, run.training.seq_len(), gpus}];
      found->name = run.group;
      found->example = &run;
      found->gpus = gpus;
    }
    Group& group = *found;
    ++group.rows;
    if (run.completed && MeasuredTflopsPerGpu(run) > group.best_tflops) {
      group.best_tflops = MeasuredTflopsPerGpu(run);
      group.best = &run;
    }
  }
  std::unique_ptr<v1::Autotuner::Stub> stub = v1::Autotuner::NewStub(
      grpc::CreateChannel(absl::GetFlag(FLAGS_server), grpc::InsecureChannelCredentials()));

  // Every search at once: the scheduler shares the workers between them.
  for (auto& [key, group] : groups) {
    for (int v = 0; v < kNumVariants; ++v) {
      v1::Search created;
      PT_RETURN_IF_ERROR(FromGrpcStatus(
          stub->CreateSearch(Context().get(), SearchOf(group, kVariants[v]), &created)));
      group.searches[v] = created.name();
    }
  }
  const absl::Time give_up = absl::Now() + absl::GetFlag(FLAGS_timeout);
  auto finished = [&](const std::string& search_name) -> absl::StatusOr<v1::Search> {
    while (true) {
      v1::GetSearchRequest get;
      get.set_name(search_name);
      v1::Search search;
      PT_RETURN_IF_ERROR(FromGrpcStatus(stub->GetSearch(Context().get(), get, &search)));
      if (search.state() == v1::SUCCEEDED || search.state() == v1::FAILED ||
          search.state() == v1::CANCELLED) {
        return search;
      }
      if (absl::Now() > give_up) {
        return absl::DeadlineExceededError(absl::StrCat(search_name, " did not end in time"));
      }
      absl::SleepFor(absl::Milliseconds(200));
    }
  };

  std::string out = absl::StrCat(
      "| group | best in the table (TFLOP/s per GPU, memory verdict) | search | probes | failed "
      "(not measured) | GPU-hours, modelled (of failed) | best found | regret | default "
      "meets regret <= 2% |\n"
      "|---|---|---|---:|---:|---:|---:|---:|---|\n");
  Totals totals[kNumVariants];
  int targets = 0;  // groups whose table's best is a candidate
  for (const auto& [key, group] : groups) {
    v1::Search searches[kNumVariants];
    Summary summaries[kNumVariants];
    for (int v = 0; v < kNumVariants; ++v) {
      PT_ASSIGN_OR_RETURN(searches[v], finished(group.searches[v]));
      summaries[v] = Summarize(searches[v], group);
      totals[v].Add(summaries[v]);
    }
    bool candidate = false;
    const std::string table_best = TableBest(group, searches[kExhaustive], candidate);
    if (candidate) {
      ++targets;
      for (int v = 0; v < kNumVariants; ++v) {
        totals[v].regret_met += summaries[v].regret <= kRegretTarget;
        totals[v].target_probes += summaries[v].probes;
      }
    }
    for (int v = 0; v < kNumVariants; ++v) {
      std::string met;
      if (v == kDefault) {
        met = !candidate ? "- (not a target)" : summaries[v].regret <= kRegretTarget ? "yes" : "no";
      }
      std::string label = kVariants[v].label;
      if (!summaries[v].state.empty()) absl::StrAppend(&label, " (", summaries[v].state, ")");
      absl::StrAppend(&out, "| ",
                      v == 0 ? absl::StrCat(group.name, " (", group.rows, " rows)") : "", " | ",
                      v == 0 ? table_best : "", " | ", label, " | ",
                      Shown(summaries[v], group.best != nullptr), " | ", met, " |\n");
    }
  }

  absl::StrAppend(&out,
                  "\n| search | groups with regret <= 2% | probes | failed probes | not measured "
                  "| GPU-hours, modelled | of them failed |\n"
                  "|---|---:|---:|---:|---:|---:|---:|\n");
  for (int v = 0; v < kNumVariants; ++v) {
    const Totals& t = totals[v];
    absl::StrAppendFormat(&out, "| %s | %d of %d | %d | %d | %d | %.1f | %.1f |\n",
                          kVariants[v].label, t.regret_met, targets, t.probes, t.failed,
                          t.not_measured, t.gpu_hours, t.failed_gpu_hours);
  }
  const Totals& d = totals[kDefault];
  const Totals& e = totals[kExhaustive];
  auto fraction = [](int64_t part, int64_t whole) {
    return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 1.0;
  };
  const double target_fraction = fraction(d.target_probes, e.target_probes);
  const bool met = d.regret_met == targets && target_fraction <= kProbeFractionTarget;
  absl::StrAppendFormat(
      &out,
      "\nIssue 12's target %s over the %d groups whose best run in the table is a candidate: "
      "with the default settings, regret <= %.0f%% in %d of them, and %d probes against "
      "EXHAUSTIVE's %d over SAFE and RISKY (%.0f%%; at most %.0f%% asked). Over all %d groups, "
      "with those where the table holds no completed run, %d probes against %d (%.0f%%).\n",
      met ? "met" : "not met", targets, 100 * kRegretTarget, d.regret_met, d.target_probes,
      e.target_probes, 100 * target_fraction, 100 * kProbeFractionTarget, groups.size(), d.probes,
      e.probes, 100 * fraction(d.probes, e.probes));
  return out;
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  const std::vector<char*> positional = paratune::ParseFlags(
      argc, argv,
      "ADAPTIVE (default and SAFE_ONLY) and EXHAUSTIVE replay searches over the "
      "held-out table, against a running paratune-server with replay workers (see "
      "scripts/replay_study.sh).",
      "tools/replay_study.cc");
  if (!paratune::NoPositionalArguments(positional, "replay_study")) return 2;
  absl::StatusOr<std::string> report = paratune::Run();
  if (!report.ok()) {
    std::fprintf(stderr, "replay_study: %s\n", report.status().ToString().c_str());
    return 1;
  }
  const std::string out = absl::GetFlag(FLAGS_out);
  if (out.empty()) {
    std::fputs(report->c_str(), stdout);
  } else {
    std::ofstream(out) << *report;
  }
  return 0;
}
