#!/usr/bin/env bash
# Build Quire with CUDA (cargo feature `cuda`: candle's CUDA kernels) without a CUDA
# toolkit installed: NVIDIA's own PyPI wheels go into a venv, and candle's build is
# pointed at them. No GPU is needed to build; one is needed to run on it.
#
#   scripts/build-cuda.sh           release build of `quire` and the desktop app
#   scripts/build-cuda.sh --check   only `cargo check -p quire --lib --features cuda`
#                                   (CI: keeps the GPU code compiling)
#   scripts/build-cuda.sh --check-fast   the same check without the wheels or nvcc:
#                                   scripts/nvcc-check-shim.sh stands in for nvcc
#                                   (a check never links, so candle's kernels need
#                                   only exist); what `make test` runs
#   scripts/build-cuda.sh --env     print the environment it sets (eval it to run
#                                   cargo yourself)
#
# Why the CUDA 13 wheels: NVIDIA's CUDA 12 wheels (`nvidia-cuda-nvcc-cu12`, every
# version from 12.0 to 12.9) hold ptxas and headers but not the `nvcc` driver or
# `cicc`, and candle's kernels need nvcc (PTX for most kernels, a static library for
# the quantized and MoE ones). CUDA 13's wheels (`nvidia-cuda-nvcc`, `nvidia-nvvm`,
# `nvidia-cuda-crt`, …) hold the whole compiler and install as one toolkit tree,
# `site-packages/nvidia/cu13`. A binary built with them needs an NVIDIA driver
# ≥ 580 (CUDA 13) at run time, and a GPU of compute capability ≥ 7.5.
#
# Settings (environment):
#   CUDA_COMPUTE_CAP   the GPU's compute capability, default 80 (A100; 89: L4/RTX 40,
#                      90: H100). Set on a machine with a GPU for its own kernels.
#   QUIRE_CUDA_VENV    the venv, default ~/.cache/quire/cuda13 (kept between runs:
#                      the wheels are downloaded once, pip's cache keeps them too)
#   CUDA_TARGET_DIR    cargo's target dir for CUDA builds, default target/cuda, so
#                      that the normal target/ is not rebuilt by feature changes
set -euo pipefail
cd "$(dirname "$0")/.."

mode=build
for a in "$@"; do
  case "$a" in
    --check) mode=check ;;
    --check-fast) mode=check-fast ;;
    --env) mode=env ;;
    *) echo "scripts/build-cuda.sh: unknown option '$a'" >&2; exit 2 ;;
  esac
done

CARGO="${CARGO:-cargo}"
if [ "$mode" = check-fast ]; then
  export CARGO_TARGET_DIR="${CUDA_TARGET_DIR:-$PWD/target/cuda-check}"
  shim="$CARGO_TARGET_DIR/nvcc-shim"
  mkdir -p "$shim"
  ln -sf "$PWD/scripts/nvcc-check-shim.sh" "$shim/nvcc"
  export NVCC="$shim/nvcc" PATH="$shim:$PATH" CUDA_COMPUTE_CAP="${CUDA_COMPUTE_CAP:-80}"
  start=$SECONDS
  # The core library only (the GPU code is all there).
  "$CARGO" check -p quire --lib --features cuda
  echo "cuda check (no nvcc, kernels not compiled): $((SECONDS - start)) s"
  exit 0
fi

venv="${QUIRE_CUDA_VENV:-$HOME/.cache/quire/cuda13}"
# Pinned: CUDA 13.0 (driver ≥ 580), the oldest CUDA 13, for the widest driver range.
# The compiler and headers (what --check needs), then the libraries a build links.
wheels=(
  "nvidia-cuda-nvcc==13.0.88" "nvidia-nvvm==13.0.88" "nvidia-cuda-crt==13.0.88"
  "nvidia-cuda-runtime==13.0.96" "nvidia-cuda-cccl==13.0.85"
)
if [ "$mode" != check ]; then
  wheels+=("nvidia-cublas==13.0.2.14" "nvidia-curand==10.4.5.25" "nvidia-cuda-nvrtc==13.0.88")
