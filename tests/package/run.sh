#!/usr/bin/env bash
# The installer's test (`make test`'s last step). It bundles a .deb with
# packaging/deb.sh from the debug binaries `make test` built (with the smallest LLM,
# SmolLM2-135M, and the default embedding model, to stay small; `make package` ships
# the default models), installs it with dpkg (a previous install of the package is
# removed first), checks its files, its Depends and the installed `quire` command
# line (from a folder with no models/, without QUIRE_MODELS_DIR or QUIRE_MODELS_PATH:
# the packaged models must be found in /usr/share/quire/models), starts the installed
# /usr/bin/quire-desktop under Xvfb through tauri-driver, indexes a PDF and asks one
# question in the window (tests/package/installed.test.mjs, screenshot in
# artifacts/package/), then purges the package, leaving the machine as it was. Needs
# root (or sudo) for dpkg.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo="$(pwd)"
start=$SECONDS

LLM=SmolLM2-135M-Instruct.Q4_1.gguf
EMB=all-MiniLM-L6-v2
MODELS=/usr/share/quire/models

fail() { echo "tests/package: FAIL: $*" >&2; exit 1; }
say() { echo "tests/package: $*"; }

SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || fail "dpkg needs root: run as root or install sudo"
  SUDO=sudo
fi
for t in dpkg dpkg-deb xvfb-run node npm python3 WebKitWebDriver; do
  command -v "$t" >/dev/null || fail "$t is missing (scripts/setup.sh --test installs it)"
done
driver="${TAURI_DRIVER:-$HOME/.cargo/bin/tauri-driver}"
[ -x "$driver" ] || fail "tauri-driver is missing at $driver (scripts/setup.sh --test installs it)"
for m in "$LLM" "$EMB"; do
  [ -e "models/$m" ] || fail "models/$m is missing (scripts/setup.sh --test fetches it)"
done

say "bundling the .deb from target/debug (tauri bundle --debug)"
deb="$(QUIRE_PACKAGE_MODELS="$LLM $EMB" packaging/deb.sh --debug)"
[ -f "$deb" ] || fail "packaging/deb.sh printed no .deb ($deb)"
pkg="$(dpkg-deb -f "$deb" Package)"
say "$deb: package $pkg $(dpkg-deb -f "$deb" Version), $(du -m "$deb" | cut -f1) MB"

depends="$(dpkg-deb -f "$deb" Depends)"
for d in libwebkit2gtk-4.1-0 libgtk-3-0; do
  [[ ", $depends," == *", $d"[\ ,]* ]] || fail "Depends lacks $d: $depends"
done

tmp="$(mktemp -d)"
installed=0
cleanup() {
  if [ "$installed" = 1 ]; then
    say "purging $pkg"
    $SUDO dpkg --purge "$pkg" >/dev/null || echo "tests/package: could not purge $pkg" >&2
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q ' installed$'; then
  say "removing the $pkg already installed first"
  $SUDO dpkg --purge "$pkg" >/dev/null
fi
installed=1
$SUDO dpkg -i "$deb" >/dev/null || fail "dpkg -i $deb failed"
dpkg-query -W -f='${Status}' "$pkg" | grep -q 'install ok installed' || fail "$pkg is not installed after dpkg -i"

# The files: the two binaries, Tauri's desktop entry and icons, the models.
dpkg -L "$pkg" > "$tmp/files"
for f in /usr/bin/quire-desktop /usr/bin/quire "$MODELS/$LLM" "$MODELS/$EMB/config.json" \
         "$MODELS/$EMB/tokenizer.json" "$MODELS/$EMB/model.safetensors"; do
  grep -qxF "$f" "$tmp/files" || fail "$f is not in the package (dpkg -L $pkg)"
  [ -e "$f" ] || fail "$f is listed but not on disk"
done
[ -x /usr/bin/quire-desktop ] && [ -x /usr/bin/quire ] || fail "the installed binaries are not executable"
desktop="$(grep -m1 '^/usr/share/applications/.*\.desktop$' "$tmp/files")" || fail "no desktop entry in the package"
grep -qx 'Exec=quire-desktop' "$desktop" || fail "$desktop does not run quire-desktop: $(cat "$desktop")"
icon="$(sed -n 's/^Icon=//p' "$desktop")"
grep -q "^/usr/share/icons/hicolor/.*/apps/$icon\.png$" "$tmp/files" || fail "no icon $icon in the package"
cmp -s "$MODELS/$LLM" "models/$LLM" || fail "$MODELS/$LLM differs from models/$LLM"
for b in /usr/bin/quire-desktop /usr/bin/quire; do
  if ldd "$b" | grep -q 'not found'; then fail "$b misses libraries: $(ldd "$b" | grep 'not found')"; fi
done
say "installed: $(grep -c . "$tmp/files") paths; $desktop, icon $icon, models in $MODELS"

# The command line, from a folder with no models/, without QUIRE_MODELS_DIR or
# QUIRE_MODELS_PATH: the packaged models it lists must be the installed ones.
mkdir -p "$tmp/cwd" "$tmp/home"
run_cli() { (cd "$tmp/cwd" && env -u QUIRE_MODELS_DIR -u QUIRE_MODELS_PATH -u XDG_DATA_HOME HOME="$tmp/home" /usr/bin/quire "$@"); }
version="$(run_cli --version)" || fail "/usr/bin/quire --version failed"
[ "$version" = "quire $(dpkg-deb -f "$deb" Version)" ] || fail "/usr/bin/quire --version: $version"
run_cli models --json > "$tmp/models.json" || fail "/usr/bin/quire models failed"
python3 - "$tmp/models.json" "$MODELS" "$LLM" "$EMB" <<'PY' || fail "/usr/bin/quire models does not use the installed models"
import json, os, sys
view, models, llm, emb = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], sys.argv[4]
got = {m["name"]: m for m in view["llms"] + view["embedders"]}
for name in (llm, emb):
    m = got.get(name)
    assert m, f"{name} not listed: {sorted(got)}"
    assert m["path"] == os.path.join(models, name), f"{name} found at {m['path']}, not in {models}"
    assert not m.get("error"), f"{name}: {m['error']}"
print(f"tests/package: /usr/bin/quire models: {llm} and {emb} from {models}")
PY
say "$version"

# The window: the installed app, one question.
QUIRE_INSTALLED_APP=/usr/bin/quire-desktop QUIRE_INSTALLED_MODELS="$MODELS" \
  QUIRE_PACKAGE_LLM="$LLM" QUIRE_PACKAGE_EMBEDDER="$EMB" TAURI_DRIVER="$driver" \
  xvfb-run -a node --test --test-concurrency=1 tests/package/installed.test.mjs \
  || fail "the installed app's window test failed"

say "passed in $((SECONDS - start)) s"
