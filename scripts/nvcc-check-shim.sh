#!/usr/bin/env bash
# A stand-in for nvcc that compiles nothing, for `cargo check --features cuda` only
# (scripts/build-cuda.sh --check-fast): a check never links, so candle's kernels need
# only exist as files, and the Rust code that uses them is checked without a CUDA
# toolkit. It answers `--version` as nvcc 13.0 does (cudarc picks its CUDA API from
# it), writes an empty .ptx for `--ptx`, an empty object for `-c`, an empty archive
# for `--lib`. Never use it to build: the binary would have no GPU kernels.
set -euo pipefail
out="" outdir="" mode="" srcs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --version)
      printf '%s\n' "nvcc: NVIDIA (R) Cuda compiler driver" \
        "Copyright (c) 2005-2025 NVIDIA Corporation" \
        "Built on Wed_Aug_20_01:58:59_PM_PDT_2025" \
        "Cuda compilation tools, release 13.0, V13.0.88" \
        "Build cuda_13.0.r13.0/compiler.36424714_0"
      exit 0 ;;
    --list-gpu-arch) printf 'compute_%s\n' 75 80 86 87 89 90 100 120; exit 0 ;;
    --list-gpu-code) printf 'sm_%s\n' 75 80 86 87 89 90 100 120; exit 0 ;;
    --ptx) mode=ptx ;;
    -c) mode=obj ;;
    --lib) mode=lib ;;
    -o) out="$2"; shift ;;
    --output-directory) outdir="$2"; shift ;;
    -*) ;;
    *.cu) srcs+=("$1") ;;
  esac
  shift
done
case "$mode" in
  ptx)
    for s in "${srcs[@]}"; do
      f="$(basename "${s%.cu}").ptx"
      : > "${out:-${outdir:-.}/$f}"
    done ;;
  obj) : > "$out" ;;
  lib) printf '!<arch>\n' > "$out" ;;
esac
