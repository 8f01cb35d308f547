#!/usr/bin/env bash
# Planted changes of known size (#30; a benchmark, not a test): how often a paired `sysperf
# ab` finds a slowdown of `syscall` of about 2, 5 and 10%, and in how much machine time.
#
# The change is `ab --switch seccomp-checks=N`: every worker runs a seccomp filter that reads
# a system call's argument (the kernel cannot cache its verdict), the off side's with one
# check, the on side's with N more, so both pay for entering a filter (about 40% of getpid on
# this VM) and the slowdown is the N checks, growing with N. Its size is not assumed: one long
# high-precision paired measurement at N0 checks gives the cost of a check, N for each target
# size follows, and another long measurement at each N establishes the true size (its ratio
# and interval are printed). Then TRIES tries of a default `ab` (30 rounds of 15 ms) for each design, each
# counted as found when its verdict is "slower" (the whole interval above +2%, the default
# noise band) and when it is significant (the whole interval above 1); and, for each target,
# TRIES tries of `ab --precision P` to see the machine time a significant finding takes.
# Prints one line per measurement.
#
# Usage: [TARGETS="2 5 10"] [TRIES=10] [PTRIES=TRIES] [DESIGNS="paired duet"] [N0=150]
#        [CAL_PCT=0.3] [CAL_TIME=180] [PRECISION=1] [MAX_TIME=300] [SP=path/to/sysperf]
#        scripts/planted.sh
# (PTRIES: the tries of `ab --precision` per target, the long part; 0 leaves them out.)
set -euo pipefail
cd "$(dirname "$0")/.."
TARGETS=${TARGETS:-"2 5 10"}
TRIES=${TRIES:-10}
PTRIES=${PTRIES:-$TRIES}
DESIGNS=${DESIGNS:-"paired duet"}
N0=${N0:-150}
CAL_PCT=${CAL_PCT:-0.3}
CAL_TIME=${CAL_TIME:-180}
PRECISION=${PRECISION:-1}
MAX_TIME=${MAX_TIME:-300}
if [ -z "${SP:-}" ]; then
  cargo build --release -q
  SP=./target/release/sysperf
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
db="$work/p.db"
n=0
# ab ARGS...: one `sysperf ab syscall ARGS --json`, stored as $work/$n.json with its seconds
# in $work/times (not in a subshell: n counts every call).
ab() {
  n=$((n + 1))
  local t0=$SECONDS
  "$SP" ab syscall "$@" --json --label "p$n" --db "$db" > "$work/$n.json" 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
  echo "$n $((SECONDS - t0))" >> "$work/times"
}
# size N: the ratio, interval and seconds of call N, as "+x.xx% [lo, hi] (S s)".
size() {
  python3 - "$work" "$1" <<'PY'
import json, sys
work, k = sys.argv[1], sys.argv[2]
r = json.load(open(f"{work}/{k}.json"))["rows"][0]["ratios"][1]
secs = dict(l.split() for l in open(f"{work}/times"))[k]
lo, hi = r["ci"]
print(f"{(r['ratio'] - 1) * 100:.2f}% [{(lo - 1) * 100:.2f}, {(hi - 1) * 100:.2f}] ({r['rounds']} rounds, {secs} s)")
PY
}

ab --switch "seccomp-checks=$N0" --precision "$CAL_PCT" --max-time "$CAL_TIME"
r0=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rows"][0]["ratios"][1]["ratio"])' "$work/$n.json")
echo "planted.sh: calibration: seccomp-checks=$N0 slows syscall by $(size "$n") (paired, --precision $CAL_PCT)"
for t in $TARGETS; do
  N=$(python3 -c "import math; print(max(1, min(2046, round($N0 * math.log1p($t / 100) / math.log($r0)))))")
  ab --switch "seccomp-checks=$N" --precision "$CAL_PCT" --max-time "$CAL_TIME"
  echo "planted.sh: target $t%: seccomp-checks=$N, true size $(size "$n") (paired, --precision $CAL_PCT)"
  for design in $DESIGNS; do
    duet=()
    [ "$design" = duet ] && duet=(--duet)
    first=$((n + 1))
    for _ in $(seq 1 "$TRIES"); do ab --switch "seccomp-checks=$N" "${duet[@]}" >/dev/null; done
    python3 - "$work" "$first" "$n" "$t" "$N" "$design" <<'PY'
import json, statistics, sys
work, first, last, t, N, design = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
times = dict(l.split() for l in open(f"{work}/times"))
slower = sig = 0; widths = []; secs = []
for i in range(first, last + 1):
    r = json.load(open(f"{work}/{i}.json"))["rows"][0]["ratios"][1]
    slower += r["verdict"] == "slower"
    sig += r.get("significant") == "slower"
    if r["ci"]:
        widths.append(100 * (r["ci"][1] - r["ci"][0]) / 2 / r["ratio"])
    secs.append(int(times[str(i)]))
k = last - first + 1
print(f"planted.sh: target {t}% (seccomp-checks={N}), {design}, default ab (30 rounds of 15 ms): slower in {slower} of {k}, "
      f"significant in {sig} of {k}; median half-width {statistics.median(widths):.1f}%; {statistics.median(secs)} s a try")
PY
  done
  [ "$PTRIES" = 0 ] && continue
  first=$((n + 1))
  for _ in $(seq 1 "$PTRIES"); do ab --switch "seccomp-checks=$N" --precision "$PRECISION" --max-time "$MAX_TIME" >/dev/null; done
  python3 - "$work" "$first" "$n" "$t" "$N" "$PRECISION" <<'PY'
import json, statistics, sys
work, first, last, t, N, prec = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
times = dict(l.split() for l in open(f"{work}/times"))
sig = slower = 0; secs = []; widths = []
for i in range(first, last + 1):
    r = json.load(open(f"{work}/{i}.json"))["rows"][0]["ratios"][1]
    sig += r.get("significant") == "slower"
    slower += r["verdict"] == "slower"
    secs.append(int(times[str(i)]))
    if r["ci"]:
        widths.append(100 * (r["ci"][1] - r["ci"][0]) / 2 / r["ratio"])
k = last - first + 1
print(f"planted.sh: target {t}% (seccomp-checks={N}), paired, --precision {prec}: significant in {sig} of {k}, slower (beyond +-2%) in {slower} of {k}; "
      f"median half-width reached {statistics.median(widths):.1f}%; {statistics.median(secs)} s a try (range {min(secs)}-{max(secs)})")
PY
done