fi

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
# Wheels installed before are not downloaded again (one spec a line in the stamp).
stamp="$venv/.quire-wheels"
missing=()
for w in "${wheels[@]}"; do
  grep -qxF "$w" "$stamp" 2>/dev/null || missing+=("$w")
done
if [ ${#missing[@]} -gt 0 ]; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${missing[@]}"
  printf '%s\n' "${missing[@]}" >> "$stamp"
fi
root="$("$venv/bin/python" -c 'import os, nvidia; print(os.path.join(list(nvidia.__path__)[0], "cu13"))')"
if [ ! -x "$root/bin/nvcc" ]; then
  echo "scripts/build-cuda.sh: no nvcc in $root/bin (the nvidia-cuda-nvcc wheel)" >&2
  exit 1
fi
# Linkers look for the unversioned names (-lcudart, -lcublas); the wheels ship only
# the versioned ones.
for lib in cudart cublas cublasLt curand nvrtc; do
  so="$(ls "$root/lib/lib$lib.so."* 2>/dev/null | head -n1 || true)"
  if [ -n "$so" ] && [ ! -e "$root/lib/lib$lib.so" ]; then
    ln -s "$(basename "$so")" "$root/lib/lib$lib.so"
  fi
done

# The link (not a check) needs the driver's libcuda.so, which only the NVIDIA driver
# installs and the wheels lack. Without a driver (a build machine), link against a stub
# of it, as the CUDA toolkit's own lib64/stubs/libcuda.so does: every driver entry point
# candle's cudarc declares, each returning CUDA_ERROR_STUB_LIBRARY, with the soname
# libcuda.so.1, so that the binary loads the real driver where it runs. The stub lives
# in its own folder, on the link path only (never LD_LIBRARY_PATH).
stubs=""
if [ "$mode" = build ] && [ ! -e "$root/lib/libcuda.so" ]; then
  drv="$(ldconfig -p 2>/dev/null | sed -n 's/.*libcuda\.so\.1 .*=> //p' | head -n1)"
  if [ -n "$drv" ]; then
    ln -s "$drv" "$root/lib/libcuda.so"
  else
    stubs="${CUDA_TARGET_DIR:-$PWD/target/cuda}/libcuda-stub"
    scripts/cuda-driver-stub.sh "$stubs"
  fi
fi
export CUDA_ROOT="$root" CUDA_PATH="$root" CUDA_HOME="$root" CUDA_TOOLKIT_ROOT_DIR="$root"
export NVCC="$root/bin/nvcc"
export PATH="$root/bin:$PATH"
export LIBRARY_PATH="$root/lib${stubs:+:$stubs}${LIBRARY_PATH:+:$LIBRARY_PATH}"
export LD_LIBRARY_PATH="$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUDA_COMPUTE_CAP="${CUDA_COMPUTE_CAP:-80}"
export CARGO_TARGET_DIR="${CUDA_TARGET_DIR:-$PWD/target/cuda}"

case "$mode" in
  env)
    for v in CUDA_ROOT CUDA_PATH CUDA_HOME CUDA_TOOLKIT_ROOT_DIR NVCC PATH LIBRARY_PATH \
             LD_LIBRARY_PATH CUDA_COMPUTE_CAP CARGO_TARGET_DIR; do
      printf 'export %s=%q\n' "$v" "${!v}"
    done
    ;;
  check)
    start=$SECONDS
    "$CARGO" check -p quire --lib --features cuda
    echo "cuda check: $((SECONDS - start)) s (nvcc $("$NVCC" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'), compute capability $CUDA_COMPUTE_CAP)"
    ;;
  build)
    "$CARGO" build --release -p quire-cli -p quire-bench -p quire-desktop --features quire/cuda
    echo "built with CUDA (compute capability $CUDA_COMPUTE_CAP) in $CARGO_TARGET_DIR/release:"
    echo "  quire, quire-bench, quire-desktop; to run them: export LD_LIBRARY_PATH=$root/lib"
    ;;
esac
