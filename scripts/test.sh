#!/usr/bin/env bash
# Installs what is missing, builds everything and runs every test (GPU tests excepted: they
# are tagged gpu and run on a GPU machine with --test_tag_filters=gpu).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
status=0
scripts/check_format.sh || status=$?
bazel test //... || status=$?
# The fuzz targets' corpus replays ran above, as ordinary tests; each target also runs
# PARATUNE_FUZZ_SECONDS (default 10; 0 skips) under libFuzzer (docs/fuzzing.md): a fresh
# clang build and 10 s for each target (14) add about 4 minutes.
fuzz_seconds="${PARATUNE_FUZZ_SECONDS:-10}"
if ((fuzz_seconds > 0)); then
  if scripts/fuzz.sh --check; then
    scripts/fuzz.sh --seconds="$fuzz_seconds" || status=$?
  else
    echo "test.sh: no clang-14 with libFuzzer; fuzzing skipped (the corpus replays ran)"
  fi
fi
# Leave no Bazel server behind (CI and fresh machines expect a clean process table).
bazel shutdown
exit "$status"
