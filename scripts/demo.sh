#!/usr/bin/env bash
# The paratune demo: installs what is missing, builds, starts paratune-server and two
# simulated paratune-workers on loopback, runs a real search for Llama-3.1-8B on 4 nodes x 4
# H100-94GB (global batch 1024, sequence 8192), prints the ranked table, and stops everything
# it started. Probe results come from the sim backend and are labelled SIMULATED.
# Extra flags are passed to `paratune submit` (e.g. --policy=exhaustive).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
bazel build //server:paratune-server //worker:paratune-worker //cli:paratune
bin=$(bazel info bazel-bin)

run_dir=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  bazel shutdown
  rm -rf "$run_dir"
}
trap cleanup EXIT

"$bin/server/paratune-server" --address=127.0.0.1:0 --port_file="$run_dir/port" \
  --db="$run_dir/paratune.db" \
  2>"$run_dir/server.log" &
pids+=($!)
for _ in $(seq 100); do
  [[ -s "$run_dir/port" ]] && break
  sleep 0.1
done
if [[ ! -s "$run_dir/port" ]]; then
  echo "demo: paratune-server did not start; its log:" >&2
  cat "$run_dir/server.log" >&2
  exit 1
fi
server="127.0.0.1:$(cat "$run_dir/port")"
echo "demo: paratune-server listening on $server (logs in $run_dir)"

for i in 1 2; do
  "$bin/worker/paratune-worker" --server="$server" --backend=sim --sim_gpus=4 \
    --sim_gpu_type=h100-94gb --hostname="sim-node-$i" 2>"$run_dir/worker-$i.log" &
  pids+=($!)
done

"$bin/cli/paratune" submit --server="$server" --watch --name=demo \
  --model=llama3.1-8b --gpu=h100-94gb --nodes=4 --gpus_per_node=4 \
  --global_batch=1024 --seq_len=8192 "$@"
"$bin/cli/paratune" workers --server="$server"
