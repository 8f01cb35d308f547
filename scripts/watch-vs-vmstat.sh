#!/usr/bin/env bash
# sysperf watch beside procps vmstat, for a human: starts both at the same instant on the same
# INTERVAL and COUNT and prints, line by line, each tool's in, cs, us, sy, id, wa and st.
# Interval lines should agree to within a few percent (the two tools read the counters a few
# milliseconds apart); tests/it/watch_vs_peers.rs checks the same with stated tolerances.
#
# The first line (since boot) differs on purpose for in and cs: procps divides the counts since
# boot by the CPU time of all CPUs (uptime x CPUs), sysperf by the uptime.
#
# Usage: scripts/watch-vs-vmstat.sh [INTERVAL [COUNT]]    (default: 1 5)
# Needs: vmstat (apt-get install procps); builds sysperf with cargo unless $SYSPERF is set.
set -euo pipefail
cd "$(dirname "$0")/.."

interval=${1:-1}
count=${2:-5}
command -v vmstat >/dev/null 2>&1 || {
  echo "watch-vs-vmstat.sh: vmstat is missing; install it with: apt-get install procps" >&2
  exit 1
}
if [ -z "${SYSPERF:-}" ]; then
  cargo build --release -q
  SYSPERF=./target/release/sysperf
fi

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

LC_ALL=C vmstat "$interval" "$count" >"$tmp/vmstat" &
pids+=($!)
"$SYSPERF" watch "$interval" "$count" >"$tmp/sysperf" &
pids+=($!)
wait "${pids[@]}"
pids=()

# Both outputs have a group line, a column line, then data; columns are found by name.
awk -v cols="in cs us sy id wa st" '
  FNR == 1 { file++ ; next }
  FNR == 2 { for (i = 1; i <= NF; i++) idx[file, $i] = i; next }
  { n = FNR - 2; for (i = 1; i <= NF; i++) val[file, n, i] = $i; if (n > rows) rows = n }
  END {
    split(cols, c, " ")
    printf "%-6s", "line"
    for (k = 1; k in c; k++) printf "  %15s", c[k] " (vm/sp)"
    printf "\n"
    for (n = 1; n <= rows; n++) {
      printf "%-6s", (n == 1 ? "boot" : n - 1)
      for (k = 1; k in c; k++) {
        a = val[1, n, idx[1, c[k]]]; b = val[2, n, idx[2, c[k]]]
        printf "  %15s", a "/" b
      }
      printf "\n"
    }
  }' "$tmp/vmstat" "$tmp/sysperf"
echo
echo "vm = vmstat (procps), sp = sysperf watch; 'boot' is since boot (in and cs differ by design, see above)"
