#!/usr/bin/env bash
# Time one step of `make test` and record it, so that the run ends with a table of
# where its time went (scripts/ci-budget prints it).
#
#   scripts/step.sh --reset            start a new record (the first step of a run)
#   scripts/step.sh NAME command [args...]
#                                      run the command; append NAME, its seconds and
#                                      its exit status to the record; exit with its
#                                      status (a failed step stops make, as before)
#
# The record is $QUIRE_STEP_TIMES, default target/make-test-steps.tsv.
set -uo pipefail
cd "$(dirname "$0")/.."
record="${QUIRE_STEP_TIMES:-target/make-test-steps.tsv}"
mkdir -p "$(dirname "$record")"
if [ "${1:-}" = --reset ]; then
  printf 'step\tseconds\tstatus\n' > "$record"
  date +%s > "$record.start"
  exit 0
fi
[ $# -ge 2 ] || { echo "usage: scripts/step.sh NAME command [args...]" >&2; exit 2; }
name=$1
shift
[ -f "$record" ] || printf 'step\tseconds\tstatus\n' > "$record"
echo "== make test: $name: $*"
start=$(date +%s)
"$@"
rc=$?
secs=$(( $(date +%s) - start ))
printf '%s\t%s\t%s\n' "$name" "$secs" "$rc" >> "$record"
echo "== make test: $name: $secs s$( [ $rc = 0 ] || echo ", FAILED (exit $rc)")"
exit $rc
