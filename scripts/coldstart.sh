#!/bin/bash
# Cold start of the release desktop app: seconds from exec to a mapped top-level
# window titled "Quire". Needs a display (run under `xvfb-run -a` without one) and
# xwininfo (x11-utils). Usage: scripts/coldstart.sh [BINARY] [RUNS]
set -u
BIN=${1:-target/release/quire-desktop}
RUNS=${2:-3}
for _ in $(seq 1 "$RUNS"); do
  D=$(mktemp -d)
  start=$(date +%s.%N)
  QUIRE_DATA_DIR=$D "$BIN" >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 3000); do
    if xwininfo -root -tree 2>/dev/null | grep -q '"Quire'; then
      end=$(date +%s.%N)
      echo "window after $(echo "$end - $start" | bc) s"
      break
    fi
    sleep 0.01
  done
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  rm -rf "$D"
done
