#!/usr/bin/env bash
# Run a command with a time limit, for CI: a test that hangs should fail with the
# names of the tests still running and every thread's stack, not spend the whole CI
# budget in silence. The limit is far above a normal run (it only ever ends a hang).
#
#   scripts/watchdog.sh SECONDS command [args...]
#
# Past SECONDS: the command's process tree is listed, each test binary still running
# is shown thread by thread (gdb, when installed: `scripts/setup.sh --test` installs
# it), then the tree is killed and this exits 124, as timeout(1) does. Needs bash 5.1
# (`wait -n -p`).
set -uo pipefail

limit=$1
shift
"$@" &
pid=$!
sleep "$limit" >/dev/null 2>&1 </dev/null &
sleeper=$!

descendants() {
  local p
  for p in $(pgrep -P "$1"); do
    echo "$p"
    descendants "$p"
  done
}

# A background command ignores Ctrl-C (no job control here): pass it on to the tree.
# shellcheck disable=SC2046
trap 'kill -TERM "$pid" $(descendants "$pid") "$sleeper" 2>/dev/null; exit 130' INT TERM

wait -n -p ended "$pid" "$sleeper"
status=$?
if [ "${ended:-}" = "$pid" ]; then
  kill "$sleeper" 2>/dev/null
  exit "$status"
fi

echo
echo "watchdog: '$*' still runs after ${limit} s; what it runs now:"
tree=$(descendants "$pid")
# shellcheck disable=SC2086
ps -o pid,ppid,etimes,time,stat,args -p "$pid" $tree 2>/dev/null
for p in "$pid" $tree; do
  exe=$(readlink "/proc/$p/exe" 2>/dev/null) || continue
  case "$exe" in
    */target/*/deps/*)
      echo
      echo "watchdog: threads of $p ($exe):"
      if command -v gdb >/dev/null; then
        timeout 120 gdb -p "$p" -batch -nx -ex "set pagination off" \
          -ex "thread apply all bt 16" 2>/dev/null |
          grep -E '^(Thread|#)' | cut -c1-240 | head -800
      else
        for t in /proc/"$p"/task/*; do
          echo "  $(cat "$t/comm" 2>/dev/null): $(cat "$t/wchan" 2>/dev/null)"
        done
      fi
      ;;
  esac
done
# shellcheck disable=SC2086
kill -KILL "$pid" $tree 2>/dev/null
wait "$pid" 2>/dev/null
echo "watchdog: stopped after ${limit} s"
exit 124
