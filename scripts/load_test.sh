#!/usr/bin/env bash
# A load run of paratune on loopback (docs/storage.md): many sim workers, many concurrent
# EXHAUSTIVE searches, the server killed with kill -9 and restarted on its database several
# times; then every search is checked. Prints probes/s, server CPU per probe, peak server RSS,
# and lost and duplicated results. With --watchers=N, N `paratune watch` processes follow each
# search (started again after each restart), so the server's CPU includes what watching costs.
#
#   scripts/load_test.sh [--workers=128] [--gpus=8] [--searches=60] [--kills=5]
#                        [--kill_interval=2] [--probe_seconds=0.05] [--nodes=2] [--watchers=0]
#
# It polls the searches' states with one `paratune list` every 0.5 s until all end. It builds
# with Bazel first, then runs the binaries from bazel-bin and never shuts Bazel down
# (others may be building in the same tree). Exit status 1 when a result is lost or duplicated.
#
# Per search, after all ended (every one must end SUCCEEDED):
#   lost:       a selected candidate without a result (not CANDIDATE_PROBED, or PROBED
#               without probe_result), or counts.probed below the number of probed candidates;
#   duplicated: counts.probed above the number of probed candidates (a result recorded twice),
#               or a candidate name appearing twice;
#   re-probes:  attempts beyond one per candidate (probes re-run after a kill): wasted work,
#               not a wrong result.
set -euo pipefail
cd "$(dirname "$0")/.."

workers=128 gpus=8 searches=60 kills=5 kill_interval=2 probe_seconds=0.05 nodes=2 watchers=0
for arg in "$@"; do
  case $arg in
    --workers=*) workers=${arg#*=} ;;
    --gpus=*) gpus=${arg#*=} ;;
    --searches=*) searches=${arg#*=} ;;
    --kills=*) kills=${arg#*=} ;;
    --kill_interval=*) kill_interval=${arg#*=} ;;
    --probe_seconds=*) probe_seconds=${arg#*=} ;;
    --nodes=*) nodes=${arg#*=} ;;
    --watchers=*) watchers=${arg#*=} ;;
    *) echo "unknown argument $arg" >&2; exit 2 ;;
  esac
done

bazel build //server:paratune-server //worker:paratune-worker //cli:paratune
bin=$(bazel info bazel-bin)
run_dir=$(mktemp -d)
worker_pids=()
watcher_pids=()
server_pid=
sampler_pid=

stop_all() {
  [[ -n $sampler_pid ]] && kill "$sampler_pid" 2>/dev/null || true
  [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null || true
  for pid in "${worker_pids[@]}" "${watcher_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [[ ${KEEP_RUN_DIR:-0} == 1 ]]; then echo "run directory kept: $run_dir"; else rm -rf "$run_dir"; fi
}
trap stop_all EXIT

address=127.0.0.1:0
# One principal (anonymous: no tokens) submits every search, more than
# --max_searches_per_principal allows by default: the run measures the scheduler, not that limit.
start_server() {
  rm -f "$run_dir/port"
  "$bin/server/paratune-server" --address="$address" --port_file="$run_dir/port" \
    --db="$run_dir/paratune.db" --max_searches_per_principal=0 2>>"$run_dir/server.log" &
  server_pid=$!
  for _ in $(seq 300); do
    [[ -s "$run_dir/port" ]] && break
    sleep 0.1
  done
  [[ -s "$run_dir/port" ]] || { echo "paratune-server did not start; see $run_dir/server.log" >&2; exit 1; }
  address=127.0.0.1:$(cat "$run_dir/port")
  echo "$server_pid" >"$run_dir/server_pid"
}

# Every 0.1 s: the running server's CPU ticks (utime + stime) and VmHWM, one line per sample,
# so the figures of a killed incarnation survive it.
sample_server() {
  while true; do
    local pid
    pid=$(cat "$run_dir/server_pid" 2>/dev/null || true)
    if [[ -n $pid && -r /proc/$pid/stat ]]; then
      local ticks hwm
      ticks=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || true)
      hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
      [[ -n $ticks && -n $hwm ]] && echo "$pid $ticks $hwm" >>"$run_dir/samples"
    fi
    sleep 0.1
  done
}

cli() { "$bin/cli/paratune" --server="$address" "$@"; }

# --watchers `paratune watch` processes per submitted search; a restarted server ends their
# streams, so each restart starts them again.
start_watchers() {
  for pid in "${watcher_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  watcher_pids=()
  ((watchers > 0)) || return 0
  while read -r name; do
    for w in $(seq "$watchers"); do
      cli watch "$name" >>"$run_dir/watch-${name#searches/}-$w.log" 2>&1 &
      watcher_pids+=($!)
    done
  done <"$run_dir/searches"
}

