#!/usr/bin/env bash
# Issue 36's gate: the test suite N times in a row on one commit, each run with
# `stress-ng --cpu 4` beside it. Run 1 is the whole CI (`CI=true bash .ci/run`),
# later runs `npx vitest run`. A fresh clone of REPO at REV goes to DIR.
#   scripts/busy-suite.sh [N=10] [REV=main] [REPO=.] [DIR=/tmp/busy-suite]
# Results: DIR.results/results.txt (one line per run), DIR.results/run-K.log.
# Touch DIR.results/pause to hold the loop between runs; remove it to go on.
# DIR is deleted and cloned again: it must not be, or hold, the repository, and a DIR that exists
# must be an earlier run's (it has the file .busy-suite).
set -u
n=${1:-10}; rev=${2:-main}
repo=$(git -C "${3:-.}" rev-parse --show-toplevel) || exit 2
dir=${4:-/tmp/busy-suite}; dir=${dir%/}
[ -n "$dir" ] || { echo "DIR must not be /" >&2; exit 2; }
case "$dir" in /*) ;; *) dir="$PWD/$dir" ;; esac
out="$dir.results"
command -v stress-ng >/dev/null || { echo "needs stress-ng (apt-get install -y stress-ng)" >&2; exit 2; }
case "$repo/" in "$dir"/*) echo "DIR $dir is or holds the repository" >&2; exit 2 ;; esac
if [ -e "$dir" ] && [ ! -e "$dir/.busy-suite" ]; then
  echo "DIR $dir exists and is no earlier run's: name another" >&2; exit 2
fi
stress=""
# Stopped (a signal, the end of a session): no stress-ng left loading the machine for two hours.
trap '[ -n "$stress" ] && kill "$stress" 2>/dev/null' EXIT
trap 'exit 130' INT TERM HUP
rm -rf "$dir" && git clone -q "$repo" "$dir" && git -C "$dir" checkout -q "$rev" || exit 2
touch "$dir/.busy-suite"
mkdir -p "$out"
commit=$(git -C "$dir" rev-parse --short HEAD)
echo "# $(date -u +%FT%TZ) $commit, $n runs, stress-ng --cpu 4" >> "$out/results.txt"
for k in $(seq 1 "$n"); do
  while [ -e "$out/pause" ]; do sleep 10; done
  stress-ng --cpu 4 --timeout 7200 >/dev/null 2>&1 & stress=$!
  start=$(date +%s)
  if [ "$k" = 1 ]; then
    (cd "$dir" && CI=true bash .ci/run) > "$out/run-$k.log" 2>&1
  else
    (cd "$dir" && npx vitest run) > "$out/run-$k.log" 2>&1
  fi
  rc=$?
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  kill "$stress" 2>/dev/null; wait "$stress" 2>/dev/null; stress=""
  # vitest's summary lines, without their colours; run 1's image tests come last.
  summary=$(sed 's/\x1b\[[0-9;]*m//g' "$out/run-$k.log" | grep -E '^ +(Test Files|Tests) ' | tr -s ' ' | tr '\n' ';')
  echo "$commit run $k rc=$rc secs=$(( $(date +%s) - start )) load=[$load] $summary" >> "$out/results.txt"
  if [ "$k" -lt "$n" ]; then sleep 20; fi
done
