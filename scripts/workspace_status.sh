#!/usr/bin/env bash
# Bazel's workspace status command (.bazelrc): prints the commit the build is from, which
# //cli:build_stamp_cc stamps into `paratune --version`. A STABLE_ key: when it changes, only
# stamped actions rerun; every other target keeps its cache.
set -uo pipefail
cd "$(dirname "$0")/.."
if commit=$(git rev-parse --short=12 HEAD 2>/dev/null); then
  # Tracked files that differ from the commit: the binary is not that commit's.
  git diff --quiet HEAD -- 2>/dev/null || commit+="-modified"
else
  commit=unknown
fi
echo "STABLE_GIT_COMMIT $commit"
