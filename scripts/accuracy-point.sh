#!/usr/bin/env bash
# One sysperf figure beside one peer command, alternated point by point for many rounds.
#
# scripts/accuracy.sh alternates whole blocks (every bandwidth point of sysperf, then every
# bw_mem command), 20-60 s a block, and this VM's speed drifts on that scale: a row of three
# rounds can come out 0.75 or 1.25 from the order alone. This script pairs ONE figure with ONE
# peer command, each side a few seconds, the order swapped every round, and prints the ratio
# of the medians with the range of the rounds' ratios (#45).
#
# usage: scripts/accuracy-point.sh [-r ROUNDS] [-c CPU] [-s SCALE] [-d DERIVED] POINT... -- PEER-COMMAND...
#   POINT     a suite point (`mem.bw-rd@16384`); several are run together, the first is the figure
#   -d NAME   the figure is the run's derived figure NAME instead (`ctx.s64k@8 less overhead`)
#   -s SCALE  the peer's figure is the last number it prints times SCALE (bw_mem prints MB/s:
#             1e6 for bytes per second; lat_ctx microseconds: 1000 for ns); default 1
#   -r ROUNDS (default 10), -c CPU (default 1): both sides run on CPU (sysperf --cpu, taskset)
# SP=path/to/sysperf (default target/release/sysperf). The peer runs with this environment
# (lmbench reads ENOUGH). Nothing else should run meanwhile.
# Example:
#   ENOUGH=100000 scripts/accuracy-point.sh -s 1e6 mem.bw-rd@16384 -- ~/lmbench/bin/bw_mem -N 5 16384 rd
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=10 cpu=1 scale=1 derived=""
while getopts "r:c:s:d:" o; do
  case $o in
    r) rounds=$OPTARG ;; c) cpu=$OPTARG ;; s) scale=$OPTARG ;; d) derived=$OPTARG ;;
    *) echo "usage: $0 [-r ROUNDS] [-c CPU] [-s SCALE] [-d DERIVED] POINT... -- PEER-COMMAND..." >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
points=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do points+=("$1"); shift; done
[ $# -gt 1 ] && [ ${#points[@]} -gt 0 ] || { echo "$0: give POINT... -- PEER-COMMAND..." >&2; exit 2; }
shift
SP=${SP:-target/release/sysperf}
[ -x "$SP" ] || { echo "$0: no $SP: cargo build --release, or SP=path/to/sysperf" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-$HOME}/accuracy-point.XXXXXX")
chmod 700 "$work"
trap 'rm -rf "$work"' EXIT
suites=()
for p in "${points[@]}"; do suites+=(--suite "$p"); done

sp_side() { # round: sysperf's figure
  "$SP" run "${suites[@]}" --cpu "$cpu" --db "$work/s.db" --no-reference --json >"$work/sp-$1.json" 2>/dev/null || true
  python3 - "$work/sp-$1.json" "${points[0]}" "$derived" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    print("nan"); sys.exit()
if sys.argv[3]:
    v = [x["value"] for x in d.get("derived", []) if x["name"] == sys.argv[3] and not x.get("na")]
else:
    v = [p["y"]["median"] for s in d.get("series", []) for p in s["points"]
         if p["result"]["id"] == sys.argv[2] and p.get("y")]
print(v[0] if v else "nan")
PY
}
peer_side() { # round: the peer's figure, the last number it printed, scaled
  taskset -c "$cpu" "$@" >"$work/peer.out" 2>&1 || true
  python3 - "$work/peer.out" "$scale" <<'PY'
import re, sys
nums = re.findall(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", open(sys.argv[1]).read())
print(float(nums[-1]) * float(sys.argv[2]) if nums else "nan")
PY
}

: >"$work/rounds"
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then s=$(sp_side "$r"); p=$(peer_side "$@")
  else p=$(peer_side "$@"); s=$(sp_side "$r"); fi
  echo "$s $p" >>"$work/rounds"
  echo "round $r ($([ $((r % 2)) -eq 1 ] && echo "sysperf first" || echo "peer first")): sysperf $s peer $p" >&2
done
python3 - "$work/rounds" "${derived:-${points[0]}}" "$*" <<'PY'
import math, statistics, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
ok = [(s, p) for s, p in rows if math.isfinite(s) and math.isfinite(p) and p > 0]
if not ok:
    print(f"{sys.argv[2]}: no round gave both figures"); sys.exit(1)
s, p = statistics.median(a for a, _ in ok), statistics.median(b for _, b in ok)
r = [a / b for a, b in ok]
print(f"{sys.argv[2]} {s:.4g} vs `{sys.argv[3]}` {p:.4g}: ratio of medians {s / p:.2f}, "
      f"rounds {min(r):.2f}-{max(r):.2f} ({len(ok)} of {len(rows)} rounds gave both)")
PY
