#include "cli/cost_report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/table.h"
#include "common/status_macros.h"
#include "convert/cost_projection.h"

namespace paratune {
namespace {

// Three significant figures or so, without exponents: 0.0123, 4.56, 45.6, 456.
std::string Figure(double value) {
  if (value >= 100) return absl::StrFormat("%.0f", value);
  if (value >= 10) return absl::StrFormat("%.1f", value);
  if (value >= 0.01 || value == 0) return absl::StrFormat("%.2f", value);
  return absl::StrFormat("%.4f", value);
}

// "low" when both print the same, else "low-high".
std::string Range(const std::string& low, const std::string& high) {
  return low == high ? low : absl::StrCat(low, "-", high);
}

std::string Seconds(double seconds) { return absl::StrFormat("%.0f", seconds); }

std::string PolicyLabel(v1::SearchPolicy policy, const SearchCostOptions& options) {
  switch (policy) {
    case v1::TOP_K:
      return absl::StrCat("TOP_K ", options.top_k);
    case v1::EXHAUSTIVE:
      return "EXHAUSTIVE";
    default:
      return "ADAPTIVE";
  }
}

const RunSetCost& PolicyCost(v1::SearchPolicy policy, const SearchCostProjection& projection) {
  switch (policy) {
    case v1::TOP_K:
      return projection.top_k;
    case v1::EXHAUSTIVE:
      return projection.exhaustive;
    default:
      return projection.adaptive;
  }
}

// A row for one set of runs: count, mean and longest seconds, GPU-hours, wall hours.
std::vector<std::string> Row(std::string label, const RunSetCost& cost, int64_t gpus) {
  return {std::move(label),
          absl::StrCat(cost.runs),
          Seconds(MeanSeconds(cost)),
          Seconds(cost.longest_seconds),
          Figure(GpuHours(cost, gpus)),
          Figure(WallHours(cost))};
}

// ADAPTIVE's row: each figure from its expected probes to those plus every confirmation.
std::vector<std::string> AdaptiveRow(const SearchCostProjection& projection) {
  const RunSetCost& low = projection.adaptive;
  const RunSetCost high = Combine(low, projection.adaptive_confirmations);
  const int64_t gpus = projection.gpus;
  return {"ADAPTIVE",
          Range(absl::StrCat(low.runs), absl::StrCat(high.runs)),
          Seconds(MeanSeconds(low)),
          Range(Seconds(low.longest_seconds), Seconds(high.longest_seconds)),
          Range(Figure(GpuHours(low, gpus)), Figure(GpuHours(high, gpus))),
          Range(Figure(WallHours(low)), Figure(WallHours(high)))};
}

std::string Header(const SearchCostOptions& options, const ClusterSpec& cluster) {
  const ProbeSteps& steps = options.steps;
  std::string how;
  if (!steps.short_steps) {
    how = absl::StrFormat(
        "starts up in %g s, then runs %d warm-up and %d timed steps of the full global "
        "batch\n(the search's backend answers with full steps)",
        steps.startup_seconds, steps.warmup_steps, steps.timed_steps);
  } else if (steps.launch_per_count) {
    how = absl::StrFormat(
        "launches its template at 2 pp and at 4 pp micro-batches, each launch starting up in "
        "%g s,\nthen running %d warm-up and %d timed steps (one launch of full steps where a "
        "step has no more\nthan 4 pp micro-batches, or where it takes less time than two "
        "launches)",
        steps.startup_seconds, steps.warmup_steps, steps.timed_steps);
  } else {
    how = absl::StrFormat(
        "starts up in %g s, then runs %d warm-up and %d timed steps at 2 pp and 4 pp "
        "micro-batches\n(full steps where a step has no more than 4 pp micro-batches)",
        steps.startup_seconds, steps.warmup_steps, steps.timed_steps);
  }
  return absl::StrFormat(
      "Projected cost: probes one after another, each holding all %d GPUs (%d x %d %s); a "
      "probe\n%s\n",
      cluster.world_size(), cluster.num_nodes(), cluster.gpus_per_node(),
      cluster.gpu().name.empty() ? "custom GPU" : cluster.gpu().name, how);
}

std::string BestNote(const SearchCostProjection& projection) {
  return absl::StrFormat(
      "The best predicted candidate: full step %s s; its probe %s s (%s s with full steps)\n",
      Figure(projection.best_step_seconds), Seconds(projection.best_probe_seconds),
      Seconds(projection.best_full_step_probe_seconds));
}

std::string AdaptiveNote(const SearchCostProjection& projection, const SearchCostOptions& options,
                         double relative_error) {
  std::string note = absl::StrFormat(
      "ADAPTIVE: %d probes if every measurement equals its prediction (a projection): the "
      "candidates\nwhose optimistic prediction, x exp(%g sigma x %.1f%% model error), beats "
      "the best prediction by\nmore than %g%%, and at least the first %d, started at once. A "
      "real search probes more or fewer.\n",
      projection.adaptive.runs, options.confidence_sigmas, 100 * relative_error,
      100 * options.tolerance, options.max_in_flight);
  if (projection.adaptive_confirmations.runs > 0) {
    absl::StrAppendFormat(&note, "The upper figures add %d confirmations of %d timed steps.\n",
                          projection.adaptive_confirmations.runs,
                          options.steps.timed_steps * options.confirmation_steps_factor);
  }
  return note;
}

std::string FullJobNote(const SearchCostOptions& options) {
  return absl::StrFormat(
      "One full job per candidate: each trained as NVIDIA NeMo's AutoConfigurator runs it, %d "
      "steps\nunder a %g-minute job limit (its max_steps_per_run and max_minutes_per_run "
      "defaults), with the\nsame %g s start-up.\n",
      options.full_job_steps, options.full_job_limit_seconds / 60, options.steps.startup_seconds);
}

// "ADAPTIVE costs 3.1%-4.0% of ..." or "" when the full jobs cost nothing (no candidates).
std::string ShareNote(const SearchCostProjection& projection) {
  const double full = projection.full_jobs.total_seconds;
  if (!(full > 0)) return "";
  const auto percent = [&](const RunSetCost& cost) {
    return absl::StrFormat("%.1f%%", 100 * cost.total_seconds / full);
  };
  return absl::StrCat(
      "ADAPTIVE costs ",
      Range(percent(projection.adaptive),
            percent(Combine(projection.adaptive, projection.adaptive_confirmations))),
      " of the GPU-hours of one full job per candidate.\n");
}

}  // namespace

std::string FormatSearchCost(const SearchCostProjection& projection,
                             const SearchCostOptions& options, const ClusterSpec& cluster,
                             double relative_error, const std::vector<v1::SearchPolicy>& policies) {
  if (projection.exhaustive.runs == 0) {
    return "Projected cost: none, the plan has no candidate to probe.\n";
  }
  Table table({{"search", false},
               {"probes", true},
               {"s each", true},
               {"longest s", true},
               {"GPU-hours", true},
               {"wall h", true}});
  bool adaptive = false;
  for (v1::SearchPolicy policy : policies) {
    if (policy == v1::TOP_K || policy == v1::EXHAUSTIVE) {
      table.AddRow(
          Row(PolicyLabel(policy, options), PolicyCost(policy, projection), projection.gpus));
    } else {
      table.AddRow(AdaptiveRow(projection));
      adaptive = true;
    }
  }
  table.AddRow(Row("one full job per candidate", projection.full_jobs, projection.gpus));
  std::string out = absl::StrCat(Header(options, cluster), BestNote(projection), table.Render());
  if (adaptive) {
    absl::StrAppend(&out, AdaptiveNote(projection, options, relative_error));
  }
  absl::StrAppend(&out, FullJobNote(options));
  if (adaptive) absl::StrAppend(&out, ShareNote(projection));
  return out;
}

absl::StatusOr<std::string> ProjectAndFormatSearchCost(
    const DetailedPlan& detailed, const v1::SearchSpec& spec,
    const std::vector<v1::SearchPolicy>& policies) {
  const ClusterSpec& cluster = detailed.spec.cluster;
  PT_ASSIGN_OR_RETURN(
      const SearchCostProjection projection,
      ProjectPlanCost(detailed.plan, detailed.spec.training, cluster.world_size(), spec));
  return FormatSearchCost(projection, SearchCostOptionsFromSpec(spec), cluster,
                          detailed.params.relative_error, policies);
}

}  // namespace paratune
