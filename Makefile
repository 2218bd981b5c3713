# Quire: the commands of the README.
#   make run    set up, build, and open the desktop window (or serve the UI without a display)
#   make test   set up, build, and run the whole test suite
#   make package  set up, build in release, and bundle the .deb installer (prints its path)
SHELL := /bin/bash
CARGO ?= cargo

.PHONY: run test package setup setup-test setup-package models build lint fmt build-cuda check-cuda check-cuda-nvcc

run: setup
	$(CARGO) build --release --workspace
	@if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ]; then \
	  exec ./target/release/quire-desktop; \
	else \
	  echo "No display found (DISPLAY/WAYLAND_DISPLAY unset): serving the same UI to a browser instead."; \
	  exec ./target/release/quire serve; \
	fi

# Every step is timed (scripts/step.sh) and the run ends with the table and the total
# (scripts/ci-budget), which fails past 75 minutes: CI stops at 90 and then lands
# nothing. (It was 60 until a fresh clone on a 2-core AMD EPYC Zen 3, AVX2 without
# AVX-512, took 64: build 18, Rust tests 27, browser tests 13 minutes.) One build
# for the whole workspace: the core has one feature set (the HTTP server is the
# quire-cli package's, not a feature), so `quire`, `quire-bench` and
# `quire-desktop` share every compiled crate, and --all-targets builds the tests with
# the same features, so the test step compiles nothing more. The Rust tests run under
# a watchdog: a hang ends after 40 minutes (a normal run takes about 27 on that Zen 3,
# less on AVX-512 CPUs) with the tests still running and their threads' stacks
# printed. The fuzz target (fuzz/, a workspace of its own so that libFuzzer stays out
# of the main build) is built, not fuzzed, so
# that a change to the extractor's API cannot break it unseen: a plain debug build in
# fuzz/target, no instrumentation, no nightly (~2 min from cold on 2 busy cores, most
# of it lopdf again and libFuzzer's C++; seconds when warm). Fuzzing: fuzz/README.md.
#
# Not in `make test`, each for its reason:
#   check-cuda   the CUDA code's type check (a cargo check of the core and candle with
#                `--features cuda` in a target dir of its own: ~5 min on 2 cores, all
#                of it compiling what no test then runs; run it after touching GPU code)
STEP := scripts/step.sh
test:
	@$(STEP) --reset
	$(STEP) setup scripts/setup.sh --test
	$(STEP) fmt $(CARGO) fmt --all -- --check
	$(STEP) build $(CARGO) build --workspace --all-targets
	$(STEP) fuzz-build $(CARGO) build --manifest-path fuzz/Cargo.toml --bins
	$(STEP) test-rust scripts/watchdog.sh 2400 $(CARGO) test --workspace --no-fail-fast
	$(STEP) e2e-browser bash -c 'cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error && npm test'
	$(STEP) e2e-window bash -c 'cd tests/e2e && xvfb-run -a npm run test:tauri'
	$(STEP) package tests/package/run.sh
	@scripts/ci-budget

# The .deb installer, bundled by Tauri's bundler from the release binaries: the desktop
# app, the quire command line, a desktop entry and icons, and the default models in
# /usr/share/quire/models (packaging/deb.sh).
package: setup-package
	$(CARGO) build --release -p quire-cli -p quire-desktop
	packaging/deb.sh

setup:
	scripts/setup.sh

setup-test:
	scripts/setup.sh --test

setup-package:
	scripts/setup.sh --package

models:
	models/fetch.sh

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# CUDA (NVIDIA GPUs), no toolkit needed: NVIDIA's CUDA 13 compiler and libraries from
# PyPI go into a venv (~/.cache/quire/cuda13), then quire, quire-bench and quire-desktop
# are built with --features cuda into target/cuda/release (CUDA_COMPUTE_CAP=89 for an
# RTX 40 / L4; 80 by default). check-cuda: the CUDA code type-checked without the
# wheels (scripts/nvcc-check-shim.sh stands in for nvcc; a check never links);
# check-cuda-nvcc: the same with the real nvcc from the wheels.
build-cuda:
	scripts/build-cuda.sh

check-cuda:
	scripts/build-cuda.sh --check-fast

check-cuda-nvcc:
	scripts/build-cuda.sh --check