start_server
sample_server &
sampler_pid=$!
echo "paratune-server on $address; run directory $run_dir"
for i in $(seq "$workers"); do
  "$bin/worker/paratune-worker" --server="$address" --backend=sim --sim_gpus="$gpus" \
    --sim_gpu_type=h100-80gb --sim_probe_seconds="$probe_seconds" --hostname="load-$i" \
    2>"$run_dir/worker-$i.log" &
  worker_pids+=($!)
done
for _ in $(seq 300); do
  registered=$(cli workers --json 2>/dev/null | grep -o '"name": "workers/[0-9]*"' | sort -u | wc -l)
  ((registered >= workers)) && break
  sleep 0.2
done
echo "$registered of $workers workers ($((workers * gpus)) sim GPUs) registered"

start=$(date +%s.%N)
for i in $(seq "$searches"); do
  # Different batch sizes and seeds, so the searches differ.
  cli submit --json --policy=exhaustive --model=llama3.1-8b --gpu=h100-80gb --nodes="$nodes" \
    --gpus_per_node="$gpus" --global_batch=$((256 * (1 + i % 4))) --seq_len=4096 --seed="$i" \
    --name="load-$i" | grep -o '"name": "searches/[0-9]*"' | head -1 | grep -o 'searches/[0-9]*' \
    >>"$run_dir/searches"
done
echo "$(wc -l <"$run_dir/searches") searches submitted"
start_watchers
((watchers > 0)) && echo "$((watchers * $(wc -l <"$run_dir/searches"))) watchers started"

for k in $(seq "$kills"); do
  sleep "$kill_interval"
  kill -9 "$server_pid"
  wait "$server_pid" 2>/dev/null || true
  start_server
  start_watchers
  echo "kill -9 $k of $kills: restarted on $address"
done

# The submitted searches not ended yet, from one ListSearches (no candidates), so that the
# harness's polling costs the server little next to what it measures.
unfinished_searches() {
  cli list --json --page_size=1000 2>/dev/null | python3 -c '
import json, sys
names = set(open(sys.argv[1]).read().split())
listed = {s["name"]: s.get("state") for s in json.load(sys.stdin).get("searches", [])}
print(sum(1 for name in names if listed.get(name) not in ("SUCCEEDED", "FAILED", "CANCELLED")))
' "$run_dir/searches" || echo unknown
}
for _ in $(seq 6000); do
  [[ $(unfinished_searches) == 0 ]] && break
  sleep 0.5
done
end=$(date +%s.%N)

mkdir -p "$run_dir/final"
while read -r name; do cli get "$name" --json >"$run_dir/final/${name#searches/}.json"; done \
  <"$run_dir/searches"
python3 - "$run_dir" "$start" "$end" "$(getconf CLK_TCK)" "$workers" "$gpus" "$kills" <<'EOF'
import glob, json, sys
run_dir, start, end, hz, workers, gpus, kills = sys.argv[1:]
seconds = float(end) - float(start)
probes = lost = duplicated = reprobes = candidates = not_succeeded = 0
for path in sorted(glob.glob(run_dir + "/final/*.json")):
    search = json.load(open(path))
    if search.get("state") != "SUCCEEDED":
        not_succeeded += 1
        print(f"{search['name']}: {search.get('state')} {search.get('stopReason', '')}")
    selected = [c for c in search.get("candidates", []) if c.get("state") != "CANDIDATE_SKIPPED"]
    names = [c["name"] for c in selected]
    probed = [c for c in selected if c.get("state") == "CANDIDATE_PROBED" and "probeResult" in c]
    counted = int(search.get("counts", {}).get("probed", 0))
    candidates += len(selected)
    probes += len(probed)
    lost += len(selected) - len(probed) + max(0, len(probed) - counted)
    duplicated += max(0, counted - len(probed)) + len(names) - len(set(names))
    reprobes += sum(max(0, int(c.get("attempts", 1)) - 1) for c in probed)
cpu = {}
hwm = 0
for line in open(run_dir + "/samples"):
    pid, ticks, kib = line.split()
    cpu[pid] = max(cpu.get(pid, 0), int(ticks))
    hwm = max(hwm, int(kib))
cpu_seconds = sum(cpu.values()) / int(hz)
print(f"{workers} workers x {gpus} sim GPUs = {int(workers) * int(gpus)} GPUs; "
      f"{len(glob.glob(run_dir + '/final/*.json'))} searches; {kills} kill -9 restarts")
print(f"{probes} probes of {candidates} selected candidates in {seconds:.1f} s: "
      f"{probes / seconds:.1f} probes/s")
print(f"server CPU {cpu_seconds:.2f} s over {len(cpu)} incarnations: "
      f"{1000 * cpu_seconds / max(probes, 1):.2f} ms per probe (sampled every 0.1 s)")
print(f"peak server RSS (VmHWM) {hwm / 1024:.1f} MiB")
print(f"lost {lost}, duplicated {duplicated}, re-probes after kills {reprobes}, "
      f"searches not SUCCEEDED {not_succeeded}")
sys.exit(1 if lost or duplicated or not_succeeded else 0)
EOF
