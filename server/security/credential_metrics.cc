#include "server/security/credential_metrics.h"

#include <string>

namespace paratune {
namespace {

using metrics::MetricDescriptor;
using metrics::MetricFamily;
using metrics::MetricType;
using metrics::Sample;

// Describe() and Collect() index the same list.
enum Family { kReloads, kPrincipals };

const std::vector<MetricDescriptor>& Descriptors() {
  static const auto* const descriptors = new std::vector<MetricDescriptor>{
      {"paratune_credential_reloads_total",
       "Reloads of the server's credentials (SIGHUP), by what was reloaded (tokens: the token "
       "file; certificates: the TLS certificate, key and client CA) and result (ok, error: "
       "the old ones stay in force).",
       MetricType::kCounter,
       {"what", "result"}},
      {"paratune_principals",
       "Principals the token file in force names, by bearer token or client certificate; 0 "
       "without a token file.",
       MetricType::kGauge,
       {}},
  };
  return *descriptors;
}

}  // namespace

std::vector<MetricDescriptor> CredentialMetrics::Describe() const { return Descriptors(); }

std::vector<MetricFamily> CredentialMetrics::Collect() const {
  const CredentialStats stats = stats_();
  std::vector<MetricFamily> families;
  for (const MetricDescriptor& descriptor : Descriptors()) families.push_back({descriptor, {}});
  auto add = [&](Family family, std::vector<std::string> labels, double value) {
    families[family].samples.push_back(Sample{std::move(labels), value});
  };
  add(kReloads, {"tokens", "ok"}, stats.token_reloads);
  add(kReloads, {"tokens", "error"}, stats.token_reload_errors);
  add(kReloads, {"certificates", "ok"}, stats.certificate_reloads);
  add(kReloads, {"certificates", "error"}, stats.certificate_reload_errors);
  add(kPrincipals, {}, stats.principals);
  return families;
}

}  // namespace paratune
