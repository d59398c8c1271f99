#!/usr/bin/env bash
# Issue 36's gate: the test suite N times in a row on one commit, each run with
# `stress-ng --cpu 4` beside it. Run 1 is the whole CI (`CI=true bash .ci/run`),
# later runs `npx vitest run`. A fresh clone of REPO at REV goes to DIR.
#   scripts/busy-suite.sh [N=10] [REV=main] [REPO=.] [DIR=/tmp/busy-suite]
# Results: DIR.results/results.txt (one line per run), DIR.results/run-K.log.
# Touch DIR.results/pause to hold the loop between runs; remove it to go on.
set -u
n=${1:-10}; rev=${2:-main}; repo=$(cd "${3:-.}" && pwd); dir=${4:-/tmp/busy-suite}
out="$dir.results"
command -v stress-ng >/dev/null || { echo "needs stress-ng (apt-get install -y stress-ng)" >&2; exit 2; }
rm -rf "$dir" && git clone -q "$repo" "$dir" && git -C "$dir" checkout -q "$rev" || exit 2
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
  kill "$stress" 2>/dev/null; wait "$stress" 2>/dev/null
  # vitest's summary lines, without their colours; run 1's image tests come last.
  summary=$(sed 's/\x1b\[[0-9;]*m//g' "$out/run-$k.log" | grep -E '^ +(Test Files|Tests) ' | tr -s ' ' | tr '\n' ';')
  echo "$commit run $k rc=$rc secs=$(( $(date +%s) - start )) load=[$load] $summary" >> "$out/results.txt"
  sleep 20
done
