#!/usr/bin/env bash
# Observation overhead (a measurement, not a test): what `sysperf run --observe` costs each
# benchmark. For every benchmark it calibrates once (`sysperf run --trials 1`), then runs
# ROUNDS rounds of three trials at that iteration count in sysperf's own worker, pinned to one
# CPU, back to back in alternating order (P O F, then F O P, ...):
#   P  plain;
#   O  observed as every trial of `run --observe` is: system-wide /proc deltas, read just
#      outside the timed region (this is what the counted trials pay);
#   F  observed with perf counters too, as the warm-up trial of `run --observe` is (and every
#      trial of `run --observe --quick`): four inherited software events on the worker and its
#      children, whose bookkeeping on every context switch, fork and exit lands in the timed
#      region. This is why they are kept out of the counted trials.
# A ratio compares trials a fraction of a second apart, so slow changes of the machine's load
# cancel; a benchmark's overhead is the median ratio over the rounds. Two figures each: wall
# time (what sysperf reports) and CPU time (user + system of the worker and its children: where
# observation's own work lands, and not inflated by other processes competing for the CPU; on a
# busy machine trust it). Then the medians over the suite.
#
# Usage: scripts/observe-overhead.sh [ROUNDS] [BENCHMARK...]
#   ROUNDS: default 10; default selection: the whole core suite (49 benchmarks, about 5
#   minutes on 2 cores). CPU=N pins to CPU N (default: the last CPU).
# Needs: python3.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v python3 >/dev/null 2>&1 || { echo "observe-overhead.sh: needs python3 (apt-get install python3)" >&2; exit 1; }
ROUNDS=${1:-10}
shift || true
case "$ROUNDS" in ''|*[!0-9]*|0) echo "observe-overhead.sh: ROUNDS must be a positive number, not '$ROUNDS'" >&2; exit 2;; esac

cargo build --release -q
SP=./target/release/sysperf
CPU=${CPU:-$(python3 -c 'import os; print(max(os.sched_getaffinity(0)))')}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "observe-overhead: $ROUNDS rounds per benchmark on CPU $CPU; $(uname -r); load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$SP" run --db "$work/db" --cpu "$CPU" --trials 1 --json "$@" >"$work/calibration.json"

python3 - "$SP" "$work/calibration.json" "$ROUNDS" "$CPU" <<'PY'
import json, statistics, subprocess, sys
sp, cal, rounds, cpu = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
run = json.load(open(cal))
MODES = {"P": (False, False), "O": (True, False), "F": (True, True)}

def trial(bench, iterations, mode):
    observe, perf = MODES[mode]
    req = {"id": bench, "iterations": iterations, "pin": [cpu], "child_cpu": None,
           "observe": observe, "perf": perf}
    out = subprocess.run([sp, "__worker", json.dumps(req)], capture_output=True, text=True)
    rep = json.loads(out.stdout)
    if rep.get("error"):
        raise RuntimeError(f"{bench}: {rep['error']}")
    u = rep["usage"]
    return rep["wall_ns"], u["user_ns"] + u["sys_ns"]

def pct(v):
    return 100 * (statistics.median(v) - 1) if v else float("nan")

print(f"{'':<18} {'':>11}  {'/proc deltas (every trial)':^19}  {'+ perf (warm-up)':^19}")
print(f"{'benchmark':<18} {'plain us/op':>11}  {'wall':>9} {'cpu':>9}  {'wall':>9} {'cpu':>9}")
suite = {k: [] for k in ("Ow", "Oc", "Fw", "Fc")}
for r in run["results"]:
    bench = r["id"]
    measured = [t for t in r["trials"] if t["kind"] == "measured" and t["error"] is None]
    if not measured:
        print(f"{bench:<18} {'failed':>11}")
        continue
    n = measured[-1]["iterations"]
    ratio = {k: [] for k in suite}
    plain = []
    for i in range(rounds):
        got = {m: trial(bench, n, m) for m in ("POF" if i % 2 == 0 else "FOP")}
        p = got["P"]
        plain.append(p[0])
        for m in "OF":
            ratio[m + "w"].append(got[m][0] / p[0])
            if p[1] > 0:
                ratio[m + "c"].append(got[m][1] / p[1])
    row = {k: pct(v) for k, v in ratio.items()}
    for k, v in row.items():
        if v == v:
            suite[k].append(v)
    us = statistics.median(plain) / (n * r["ops_per_iteration"]) / 1000
    print(f"{bench:<18} {us:11.4g}  {row['Ow']:+8.2f}% {row['Oc']:+8.2f}%  {row['Fw']:+8.2f}% {row['Fc']:+8.2f}%", flush=True)
names = {"Ow": "/proc deltas, wall time", "Oc": "/proc deltas, CPU time",
         "Fw": "with perf counters, wall time", "Fc": "with perf counters, CPU time"}
print()
for k, m in suite.items():
    if m:
        print(f"median overhead over {len(m)} benchmarks, {names[k]:<30} {statistics.median(m):+6.2f}%"
              f"  (mean {statistics.mean(m):+.2f}%, largest {max(m):+.1f}%)")
print("\n`run --observe` puts the /proc deltas on every trial and the perf counters on the warm-up only.")
PY
