// replay_study: ADAPTIVE against EXHAUSTIVE on the held-out measurements (issue 4's study).
// For every (system, sequence, GPU count) group of data/measured/llama31_8b_4d_abci_tsubame.csv
// it creates one search of each policy on a running paratune-server whose workers offer the
// replay backend over that table, waits for both, and writes a markdown table: the probes
// each used, the best each found, and ADAPTIVE's regret against EXHAUSTIVE's best and against
// the best the table holds. scripts/replay_study.sh starts the server and workers and runs it.
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "proto/autotuner_service.grpc.pb.h"
#include "tools/measured_runs.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "paratune-server, host:port.");
ABSL_FLAG(std::string, data_dir, "data/measured", "Directory of the measured tables.");
ABSL_FLAG(std::string, out, "", "Markdown file to write; stdout when empty.");
ABSL_FLAG(absl::Duration, timeout, absl::Minutes(20), "Longest wait for all searches.");

namespace paratune {
namespace {

constexpr char kHeldOut[] = "llama31_8b_4d_abci_tsubame.csv";
// The target: ADAPTIVE within 2% of the best with at most a third of the probes.
constexpr double kRegretTarget = 0.02;
constexpr double kProbeFractionTarget = 1.0 / 3;

absl::Status FromGrpc(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

std::unique_ptr<grpc::ClientContext> Context() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  return context;
}

struct Group {
  std::string name;
  const MeasuredRun* example = nullptr;
  double best_measured = 0;  // over the group's completed rows
  int rows = 0;
};

v1::CreateSearchRequest SearchOf(const Group& group, v1::SearchPolicy policy) {
  const MeasuredRun& run = *group.example;
  v1::CreateSearchRequest request;
  request.set_display_name(absl::StrCat(group.name, " ", v1::SearchPolicy_Name(policy)));
  v1::SearchSpec& spec = *request.mutable_spec();
  spec.mutable_model()->set_preset(run.model_name);
  spec.mutable_training()->set_global_batch_size(run.training.global_batch_size());
  spec.mutable_training()->set_seq_len(run.training.seq_len());
  spec.mutable_cluster()->mutable_gpu()->set_type(run.cluster.gpu().name);
  spec.mutable_cluster()->set_num_nodes(run.cluster.num_nodes());
  spec.mutable_cluster()->set_gpus_per_node(run.cluster.gpus_per_node());
  spec.set_policy(policy);
  spec.mutable_probe()->set_backend("replay");
  return request;
}

double BestOk(const v1::Search& search) {
  double best = 0;
  for (const v1::Candidate& candidate : search.candidates()) {
    if (candidate.probe_result().outcome() == v1::PROBE_OK) {
      best = std::max(best, candidate.probe_result().model_tflops_per_gpu());
    }
  }
  return best;
}

absl::StatusOr<std::string> Run() {
  const std::string data_dir = absl::GetFlag(FLAGS_data_dir);
  PT_ASSIGN_OR_RETURN(const std::vector<MeasuredRun> runs,
                      LoadMeasuredRuns(data_dir, MeasuredDataset{kHeldOut, false}));
  std::map<std::string, Group> groups;
  for (const MeasuredRun& run : runs) {
    Group& group = groups[run.group];
    group.name = run.group;
    if (group.example == nullptr) group.example = &run;
    ++group.rows;
    if (run.completed) group.best_measured = std::max(group.best_measured, MeasuredTflopsPerGpu(run));
  }
  std::unique_ptr<v1::Autotuner::Stub> stub = v1::Autotuner::NewStub(
      grpc::CreateChannel(absl::GetFlag(FLAGS_server), grpc::InsecureChannelCredentials()));

  // Every search at once: the scheduler shares the workers between them.
  std::map<std::string, std::pair<std::string, std::string>> names;  // group -> adaptive, exhaustive
  for (const auto& [name, group] : groups) {
    for (v1::SearchPolicy policy : {v1::ADAPTIVE, v1::EXHAUSTIVE}) {
      v1::Search created;
      PT_RETURN_IF_ERROR(FromGrpc(stub->CreateSearch(Context().get(), SearchOf(group, policy),
                                                     &created)));
      (policy == v1::ADAPTIVE ? names[name].first : names[name].second) = created.name();
    }
  }
  const absl::Time give_up = absl::Now() + absl::GetFlag(FLAGS_timeout);
  auto finished = [&](const std::string& search_name) -> absl::StatusOr<v1::Search> {
    while (true) {
      v1::GetSearchRequest get;
      get.set_name(search_name);
      v1::Search search;
      PT_RETURN_IF_ERROR(FromGrpc(stub->GetSearch(Context().get(), get, &search)));
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
      "| group | rows | memory-safe candidates | EXHAUSTIVE probes | ADAPTIVE probes (not "
      "measured) | fraction | EXHAUSTIVE best | ADAPTIVE best | regret | best in the table | "
      "target met |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
  int met = 0, scenarios = 0, adaptive_probes = 0, exhaustive_probes = 0;
  for (const auto& [name, group] : groups) {
    PT_ASSIGN_OR_RETURN(const v1::Search adaptive, finished(names[name].first));
    PT_ASSIGN_OR_RETURN(const v1::Search exhaustive, finished(names[name].second));
    const double exhaustive_best = BestOk(exhaustive);
    const double adaptive_best = BestOk(adaptive);
    if (exhaustive_best <= 0) {
      absl::StrAppend(&out, "| ", name, " | ", group.rows, " | ",
                      exhaustive.counts().memory_safe(), " | ", exhaustive.counts().probed(),
                      " | ", adaptive.counts().probed(),
                      " | - | - | - | - | ", absl::StrFormat("%.1f", group.best_measured),
                      " | no memory-safe candidate was measured |\n");
      continue;
    }
    ++scenarios;
    const double regret = 1 - adaptive_best / exhaustive_best;
    const double fraction = static_cast<double>(adaptive.counts().probed()) /
                            static_cast<double>(exhaustive.counts().probed());
    const bool ok = regret <= kRegretTarget && fraction <= kProbeFractionTarget;
    const auto not_measured = adaptive.counts().failed_by_outcome().find("PROBE_NOT_MEASURED");
    met += ok;
    adaptive_probes += adaptive.counts().probed();
    exhaustive_probes += exhaustive.counts().probed();
    absl::StrAppendFormat(&out,
                          "| %s | %d | %d | %d | %d (%d) | %.2f | %.1f | %.1f | %.1f%% | %.1f | %s |\n",
                          name, group.rows, exhaustive.counts().memory_safe(),
                          exhaustive.counts().probed(), adaptive.counts().probed(),
                          not_measured == adaptive.counts().failed_by_outcome().end()
                              ? 0
                              : not_measured->second,
                          fraction,
                          exhaustive_best, adaptive_best, 100 * regret, group.best_measured,
                          ok ? "yes" : (regret > kRegretTarget ? "no: regret" : "no: probes"));
  }
  absl::StrAppendFormat(&out,
                        "\n%d of %d scenarios meet the target (regret <= %.0f%% with at most a "
                        "third of EXHAUSTIVE's probes); ADAPTIVE used %d probes in all, "
                        "EXHAUSTIVE %d (%.0f%%).\n",
                        met, scenarios, 100 * kRegretTarget, adaptive_probes, exhaustive_probes,
                        exhaustive_probes > 0 ? 100.0 * adaptive_probes / exhaustive_probes : 0);
  return out;
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "replay_study: ADAPTIVE vs EXHAUSTIVE replay searches over the held-out table, against a "
      "running paratune-server with replay workers (see scripts/replay_study.sh).");
  absl::ParseCommandLine(argc, argv);
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
