#include "cli/fleet_check.h"

#include <algorithm>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "convert/search_text.h"

namespace paratune {

std::string NoWorkerCanHost(const v1::SearchSpec& spec, const v1::ListWorkersResponse& workers) {
  const std::string gpu_type = absl::AsciiStrToLower(spec.cluster().gpu().type());
  const std::string backend = spec.probe().backend().empty() ? "sim" : spec.probe().backend();
  const std::string& command_template = spec.probe().command_template();
  const auto offers = [](const auto& list, const std::string& name) {
    return std::find(list.begin(), list.end(), name) != list.end();
  };
  std::vector<const v1::Worker*> live;
  for (const v1::Worker& worker : workers.workers()) {
    if (worker.state() == v1::WORKER_LOST) continue;
    live.push_back(&worker);
    if ((gpu_type.empty() || worker.gpu_type() == gpu_type) && offers(worker.backends(), backend) &&
        (command_template.empty() || offers(worker.command_templates(), command_template)) &&
        worker.gpus_size() >= spec.cluster().gpus_per_node()) {
      return "";
    }
  }
  return absl::StrCat("no live worker can host this search (", spec.cluster().gpus_per_node(),
                      " x ", gpu_type.empty() ? "custom GPU" : gpu_type, " per node, backend ",
                      backend, command_template.empty() ? "" : " with template ", command_template,
                      "); live workers: ", DescribeFleet(live));
}

}  // namespace paratune
