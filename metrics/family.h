// A metric family of one instrument type (Counter, Gauge or Histogram) with labelled
// children: the Collector that a binary's metrics are built from.
#ifndef PARATUNE_METRICS_FAMILY_H_
#define PARATUNE_METRICS_FAMILY_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"
#include "metrics/collector.h"
#include "metrics/instruments.h"
#include "metrics/metric_family.h"

namespace paratune::metrics {

// Aborts the process naming the family: a label-count mismatch is a bug in the binary's
// metric definitions, not a runtime condition.
[[noreturn]] void DieOfLabelMismatch(const MetricDescriptor& descriptor, size_t got);

// Thread-safe. Children live as long as the family, so references to them can be kept.
template <typename Instrument>
class Family final : public Collector {
 public:
  // INVALID_ARGUMENT naming the field for a bad name, help, label name or instrument option.
  static absl::StatusOr<std::unique_ptr<Family>> Create(std::string name, std::string help,
                                                        std::vector<std::string> label_names,
                                                        typename Instrument::Options options = {}) {
    MetricDescriptor descriptor{std::move(name), std::move(help), Instrument::kType,
                                std::move(label_names)};
    PT_RETURN_IF_ERROR(ValidateDescriptor(descriptor));
    if (absl::Status status = Instrument::ValidateOptions(options); !status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(descriptor.name, ": ", status.message()));
    }
    return std::unique_ptr<Family>(new Family(std::move(descriptor), std::move(options)));
  }

  // The child with these label values (one per label name, in order), created at zero on
  // first use. Create the children of known label values at start-up so that they are
  // exported before their first event (rate() and alerts need the zero).
  Instrument& WithLabels(const std::vector<std::string>& label_values) {
    if (label_values.size() != descriptor_.label_names.size()) {
      DieOfLabelMismatch(descriptor_, label_values.size());
    }
    absl::MutexLock lock(&mu_);
    std::unique_ptr<Instrument>& child = children_[label_values];
    if (child == nullptr) child = std::make_unique<Instrument>(options_);
    return *child;
  }

  const MetricDescriptor& descriptor() const { return descriptor_; }

  std::vector<MetricDescriptor> Describe() const override { return {descriptor_}; }

  std::vector<MetricFamily> Collect() const override {
    MetricFamily family{descriptor_, {}};
    absl::MutexLock lock(&mu_);
    for (const auto& [label_values, child] : children_) {
      family.samples.push_back(Sample{label_values, child->Snapshot()});
    }
    return {std::move(family)};
  }

 private:
  Family(MetricDescriptor descriptor, typename Instrument::Options options)
      : descriptor_(std::move(descriptor)), options_(std::move(options)) {}

  const MetricDescriptor descriptor_;
  const typename Instrument::Options options_;
  mutable absl::Mutex mu_;
  // Ordered, so that the output is stable from scrape to scrape.
  std::map<std::vector<std::string>, std::unique_ptr<Instrument>> children_ ABSL_GUARDED_BY(mu_);
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

}  // namespace paratune::metrics

#endif  // PARATUNE_METRICS_FAMILY_H_
