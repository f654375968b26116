// Helpers shared by the fuzz targets (docs/fuzzing.md): each target is a
// LLVMFuzzerTestOneInput over one parser of outside input, linked either with libFuzzer
// (scripts/fuzz.sh, bazel --config=fuzz) or with replay_main.cc, which runs it once on every
// file of its seed corpus as an ordinary cc_test.
#ifndef PARATUNE_FUZZ_FUZZ_INPUT_H_
#define PARATUNE_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"

namespace paratune {

// The input as text (any bytes, NULs included).
inline absl::string_view FuzzText(const uint8_t* data, size_t size) {
  return absl::string_view(reinterpret_cast<const char*>(data), size);
}

// Stops the run with a message when a property the fuzz target checks does not hold, so that
// libFuzzer (and the corpus replay) report the input as a crash.
inline void FuzzCheck(bool holds, absl::string_view what) {
  if (holds) return;
  std::fprintf(stderr, "fuzz check failed: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

// A private directory for targets whose parser reads files, made once per process (under
// $TEST_TMPDIR in a test, $TMPDIR or /tmp otherwise).
const std::string& FuzzScratchDirectory();

// Writes `contents` to FuzzScratchDirectory()/`name` and returns its path; aborts when it
// cannot, since a target that cannot write its input tests nothing.
std::string WriteFuzzFile(absl::string_view name, absl::string_view contents);

}  // namespace paratune

#endif  // PARATUNE_FUZZ_FUZZ_INPUT_H_
