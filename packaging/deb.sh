#!/usr/bin/env bash
# Bundle Quire's .deb with Tauri's bundler (`tauri bundle`, @tauri-apps/cli pinned in
# packaging/package.json) from the binaries cargo already built: nothing is rebuilt.
#
#   packaging/deb.sh           target/release/{quire-desktop,quire}, the default models
#   packaging/deb.sh --debug   target/debug/{quire-desktop,quire} (the package test's)
#
# QUIRE_PACKAGE_MODELS="NAME ..." chooses which entries of models/ go into the
# package (default: the default LLM and embedding model, as src/models.rs names them;
# the package test ships the smallest LLM instead, to stay small).
#
# The package holds /usr/bin/quire-desktop (the window), /usr/bin/quire (the command
# line), the desktop entry and icons Tauri makes, and the models in
# /usr/share/quire/models, where both binaries look (src/models.rs). Its Depends line
# is Tauri's (libwebkit2gtk-4.1-0, libgtk-3-0). The .deb's path is all it prints on
# stdout (the bundler's progress goes to stderr).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"

profile=release
debug=()
case "${1:-}" in
  "") ;;
  --debug) profile=debug; debug=(--debug) ;;
  *) echo "packaging/deb.sh: unknown option '$1' (only --debug)" >&2; exit 2 ;;
esac

fail() { echo "packaging/deb.sh: $*" >&2; exit 1; }

const() { sed -n "s/^pub const $1: &str = \"\\(.*\\)\";/\\1/p" src/models.rs; }
models="${QUIRE_PACKAGE_MODELS:-$(const DEFAULT_LLM) $(const DEFAULT_EMBEDDER)}"
[ -n "${models// /}" ] || fail "no models to package"

target="${CARGO_TARGET_DIR:-$repo/target}"
bin="$target/$profile"
build="cargo build"
[ "$profile" = release ] && build="cargo build --release"
[ -x "$bin/quire-desktop" ] || fail "$bin/quire-desktop is missing: run \`$build -p quire-desktop\` first"
[ -x "$bin/quire" ] || fail "$bin/quire is missing: run \`$build -p quire-cli\` first"

command -v npm >/dev/null || fail "npm is missing (scripts/setup.sh --package installs it)"
pinned="$(node -p 'require("./packaging/package.json").devDependencies["@tauri-apps/cli"]')"
have="$(node -p 'require("./packaging/node_modules/@tauri-apps/cli/package.json").version' 2>/dev/null || true)"
if [ "$have" != "$pinned" ] || [ ! -x packaging/node_modules/.bin/tauri ]; then
  (cd packaging && npm ci --no-audit --no-fund --loglevel=error) >&2 \
    || fail "could not install @tauri-apps/cli (npm ci in packaging/)"
fi

# The bundle's settings, over src-tauri/tauri.conf.json (where bundling stays off, so
# that `cargo build -p quire-desktop` does no more than build).
conf="$(mktemp --suffix=.json)"
trap 'rm -f "$conf"' EXIT
files=("/usr/bin/quire" "$bin/quire")
for m in $models; do
  [ -e "models/$m" ] || fail "models/$m is missing: run \`models/fetch.sh\` (or \`make models\`) first"
  files+=("/usr/share/quire/models/$m" "$repo/models/$m")
done
python3 - "$conf" "${files[@]}" <<'PY'
import json, sys
out, pairs = sys.argv[1], sys.argv[2:]
files = dict(zip(pairs[0::2], pairs[1::2]))
json.dump({
    "bundle": {
        "active": True,
        "targets": ["deb"],
        "category": "Productivity",
        "shortDescription": "Chat with your own PDFs, offline",
        "longDescription": "Quire indexes your PDF documents locally and answers questions "
        "about them with a local LLM, showing the source passages. Nothing leaves the "
        "machine. Also installs the quire command line.",
        "linux": {"deb": {"section": "utils", "files": files}},
    },
}, open(out, "w"), indent=1)
PY

(cd src-tauri && ../packaging/node_modules/.bin/tauri bundle "${debug[@]}" --bundles deb \
  --config "$conf" --no-sign --no-binary-patching --ci) >&2 || fail "tauri bundle failed"

version="$(sed -n 's/^ *"version": *"\(.*\)",/\1/p' src-tauri/tauri.conf.json | head -n1)"
arch="$(dpkg --print-architecture 2>/dev/null || echo amd64)"
deb="$bin/bundle/deb/Quire_${version}_${arch}.deb"
[ -f "$deb" ] || fail "tauri bundle made no $deb (found: $(ls "$bin/bundle/deb" 2>/dev/null | tr '\n' ' '))"
# The bundler's staging copy of the package tree: as large as the models, not needed.
rm -rf "${deb%.deb}"
echo "$deb"
