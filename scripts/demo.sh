#!/usr/bin/env bash
# The paratune demo: installs what is missing, builds, starts paratune-server and four
# simulated paratune-workers (one per node of the searched cluster) on loopback, runs a real
# search for Llama-3.1-8B on 4 nodes x 4 H100-94GB (global batch 1024, sequence 8192), prints
# the ranked table, and stops everything it started. Probe results come from the sim backend and are labelled SIMULATED. It prints
# the search's projected cost first and its actual (simulated, real-equivalent) cost at the end.
# Extra flags are passed to `paratune submit` (e.g. --policy=exhaustive).
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/local_cluster.sh //cli:paratune
start_server demo
for i in 1 2 3 4; do
  start_worker "worker-$i" --backend=sim --sim_gpus=4 --sim_gpu_type=h100-94gb \
    --hostname="sim-node-$i"
done
wait_for_workers 4

search_flags=(--model=llama3.1-8b --gpu=h100-94gb --nodes=4 --gpus_per_node=4
  --global_batch=1024 --seq_len=8192 "$@")
# What the search is projected to cost, then what it cost: GPU-hours are the real-equivalent
# cost of the simulated probes (docs/short_probes.md).
"$bin/cli/paratune" submit --dry_run "${search_flags[@]}"
"$bin/cli/paratune" submit --server="$server" --watch --name=demo "${search_flags[@]}"
"$bin/cli/paratune" workers --server="$server"
