#!/usr/bin/env bash
# Install what Quire needs to build, run and test on Debian/Ubuntu, and fetch the
# default models. Safe to run again: it installs only what is missing.
#
#   scripts/setup.sh          system packages for the app + models
#   scripts/setup.sh --test   also the test tools (poppler, chromium, xvfb, webdriver, gdb)
#   scripts/setup.sh --package  also npm, for Tauri's bundler (`make package`)
set -euo pipefail
cd "$(dirname "$0")/.."

want_test=0
want_package=0
for a in "$@"; do
  case "$a" in
    --test) want_test=1 ;;
    --package) want_package=1 ;;
    *) echo "scripts/setup.sh: unknown option '$a'" >&2; exit 2 ;;
  esac
done

pkgs=(build-essential pkg-config curl file libssl-dev libwebkit2gtk-4.1-dev
      libxdo-dev libayatana-appindicator3-dev librsvg2-dev python3-pip
      fonts-noto-cjk
      # OCR for scanned pages: Tesseract's command line with English and Simplified
      # Chinese, and poppler's pdftoppm to render a page for it.
      tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim poppler-utils)
if [ "$want_test" = 1 ]; then
  pkgs+=(poppler-utils poppler-data chromium xvfb webkit2gtk-driver xauth python3-venv gdb)
fi
if [ "$want_test" = 1 ] || [ "$want_package" = 1 ]; then
  command -v npm >/dev/null || pkgs+=(nodejs npm)
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# python3-pip is only a fallback: any working pip will do
if python3 -m pip --version >/dev/null 2>&1; then
  missing=("${missing[@]/python3-pip}")
fi
missing=($(printf '%s\n' "${missing[@]}" | grep -v '^$' || true))
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The pinned toolchain (rust-toolchain.toml). If rustup lacks it but the installed
# stable is that version, link it rather than download.
want="$(sed -n 's/^channel *= *"\(.*\)"/\1/p' rust-toolchain.toml)"
if command -v rustup >/dev/null && ! rustup toolchain list | grep -q "^$want"; then
  if rustc +stable --version 2>/dev/null | grep -q " $want "; then
    rustup toolchain link "$want" "$(rustc +stable --print sysroot)"
  else
    rustup toolchain install "$want" --profile minimal -c rustfmt -c clippy
  fi
fi

# The official OpenAI Python client, for the test of Quire's OpenAI-compatible API
# (tests/openai/client.py), in a venv of the tests' own.
if [ "$want_test" = 1 ] && ! .venv-test/bin/python -c "import openai" 2>/dev/null; then
  echo "setup: installing the openai client into .venv-test (pip)"
  python3 -m venv .venv-test
  .venv-test/bin/pip install --quiet --disable-pip-version-check "openai==3.57.0"
fi

# llama-cpp-python's OpenAI-compatible server: the real model server the tests of the
# model-server backend (tests/it/remote_llm.rs) start on loopback, serving SmolLM2. PyPI
# has only its source, so pip builds llama.cpp (about 10 min on 2 cores, once; pip
# keeps the wheel). Its examples, tests and multimodal tools are not built.
if [ "$want_test" = 1 ] && ! .venv-llama/bin/python -c "import llama_cpp.server" 2>/dev/null; then
  echo "setup: building llama-cpp-python[server] into .venv-llama (pip, ~10 min the first time)"
  python3 -m venv .venv-llama
  CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAVA_BUILD=OFF -DLLAMA_CURL=OFF" \
  CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    .venv-llama/bin/pip install --quiet --disable-pip-version-check "llama-cpp-python[server]==0.3.36"
fi

# The gguf package (llama.cpp's own GGUF writer) for scripts/random_gguf.py, which writes
# the random-weight test models of the architectures no small real file exists for
# (qwen3, Llama 3, phi3), in a venv of its own; numpy pinned too, as the weights are
# drawn from its generator and the tests check each file's sha256.
if [ "$want_test" = 1 ] && ! .venv-gguf/bin/python -c "import gguf" 2>/dev/null; then
  echo "setup: installing gguf into .venv-gguf (pip)"
  python3 -m venv .venv-gguf
  .venv-gguf/bin/pip install --quiet --disable-pip-version-check "gguf==0.17.1" "numpy==2.4.6"
fi

# PostgreSQL 16 with pgvector for the tests of the PostgreSQL store, which
# scripts/pg-test-server.sh starts on loopback: the pgserver wheel ships both
# (initdb, postgres, pg_ctl, psql and the vector extension), as Debian has no pgvector
# package for its PostgreSQL.
if [ "$want_test" = 1 ] && ! .venv-pg/bin/python -c "import pgserver" 2>/dev/null; then
  echo "setup: installing PostgreSQL + pgvector (the pgserver wheel) into .venv-pg (pip)"
  python3 -m venv .venv-pg
  .venv-pg/bin/pip install --quiet --disable-pip-version-check "pgserver==0.1.4"
fi

# tauri-driver (a Rust crate) drives the desktop window in the E2E test.
if [ "$want_test" = 1 ] && ! command -v tauri-driver >/dev/null && [ ! -x "$HOME/.cargo/bin/tauri-driver" ]; then
  echo "setup: installing tauri-driver (cargo install)"
  cargo install tauri-driver --locked --quiet
fi

# Tests also check SmolLM2 (the smallest model, used wherever any model proves the
# point) and Gemma 3 270M against llama.cpp (their logits bit for bit), and
# re-embedding with a second embedding model (m3e-small), so the test set-up fetches
# those models too (and never the 1.1 GB 1.5B: --no-choose).
if [ "$want_test" = 1 ]; then
  models/fetch.sh --smollm2 --gemma --m3e --no-choose
  # The random-weight models (their tokenizers are copied from the files just
  # fetched), written again unless each is already the file the tests expect.
  # They go in a folder of their own, models/random/, so that the app's model list
  # (which reads models/ only) never offers them.
  mkdir -p models/random
  rm -f models/random-qwen3.gguf models/random-llama3.gguf models/random-phi3.gguf
  if ! (cd models/random && sha256sum --check --status ../../tests/data/random_gguf.sha256 2>/dev/null); then
    echo "setup: writing the random-weight test models into models/random/ (scripts/random_gguf.py)"
    .venv-gguf/bin/python scripts/random_gguf.py models/random
    (cd models/random && sha256sum --check --quiet ../../tests/data/random_gguf.sha256)
  fi
else
  models/fetch.sh
fi
