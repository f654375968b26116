#include "cli/fleet_check.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "convert/search_text.h"
#include "convert/worker_kind.h"

namespace paratune {

std::string NoWorkerCanHost(const v1::SearchSpec& spec, const v1::ListWorkersResponse& workers) {
  const WorkerKind kind = WorkerKindOf(spec);
  std::vector<const v1::Worker*> live;
  for (const v1::Worker& worker : workers.workers()) {
    if (worker.state() == v1::WORKER_LOST) continue;
    live.push_back(&worker);
    if (WorkerKindMismatch(worker, kind).empty() &&
        worker.gpus_size() >= spec.cluster().gpus_per_node()) {
      return "";
    }
  }
  return absl::StrCat("no live worker can host this search (", spec.cluster().gpus_per_node(),
                      " x ", kind.gpu_type.empty() ? "custom GPU" : kind.gpu_type,
                      " per node, backend ", kind.backend,
                      kind.command_template.empty() ? "" : " with template ", kind.command_template,
                      "); live workers: ", DescribeFleet(live));
}

}  // namespace paratune
