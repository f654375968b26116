#!/usr/bin/env bash
# Installs what is missing, builds everything and runs every test (GPU tests excepted: they
# are tagged gpu and run on a GPU machine with --test_tag_filters=gpu).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
status=0
bazel test //... || status=$?
# Leave no Bazel server behind (CI and fresh machines expect a clean process table).
bazel shutdown
exit "$status"
