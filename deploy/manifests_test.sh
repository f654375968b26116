#!/usr/bin/env bash
# Runs manifests_test.py with Debian's python3 (python3-yaml), not a user's interpreter.
exec /usr/bin/python3 "$@"
