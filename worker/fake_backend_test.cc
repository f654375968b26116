#include "worker/fake_backend.h"

#include <memory>

#include "gtest/gtest.h"
#include "worker/backend_conformance.h"

namespace paratune {
namespace {

// The fake passes the suite that every real backend passes, so that what tests learn with it
// holds for them (STYLE.md rule 9). Its runs take 20 ms, to be stopped while they run.
INSTANTIATE_TEST_SUITE_P(Fake, BackendConformanceTest,
                         ::testing::Values(BackendConformanceParam{
                             "fake",
                             [] {
                               FakeBackend::Options options;
                               options.run_time = absl::Milliseconds(20);
                               return std::make_unique<FakeBackend>(options);
                             },
                             SmallConformanceAssignment()}),
                         BackendConformanceParamName);

}  // namespace
}  // namespace paratune
