#!/bin/bash
# Start-up of quick triggers (docs/RESULTS.md, session 9): for each subject, the median of 3 runs of
# `grist hunt zoo/S/manifest.toml --no-witness -q` in wall and user+system CPU seconds, the hunt's summary line,
# and with --timings its breakdown. Usage: bash bench/startup_times.sh build/grist [--timings]
G=$(realpath "$1"); shift
cd "$(dirname "$0")/.." || exit 2
out=$(mktemp)
for s in 2a 2b 3 10 11b 16b 30 59 60 26 54; do
  walls=(); cpus=(); tim=""
  for k in 1 2 3; do
    res=$( { /usr/bin/time -f "TIME %e %U %S" "$G" hunt "zoo/$s/manifest.toml" --no-witness -q "$@" > "$out"; } 2>&1 )
    t=$(echo "$res" | grep '^TIME')
    walls+=("$(echo "$t" | awk '{print $2}')"); cpus+=("$(echo "$t" | awk '{print $3+$4}')")
    tim=$(echo "$res" | grep '^timings' | sed 's/timings: //')
  done
  w=$(printf "%s\n" "${walls[@]}" | sort -n | sed -n 2p); c=$(printf "%s\n" "${cpus[@]}" | sort -n | sed -n 2p)
  echo "$s wall=$w cpu=$c | $(grep 'triggered in' "$out") | $tim"
done
rm -f "$out"
