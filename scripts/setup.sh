#!/usr/bin/env bash
# Installs the Debian packages paratune needs to build and test, and checks the one thing apt
# cannot install: the CUDA 13 toolkit with cuDNN 9 and NCCL at /usr/local/cuda, which the
# machine image provides (paratune-probe and the GPU tests compile against it; nothing needs a
# GPU). Idempotent: when everything is present it only checks and returns in about a second.
set -euo pipefail

# The files the build reads from /usr/local/cuda (third_party/cuda/cuda.BUILD, bazel/cuda.bzl).
cuda_files=(
  bin/nvcc include/cuda_runtime.h include/cublasLt.h include/cudnn_graph.h include/nccl.h
  lib/libcudart_static.a lib/libcublasLt.so lib/libcudnn.so lib/libnccl.so
)
for file in "${cuda_files[@]}"; do
  if [[ ! -e "/usr/local/cuda/$file" ]]; then
    echo "setup: /usr/local/cuda/$file is missing: the build needs the CUDA 13 toolkit," \
      "cuDNN 9 and NCCL installed at /usr/local/cuda (not a Debian package; see docs/probe.md)" >&2
    exit 1
  fi
done

packages=(
  bazel-bootstrap bazel-rules-java bazel-platforms
  g++ pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  libsqlite3-dev libcivetweb-dev
  # Tests against the real systems: promtool and a Prometheus server, a single-node Slurm;
  # openssl makes the throwaway certificates of the TLS tests.
  prometheus slurm-wlm munge python3-yaml openssl
  # The web console's end-to-end test drives headless Chromium over WebDriver.
  chromium chromium-driver
  # scripts/check_format.sh holds the tree to .clang-format; scripts/fuzz.sh builds the fuzz
  # targets with clang's libFuzzer and sanitizers.
  clang-format clang-14 libclang-rt-14-dev
)

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "setup: installing ${missing[*]}" >&2
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
