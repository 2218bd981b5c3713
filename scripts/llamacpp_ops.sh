#!/usr/bin/env bash
# llama.cpp's own per-operation benchmark, `test-backend-ops`, for `quire-bench matmul
# --peer-ops`: the llama.cpp that llama-cpp-python 0.3.36 vendors (the peer of every
# other bench here), with scripts/llamacpp-ops-shapes.patch, which lets the bench name
# the products to time (QUIRE_MUL_MAT_SHAPES) and the thread count (QUIRE_OPS_THREADS).
#
#   scripts/llamacpp_ops.sh DIR [CMAKE_ARG...]
#
# Fetches the source from PyPI into DIR (once), builds the one target in DIR/build
# (native by default; e.g. `-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON
# -DGGML_F16C=ON -DGGML_AVX512=OFF` for an AVX2-only build, in DIR of its own) and
# prints the binary's path. Needs a C++ compiler; cmake and ninja come from PyPI.
set -euo pipefail
[ $# -ge 1 ] || { sed -n 2,12p "$0"; exit 2; }
dir=$(mkdir -p "$1" && cd "$1" && pwd)
shift
root=$(cd "$(dirname "$0")/.." && pwd)
src="$dir/llama.cpp"
if [ ! -f "$src/.quire-patched" ]; then
  rm -rf "$src" "$dir/llama_cpp_python-0.3.36"
  # The source archive from PyPI's simple index, checked against its sha256 (`pip
  # download` would build its metadata first: minutes of cmake).
  python3 - "$dir" <<'PY'
import hashlib, re, sys, urllib.request
index = urllib.request.urlopen("https://pypi.org/simple/llama-cpp-python/", timeout=60).read().decode()
url, sha = next((u, h) for u, h in re.findall(r'href="([^"#]+/llama_cpp_python-0\.3\.36\.tar\.gz)#sha256=([0-9a-f]+)"', index))
data = urllib.request.urlopen(url, timeout=600).read()
if hashlib.sha256(data).hexdigest() != sha:
    sys.exit(f"{url}: sha256 mismatch")
open(f"{sys.argv[1]}/llama_cpp_python-0.3.36.tar.gz", "wb").write(data)
PY
  tar xzf "$dir/llama_cpp_python-0.3.36.tar.gz" -C "$dir"
  mv "$dir/llama_cpp_python-0.3.36/vendor/llama.cpp" "$src"
  rm -rf "$dir/llama_cpp_python-0.3.36"
  patch -d "$src" -p1 --quiet < "$root/scripts/llamacpp-ops-shapes.patch"
  touch "$src/.quire-patched"
fi
if [ ! -x "$dir/tools/bin/cmake" ]; then
  python3 -m venv "$dir/tools"
  "$dir/tools/bin/pip" install --quiet cmake ninja
fi
export PATH="$dir/tools/bin:$PATH"
cmake -S "$src" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
  -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF \
  -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF "$@" >&2
cmake --build "$dir/build" --target test-backend-ops -j "$(nproc)" >&2
echo "$dir/build/bin/test-backend-ops"
