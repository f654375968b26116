#!/usr/bin/env bash
# Runs on a GPU machine, from the repository root, with .probe-bundle/bundle.tar.gz made by
# scripts/probe_bundle.sh: the probe's GPU tests and the measurements of docs/probe.md.
# Logs go to $OUT (the device machine's output folder) or ./probe-gpu-out; a summary is
# printed last. Steps, all by default: tests gemm attention probe fp8 e2e.
#   tests  the gpu-tagged tests: kernels, GEMMs, fp8 linears and parameters, attention, the
#          overlaps, the step itself against its plan (StageRunner over CudaDeviceOps: the
#          planned GEMMs run, the loss starts at ln V and falls), the cuda backend's
#          conformance, and a probe the memory model sizes at 1.5 times the GPU's own memory
#          failing allocation
#   gemm   bf16 and fp8 GEMM throughput (Google Benchmark)
#   attention  fused (cuDNN) and chunked attention throughput, forward and backward
#   probe  Llama-3.1-8B on one GPU, 5 probes: wall time, step-time CV, measured vs predicted
#   fp8    the same replica in fp8, with bf16 weights and with fp8 weights (--fp8-param-gather)
#   e2e    paratune-server, paratune-worker --backend=cuda and a search, end to end
set -uo pipefail
cd "$(dirname "$0")/.."
steps=("$@")
[[ ${#steps[@]} -eq 0 ]] && steps=(tests gemm attention probe fp8 e2e)
out=${OUT:-$PWD/probe-gpu-out}
mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
tar -C "$work" -xzf .probe-bundle/bundle.tar.gz || { note "no .probe-bundle/bundle.tar.gz"; exit 1; }

# cuBLASLt, cuDNN and NCCL: the CUDA toolkit's, or those of the pip packages next to PyTorch
# (nvidia-cublas, nvidia-cudnn-cu13, nvidia-nccl-cu13).
library_dir() {
  local roots=(/usr/local/cuda/lib64 /usr/local/cuda/lib)
  roots+=($(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null))
  find "${roots[@]}" -name "$1" -print -quit 2>/dev/null | xargs -r dirname
}
nccl_dir=$(library_dir libnccl.so.2)
cublas_dir=$(library_dir libcublasLt.so.13)
cudnn_dir=$(library_dir libcudnn.so.9)
export LD_LIBRARY_PATH="${nccl_dir}:${cublas_dir}:${cudnn_dir}:$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
probe="$work/bin/paratune-probe"
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  echo "libnccl.so.2 in: ${nccl_dir:-NOT FOUND}; libcublasLt.so.13 in: ${cublas_dir:-NOT FOUND}; libcudnn.so.9 in: ${cudnn_dir:-NOT FOUND}"
  ldd "$probe"
  "$probe" --list_gpus
} >"$out/machine.log" 2>&1
note "machine: $(head -2 "$out/machine.log" | tail -1)"
note "paratune-probe --list_gpus: $("$probe" --list_gpus 2>&1 | head -1)"

# The value of `field` in a text-format ProbeResult (the first one).
field() { grep -m1 "^ *$1:" "$2" | sed 's/^[^:]*: *//; s/"//g'; }

for step in "${steps[@]}"; do
  case "$step" in
    tests)
      for test in kernels_gpu_test moe_kernels_gpu_test gemm_gpu_test fp8_gemm_gpu_test fp8_linear_gpu_test fp8_parameters_gpu_test attention_gpu_test data_parallel_sync_gpu_test tensor_parallel_overlap_gpu_test stage_runner_gpu_test cuda_backend_gpu_test; do
        mkdir -p "$work/tmp/$test"
        TEST_SRCDIR="$work/runfiles" TEST_TMPDIR="$work/tmp/$test" "$work/bin/$test" \
          >>"$out/tests.log" 2>&1
        note "test $test: $([[ $? == 0 ]] && echo PASSED || echo FAILED) ($(grep -c '^\[       OK' "$out/tests.log") tests OK so far)"
      done
      ;;
    gemm)
      "$work/bin/gemm_benchmark" --benchmark_min_time=0.5 >"$out/gemm.log" 2>&1
      note "GEMM throughput (TFLOP/s, fraction of the dense peak: bf16 989, fp8 1979):"
      grep BM_ "$out/gemm.log" | awk '{print "  " $0}' | tee -a "$summary" >/dev/null
      ;;
    attention)
      "$work/bin/attention_benchmark" --benchmark_min_time=0.5 >"$out/attention.log" 2>&1
      note "attention throughput (forward + backward TFLOP/s, fraction of the 989 bf16 peak):"
      grep BM_ "$out/attention.log" | awk '{print "  " $0}' | tee -a "$summary" >/dev/null
      ;;
    probe)
      : >"$out/probe.log"
      for run in 1 2 3 4 5; do
        start=$(date +%s.%N)
        "$probe" --assignment=worker/cuda/testdata/llama31_8b_replica.textproto \
          >"$work/probe-$run.txt" 2>>"$out/probe.log"
        wall=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
        { echo "== run $run, wall ${wall} s"; cat "$work/probe-$run.txt"; } >>"$out/probe.log"
        note "8B probe $run: $(field outcome "$work/probe-$run.txt"), wall ${wall} s, mean step $(field mean_step_time_seconds "$work/probe-$run.txt") s, in-probe CV $(field step_time_cv "$work/probe-$run.txt"), predicted $(field predicted_step_time_seconds "$work/probe-$run.txt") s, peak $(field peak_memory_bytes "$work/probe-$run.txt") B vs estimated $(field estimated_peak_memory_bytes "$work/probe-$run.txt") B, attention $(field attention_kernel "$work/probe-$run.txt") $(field attention_fallback_reason "$work/probe-$run.txt"), backward $(field attention_backward_kernel "$work/probe-$run.txt") $(field attention_backward_fallback_reason "$work/probe-$run.txt")"
      done
      python3 - "$work"/probe-*.txt <<'PYTHON' | tee -a "$summary"
