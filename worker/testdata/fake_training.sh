#!/bin/sh
# A stand-in for Megatron-LM's pretrain_gpt.py under torchrun, for the command backend's tests:
# it prints Megatron-style iteration and memory logs, and fails the ways real runs fail.
#
#   fake_training.sh --train-iters=N --global-batch-size=G --dp=D [--tp=T --pp=P --cp=C --mbs=B
#                    --num-layers=L --hidden-size=H] [--startup-seconds=U]
#                    [--seconds-per-iteration=S] [--node-rank=R --nnodes=N]
#                    [--fail=oom|hang|segfault|nccl|exit-code|exit-early]
#                    [--fp8-format=F --cp-comm-type=C --num-experts=E --moe-*=...]
#                    [--use-distributed-optimizer --use-megatron-fsdp
#                     --num-distributed-optimizer-instances=I]
#                    (accepted, no effect on the run)
#
# Like Megatron-LM, which logs iteration times on its last rank, only the last node
# (--node-rank = --nnodes - 1) prints the iteration lines.
#
# A step has m = G / (D B) micro-batches. Iteration i (1-based) logs
# 100 + 10 T + 20 P + 30 C + 5 B + 2 m + i ms, linear in m as a 1F1B step is
# (docs/short_probes.md), and takes S seconds of wall time, after U seconds of start-up before
# the first. The weights, gradients and optimizer states take 18 bytes x 12 L H^2 / (T P);
# above 80 GiB the first iteration runs out of memory, as does --fail=oom. Other failures: hang
# after two iterations, die of SIGSEGV, a NCCL error, exit 3, or exit 0 after one iteration.
set -eu

iters=0 gbs=0 dp=0 tp=1 pp=1 cp=1 mbs=1 layers=16 hidden=2048 startup=0 pace=0 fail=none
node_rank=0 nnodes=1
for arg in "$@"; do
  case "$arg" in
    --train-iters=*) iters=${arg#*=} ;;
    --global-batch-size=*) gbs=${arg#*=} ;;
    --dp=*) dp=${arg#*=} ;;
    --tp=*) tp=${arg#*=} ;;
    --pp=*) pp=${arg#*=} ;;
    --cp=*) cp=${arg#*=} ;;
    --mbs=*) mbs=${arg#*=} ;;
    --num-layers=*) layers=${arg#*=} ;;
    --hidden-size=*) hidden=${arg#*=} ;;
    --startup-seconds=*) startup=${arg#*=} ;;
    --seconds-per-iteration=*) pace=${arg#*=} ;;
    --fail=*) fail=${arg#*=} ;;
    --node-rank=*) node_rank=${arg#*=} ;;
    --nnodes=*) nnodes=${arg#*=} ;;
    --fp8-format=* | --cp-comm-type=* | --num-experts=* | --moe-*) ;;
    --use-distributed-optimizer | --use-megatron-fsdp | --num-distributed-optimizer-instances=*) ;;
    *) echo "fake_training.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

if [ "$dp" -lt 1 ] || [ "$gbs" -lt 1 ] || [ $((gbs % (dp * mbs))) -ne 0 ]; then
  echo "fake_training.sh: --global-batch-size=$gbs is not a positive multiple of --dp=$dp x --mbs=$mbs" >&2
  exit 2
fi
micro_batches=$((gbs / (dp * mbs)))

echo "using world size: $((dp * tp * pp * cp)), tensor-model-parallel size: $tp, pipeline-model-parallel size: $pp"
echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset} MASTER=${FAKE_MASTER:-unset}"

state_bytes=$((18 * 12 * layers * hidden * hidden / (tp * pp)))
if [ "$fail" = oom ] || [ "$state_bytes" -gt $((80 * 1024 * 1024 * 1024)) ]; then
  echo "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.05 GiB is free." >&2
  exit 1
fi

base=$((100 + 10 * tp + 20 * pp + 30 * cp + 5 * mbs + 2 * micro_batches))
sleep "$startup"
i=1
while [ "$i" -le "$iters" ]; do
  sleep "$pace"
  [ "$node_rank" -eq $((nnodes - 1)) ] && echo " [2026-11-22 12:00:0$((i % 10))] iteration $i/$iters | consumed samples: $((i * gbs)) | elapsed time per iteration (ms): $((base + i)).0 | learning rate: 3.000000E-04 | global batch size: $gbs | lm loss: 1.050000E+01 | loss scale: 1.0 | number of skipped iterations: 0 | number of nan iterations: 0 |"
  if [ "$i" -eq 1 ]; then
    echo "[Rank 0] (after 1 iterations) memory (MB) | allocated: 1000.0 | max allocated: 2000.0 | reserved: $((state_bytes / 1048576 + 512)).0 | max reserved: $((state_bytes / 1048576 + 1024)).0"
    case "$fail" in
      segfault) kill -s SEGV $$ ;;
      nccl)
        echo "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5" >&2
        echo "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error." >&2
        exit 1 ;;
      exit-code) echo "Traceback (most recent call last): RuntimeError: something else broke" >&2; exit 3 ;;
      exit-early) exit 0 ;;
    esac
  fi
  if [ "$i" -eq 2 ] && [ "$fail" = hang ]; then
    sleep 600
  fi
  i=$((i + 1))
done
echo "[after training is done] datetime: 2026-11-22 12:00:10"
