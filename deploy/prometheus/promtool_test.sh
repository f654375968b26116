#!/usr/bin/env bash
# Checks the scrape configuration and the alert rules with Debian's promtool, and runs the
# alerts' unit tests (alerts_test.yml).
set -euo pipefail
dir="$(dirname "$0")"
if ! command -v promtool >/dev/null; then
  echo "promtool is not installed (Debian package prometheus); run scripts/setup.sh" >&2
  exit 1
fi
cd "$dir"
promtool check config prometheus.yml
promtool check rules alerts.yml
promtool test rules alerts_test.yml
