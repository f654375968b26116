# Sourced by scripts that run paratune on loopback (demo.sh, replay_study.sh): builds the
# binaries, starts paratune-server on a free port with a database in a temporary run
# directory, starts workers, and stops everything at exit (and shuts Bazel down, so nothing is
# left running).
#
#   source scripts/local_cluster.sh TARGET...   # extra Bazel targets to build
#   start_server NAME                             # sets $server (host:port); NAME prefixes messages
#   start_worker LOG_NAME FLAG...                 # a paratune-worker of $server with FLAGs
#   wait_for_workers N                            # until N workers registered (needs //cli:paratune)
# $bin is bazel-bin and $run_dir the run directory (logs, database).

scripts/setup.sh
bazel build //server:paratune-server //worker:paratune-worker "$@"
bin=$(bazel info bazel-bin)
run_dir=$(mktemp -d)
pids=()

stop_local_cluster() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  bazel shutdown
  rm -rf "$run_dir"
}
trap stop_local_cluster EXIT

start_server() {
  "$bin/server/paratune-server" --address=127.0.0.1:0 --port_file="$run_dir/port" \
    --db="$run_dir/paratune.db" 2>"$run_dir/server.log" &
  pids+=($!)
  for _ in $(seq 100); do
    [[ -s "$run_dir/port" ]] && break
    sleep 0.1
  done
  if [[ ! -s "$run_dir/port" ]]; then
    echo "$1: paratune-server did not start; its log:" >&2
    cat "$run_dir/server.log" >&2
    exit 1
  fi
  server="127.0.0.1:$(cat "$run_dir/port")"
  echo "$1: paratune-server listening on $server (logs in $run_dir)"
}

start_worker() {
  local log_name=$1
  shift
  "$bin/worker/paratune-worker" --server="$server" "$@" 2>"$run_dir/$log_name.log" &
  pids+=($!)
}

# A search submitted before all its workers registered would plan its first probes for the
# smaller fleet (replica scope instead of full).
wait_for_workers() {
  for _ in $(seq 100); do
    local registered
    # Distinct worker names: a worker's name may appear more than once in the listing.
    registered=$("$bin/cli/paratune" workers --server="$server" --json 2>/dev/null |
      grep -o '"name": "workers/[0-9]*"' | sort -u | wc -l)
    ((registered >= $1)) && return 0
    sleep 0.1
  done
  echo "only $registered of $1 workers registered within 10 s; logs in $run_dir" >&2
  exit 1
}
