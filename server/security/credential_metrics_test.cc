#include "server/security/credential_metrics.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics/text_format.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

TEST(CredentialMetricsTest, ExportsEveryReloadResultAndThePrincipals) {
  CredentialStats stats;
  stats.token_reloads = 3;
  stats.token_reload_errors = 1;
  stats.certificate_reloads = 2;
  stats.principals = 5;
  const CredentialMetrics metrics([&] { return stats; });
  ASSERT_EQ(metrics.Describe().size(), metrics.Collect().size());

  const std::string text = metrics::FormatText(metrics.Collect());
  for (const char* line : {
           "paratune_credential_reloads_total{what=\"tokens\",result=\"ok\"} 3\n",
           "paratune_credential_reloads_total{what=\"tokens\",result=\"error\"} 1\n",
           "paratune_credential_reloads_total{what=\"certificates\",result=\"ok\"} 2\n",
           "paratune_credential_reloads_total{what=\"certificates\",result=\"error\"} 0\n",
           "paratune_principals 5\n",
       }) {
    EXPECT_THAT(text, HasSubstr(line));
  }
}

}  // namespace
}  // namespace paratune
