#!/usr/bin/env bash
# Builds paratune-probe, its GPU tests, the GEMM benchmark and the server, worker and CLI,
# and packs them into .probe-bundle/bundle.tar.gz for a GPU machine that has neither Bazel
# nor Debian's packages (docs/probe.md, "On a GPU machine"). The probe and the tests are
# linked to travel as they are; the gRPC binaries and the benchmark take the Debian shared
# libraries they need along in lib/. scripts/probe_gpu_checks.sh unpacks and runs it there.
set -euo pipefail
cd "$(dirname "$0")/.."

targets=(
  //worker/cuda:paratune-probe
  //worker/cuda:kernels_gpu_test
  //worker/cuda:moe_kernels_gpu_test
  //worker/cuda:gemm_gpu_test
  //worker/cuda:fp8_gemm_gpu_test
  //worker/cuda:fp8_linear_gpu_test
  //worker/cuda:fp8_parameters_gpu_test
  //worker/cuda:attention_gpu_test
  //worker/cuda:data_parallel_sync_gpu_test
  //worker/cuda:tensor_parallel_overlap_gpu_test
  //worker/cuda:stage_runner_gpu_test
  //worker:cuda_backend_gpu_test
  //worker/cuda:gemm_benchmark
  //worker/cuda:attention_benchmark
  //server:paratune-server
  //worker:paratune-worker
  //cli:paratune
)
bazel build "${targets[@]}"
bin=$(bazel info bazel-bin)

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/runfiles/paratune/worker/cuda"
for target in "${targets[@]}"; do
  path=${target#//}
  cp "$bin/${path/://}" "$stage/bin/"
done
# cuda_backend_gpu_test finds the probe where Bazel's runfiles would hold it.
cp "$bin/worker/cuda/paratune-probe" "$stage/runfiles/paratune/worker/cuda/"
# Shared libraries from Debian; the C library, the C++ runtime, CUDA, cuDNN and NCCL are the GPU
# machine's own.
for binary in paratune-server paratune-worker paratune gemm_benchmark attention_benchmark; do
  ldd "$stage/bin/$binary" | awk '$2 == "=>" && $3 ~ /^\// {print $3}'
done | sort -u |
  grep -vE '/(libc|libm|libpthread|libdl|librt|libgcc_s|libstdc\+\+|ld-linux-x86-64|libcublas|libcublasLt|libcudart|libcudnn|libnccl)\.so' |
  while read -r library; do cp -L "$library" "$stage/lib/"; done

mkdir -p .probe-bundle
tar -C "$stage" -czf .probe-bundle/bundle.tar.gz .
echo "probe_bundle: .probe-bundle/bundle.tar.gz ($(du -h .probe-bundle/bundle.tar.gz | cut -f1)):"
tar -tzf .probe-bundle/bundle.tar.gz | grep -v '/$' | sed 's/^/  /'
