// Writes the golden step of each spec of GoldenSpecs() into the directory given, as
// DescribeSteps renders it (a line per op, repeated layers folded): `bazel run
// //worker/probe:write_step_plan_goldens -- $PWD/worker/probe/testdata` regenerates
// worker/probe/testdata/*.steps after a deliberate change of what the probe does (docs/probe.md,
// "The step plan"); review the diff.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "worker/probe/step_plan.h"
#include "worker/probe/step_plan_specs.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: write_step_plan_goldens DIRECTORY\n";
    return 2;
  }
  for (const paratune::GoldenSpec& golden : paratune::GoldenSpecs()) {
    absl::StatusOr<paratune::ProbeSpec> spec = paratune::PlanSpecOf(golden.options);
    if (!spec.ok()) {
      std::cerr << golden.name << ": " << spec.status() << "\n";
      return 1;
    }
    const paratune::FootprintPlan footprint =
        paratune::FootprintPlan::OfStage(*spec, spec->layout().CoordinatesOf(golden.rank).pp);
    absl::StatusOr<paratune::StepPlan> plan =
        paratune::StepPlanOf(*spec, footprint, golden.rank, spec->micro_batches());
    if (!plan.ok()) {
      std::cerr << golden.name << ": " << plan.status() << "\n";
      return 1;
    }
    const std::string path = std::string(argv[1]) + "/" + golden.name + ".steps";
    std::ofstream out(path);
    const std::vector<std::string> lines = paratune::DescribeSteps(*plan);
    for (const std::string& line : lines) out << line << "\n";
    if (!out) {
      std::cerr << "cannot write " << path << "\n";
      return 1;
    }
    std::cout << path << ": " << plan->ops.size() << " ops in " << lines.size() << " lines\n";
  }
  return 0;
}
