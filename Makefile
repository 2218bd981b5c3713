# Quire: the commands of the README.
#   make run    set up, build, and open the desktop window (or serve the UI without a display)
#   make test   set up, build, and run the whole test suite
#   make package  set up, build in release, and bundle the .deb installer (prints its path)
SHELL := /bin/bash
CARGO ?= cargo

.PHONY: run test package setup setup-test setup-package models build lint fmt build-cuda check-cuda

run: setup
	$(CARGO) build --release -p quire -p quire-bench
	$(CARGO) build --release -p quire-desktop
	@if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ]; then \
	  exec ./target/release/quire-desktop; \
	else \
	  echo "No display found (DISPLAY/WAYLAND_DISPLAY unset): serving the same UI to a browser instead."; \
	  exec ./target/release/quire serve; \
	fi

# The desktop app is built in a cargo invocation of its own: cargo unifies the features
# of the packages built together, and the window must get the core without its HTTP
# server (no axum in quire-desktop). Its tests run the same way: one `cargo test
# --workspace` would unify all three packages' features into a third set and rebuild
# tokio, candle, tauri and the rest for it (10 minutes on 2 cores; split, 2). The Rust
# tests run under a watchdog: a hang ends after 30 minutes (a normal run takes 5 to 10)
# with the tests still running and their threads' stacks printed.
test: setup-test
	$(CARGO) fmt --all -- --check
	$(CARGO) build -p quire -p quire-bench
	$(CARGO) build -p quire-desktop
	scripts/build-cuda.sh --check-fast
	scripts/watchdog.sh 1800 $(CARGO) test -p quire -p quire-bench
	$(CARGO) test -p quire-desktop
	cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error && npm test
	cd tests/e2e && xvfb-run -a npm run test:tauri
	tests/package/run.sh

# The .deb installer, bundled by Tauri's bundler from the release binaries: the desktop
# app, the quire command line, a desktop entry and icons, and the default models in
# /usr/share/quire/models (packaging/deb.sh). The desktop app builds on its own, as in
# `test`.
package: setup-package
	$(CARGO) build --release -p quire
	$(CARGO) build --release -p quire-desktop
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
# RTX 40 / L4; 80 by default). check-cuda: the same code checked with the real nvcc.
build-cuda:
	scripts/build-cuda.sh

check-cuda:
	scripts/build-cuda.sh --check
