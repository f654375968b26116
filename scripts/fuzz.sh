#!/usr/bin/env bash
# Builds the fuzz targets of //fuzz with clang and libFuzzer (ASan and UBSan) and runs each
# for a bounded time (docs/fuzzing.md). New inputs that crash one are copied to
# fuzz/crashes/TARGET/ and the script fails; add each, once fixed, to fuzz/corpus/TARGET/,
# where its replay test keeps it fixed.
#
#   scripts/fuzz.sh [--seconds=N] [--check] [TARGET...]
#
# --seconds: how long each target runs (default 60). TARGET: e.g. csv_table_fuzzer (default:
# all). --check: exit 0 when clang-14 and libFuzzer are installed, 2 when not, doing nothing.
# Environment: PARATUNE_FUZZ_DIR, where the Bazel output base, the growing corpora and the
# logs live (default ~/.cache/paratune-fuzz); it is outside the tree so a fuzz run never
# changes the seed corpus, and the clang build never evicts the gcc build's cache.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
check_only=0
targets=()
for argument in "$@"; do
  case "$argument" in
    --seconds=*) seconds="${argument#--seconds=}" ;;
    --check) check_only=1 ;;
    -h | --help)
      sed -n '2,14p' "$0"
      exit 0
      ;;
    -*)
      echo "fuzz.sh: unknown option $argument" >&2
      exit 1
      ;;
    *) targets+=("$argument") ;;
  esac
done
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz.sh: --seconds ($seconds) must be a whole number >= 1" >&2
  exit 1
fi

if ! command -v clang-14 >/dev/null ||
  ! compgen -G "/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null; then
  echo "fuzz.sh: clang-14 with libFuzzer is not installed (apt-get install clang-14)" >&2
  exit 2
fi
if ((check_only)); then exit 0; fi

if ((${#targets[@]} == 0)); then
  for directory in fuzz/corpus/*/; do
    targets+=("$(basename "$directory")")
  done
fi

work="${PARATUNE_FUZZ_DIR:-$HOME/.cache/paratune-fuzz}"
mkdir -p "$work"
# An output base of its own: another compiler in the shared one would rebuild everything,
# twice, for everyone building in this tree. The server exits by itself when idle.
bazel_fuzz=(bazel "--output_base=$work/bazel" --max_idle_secs=120)
labels=()
for target in "${targets[@]}"; do labels+=("//fuzz:$target"); done
echo "fuzz.sh: building ${#targets[@]} targets with clang-14, libFuzzer, ASan and UBSan"
mkdir -p "$work/logs"
# The linker warns about every ASan symbol it cannot export; the log keeps them.
if ! "${bazel_fuzz[@]}" build --config=fuzz --symlink_prefix=/ "${labels[@]}" \
  >"$work/logs/build.log" 2>&1; then
  grep -v "ld.gold: warning" "$work/logs/build.log" | tail -n 60 >&2
  echo "fuzz.sh: the build failed; see $work/logs/build.log" >&2
  exit 1
fi
bin="$("${bazel_fuzz[@]}" info --config=fuzz bazel-bin 2>/dev/null)"
# Only this script's own server (its own output base): the fuzzers need it no more.
"${bazel_fuzz[@]}" shutdown

failed=()
summary=()
for target in "${targets[@]}"; do
  corpus="$work/corpus/$target"
  artifacts="$work/artifacts/$target"
  log="$work/logs/$target.log"
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  rm -f "$artifacts"/*
  echo "fuzz.sh: $target for ${seconds}s (log: $log)"
  status=0
  # The first directory receives the inputs libFuzzer finds; the seed corpus is read only.
  "$bin/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" \
    "$corpus" "fuzz/corpus/$target" >"$log" 2>&1 || status=$?
  executions="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  found=("$artifacts"/*)
  if ((status != 0)) || [[ -e "${found[0]}" ]]; then
    mkdir -p "fuzz/crashes/$target"
    if [[ -e "${found[0]}" ]]; then cp "${found[@]}" "fuzz/crashes/$target/"; fi
    failed+=("$target")
    summary+=("$target: FAILED (exit $status) after ${executions:-?} executions; see $log and fuzz/crashes/$target/")
    tail -n 40 "$log" >&2
  else
    summary+=("$target: ${executions:-?} executions in ${seconds}s, corpus $(find "$corpus" -type f | wc -l) inputs")
  fi
done

printf '%s\n' "${summary[@]}"
if ((${#failed[@]} > 0)); then
  echo "fuzz.sh: ${#failed[@]} targets crashed: ${failed[*]}" >&2
  exit 1
fi
