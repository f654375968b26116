#include "metrics/registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace paratune::metrics {

absl::Status Registry::RegisterCollector(std::unique_ptr<Collector> collector) {
  const std::vector<MetricDescriptor> descriptors = collector->Describe();
  absl::MutexLock lock(&mu_);
  std::vector<std::string> added;
  for (const MetricDescriptor& descriptor : descriptors) {
    PT_RETURN_IF_ERROR(ValidateDescriptor(descriptor));
    const bool taken = std::find(names_.begin(), names_.end(), descriptor.name) != names_.end() ||
                       std::find(added.begin(), added.end(), descriptor.name) != added.end();
    if (taken) {
      return absl::AlreadyExistsError(
          absl::StrCat("metric name (\"", descriptor.name, "\") is registered already"));
    }
    added.push_back(descriptor.name);
  }
  names_.insert(names_.end(), added.begin(), added.end());
  collectors_.push_back(std::move(collector));
  return absl::OkStatus();
}

absl::StatusOr<CounterFamily*> Registry::AddCounter(std::string name, std::string help,
                                                    std::vector<std::string> label_names) {
  PT_ASSIGN_OR_RETURN(
      std::unique_ptr<CounterFamily> family,
      CounterFamily::Create(std::move(name), std::move(help), std::move(label_names)));
  return Register(std::move(family));
}

absl::StatusOr<GaugeFamily*> Registry::AddGauge(std::string name, std::string help,
                                                std::vector<std::string> label_names) {
  PT_ASSIGN_OR_RETURN(
      std::unique_ptr<GaugeFamily> family,
      GaugeFamily::Create(std::move(name), std::move(help), std::move(label_names)));
  return Register(std::move(family));
}

absl::StatusOr<HistogramFamily*> Registry::AddHistogram(std::string name, std::string help,
                                                        std::vector<std::string> label_names,
                                                        std::vector<double> upper_bounds) {
  PT_ASSIGN_OR_RETURN(
      std::unique_ptr<HistogramFamily> family,
      HistogramFamily::Create(std::move(name), std::move(help), std::move(label_names),
                              Histogram::Options{std::move(upper_bounds)}));
  return Register(std::move(family));
}

std::vector<MetricFamily> Registry::Collect() const {
  std::vector<MetricFamily> families;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& collector : collectors_) {
      for (MetricFamily& family : collector->Collect()) families.push_back(std::move(family));
    }
  }
  std::sort(families.begin(), families.end(), [](const MetricFamily& a, const MetricFamily& b) {
    return a.descriptor.name < b.descriptor.name;
  });
  return families;
}

}  // namespace paratune::metrics
