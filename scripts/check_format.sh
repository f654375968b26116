#!/usr/bin/env bash
# Fails, naming them, when C++ or CUDA files of the project differ from .clang-format:
#   scripts/check_format.sh          # check (scripts/test.sh runs it)
#   scripts/check_format.sh --fix    # rewrite them in place
set -euo pipefail
cd "$(dirname "$0")/.."

fix=false
[[ "${1:-}" == "--fix" ]] && fix=true
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard \
    '*.cc' '*.h' '*.cu' '*.cuh')
else
  mapfile -t files < <(find . -path ./bazel-\* -prune -o \
    \( -name '*.cc' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -print)
fi
unformatted=()
for file in "${files[@]}"; do
  [[ -f "$file" ]] || continue
  if ! clang-format --dry-run -Werror "$file" >/dev/null 2>&1; then
    if $fix; then clang-format -i "$file"; else unformatted+=("$file"); fi
  fi
done
if ((${#unformatted[@]} > 0)); then
  echo "check_format: ${#unformatted[@]} of ${#files[@]} files differ from .clang-format" \
    "(scripts/check_format.sh --fix rewrites them):" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  exit 1
fi
echo "check_format: ${#files[@]} files match .clang-format"