import re, statistics, sys
means = []
for path in sys.argv[1:]:
    found = re.search(r"^mean_step_time_seconds: ([0-9.e+-]+)", open(path).read(), re.M)
    if found:
        means.append(float(found.group(1)))
if len(means) > 1:
    cv = statistics.stdev(means) / statistics.mean(means)
    print(f"8B probe: CV of the mean step time over {len(means)} probes: {100 * cv:.2f}% "
          f"(target <= 3%)")
else:
    print("8B probe: fewer than two OK probes; no CV")
PYTHON
      ;;
    fp8)
      : >"$out/fp8.log"
      # The memory model: 71.6 GiB (RISKY) with bf16 weights, 58.6 GiB (SAFE) with fp8 ones
      # (`paratune estimate` as in the assignment's comment, with --fp8 [--fp8_param_gather]).
      for weights in bf16 fp8; do
        assignment="$work/fp8-$weights.textproto"
        switches="precision: FP8 distributed_optimizer: true"
        [[ $weights == fp8 ]] && switches+=" fp8_param_gather: true"
        sed "s/^training { \(.*\) }$/training { \1 $switches }/" \
          worker/cuda/testdata/llama31_8b_replica.textproto >"$assignment"
        "$probe" --assignment="$assignment" >"$work/fp8-$weights.txt" 2>>"$out/fp8.log"
        { echo "== fp8, $weights weights"; cat "$work/fp8-$weights.txt"; } >>"$out/fp8.log"
        note "8B fp8 probe, $weights weights: $(field outcome "$work/fp8-$weights.txt"), mean step $(field mean_step_time_seconds "$work/fp8-$weights.txt") s, predicted $(field predicted_step_time_seconds "$work/fp8-$weights.txt") s, peak $(field peak_memory_bytes "$work/fp8-$weights.txt") B vs estimated $(field estimated_peak_memory_bytes "$work/fp8-$weights.txt") B"
      done
      ;;
    e2e)
      "$work/bin/paratune-server" --address=127.0.0.1:0 --port_file="$work/port" \
        2>"$work/server.log" &
      pids+=($!)
      for _ in $(seq 100); do [[ -s "$work/port" ]] && break; sleep 0.1; done
      server="127.0.0.1:$(cat "$work/port")"
      "$work/bin/paratune-worker" --server="$server" --backend=cuda --probe_binary="$probe" \
        --hostname=gpu-0 2>"$work/worker.log" &
      pids+=($!)
      # The search asks for the catalog type the server gave the worker's GPU (h200-141gb on
      # an H200): a search for another type is never placed on it.
      gpu_type=
      for _ in $(seq 60); do
        gpu_type=$("$work/bin/paratune" workers --server="$server" --json 2>/dev/null |
          python3 -c 'import json, sys; print(json.load(sys.stdin)["workers"][0]["gpuType"])' \
            2>/dev/null)
        [[ -n $gpu_type ]] && break
        sleep 0.5
      done
      note "end to end: the worker registered ${gpu_type:-NO GPU TYPE (not registered?)}"
      timeout 400 "$work/bin/paratune" submit --server="$server" --watch --name=cuda-e2e \
        --backend=cuda --model=llama3.2-1b --gpu="${gpu_type:-h100-80gb}" --nodes=1 \
        --gpus_per_node=1 \
        --global_batch=16 --seq_len=2048 --policy=top_k --top_k=3 --warmup_steps=1 \
        --timed_steps=3 >"$out/e2e.log" 2>&1
      status=$?
      "$work/bin/paratune" workers --server="$server" >>"$out/e2e.log" 2>&1
      { echo "== server log"; cat "$work/server.log"; echo "== worker log"; cat "$work/worker.log"; } \
        >>"$out/e2e.log"
      note "end to end (server + worker --backend=cuda + search): exit $status; see e2e.log"
      ;;
    *)
      note "unknown step $step (tests gemm attention probe fp8 e2e)"
      ;;
  esac
done
echo
cat "$summary"
