#!/usr/bin/env bash
# A/B check of the verdicts (a benchmark, not a test): a real kernel-side slowdown of known
# direction against no change, interleaved. The change is a seccomp filter that inspects a
# system call's first argument (scripts/seccomp_wrap.py: the kernel cannot cache its verdict,
# so every system call of the benchmark's processes pays for it). For each of PAIRS pairs, REPS
# runs each of A (plain), B (under the filter) and N (plain again) are made in turn, A B N A B
# N ..., and `sysperf compare` judges the groups: B against A must be "slower", N against A
# must be neither faster nor slower. Prints how often each was right.
#
# Usage: [PAIRS=10] [REPS=5] [BENCH=pipeback4] [AB_CHECKS=8] scripts/ab.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-10}
REPS=${REPS:-5}
BENCH=${BENCH:-pipeback4}
export AB_CHECKS=${AB_CHECKS:-8}
cargo build --release -q
SP=./target/release/sysperf
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
db="$work/ab.db"
run() { "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }; }
for i in $(seq 1 "$PAIRS"); do
  for _ in $(seq 1 "$REPS"); do
    run "$SP" run "$BENCH" --label "a-$i" --db "$db"
    run python3 scripts/seccomp_wrap.py "$SP" run "$BENCH" --label "b-$i" --db "$db"
    run "$SP" run "$BENCH" --label "n-$i" --db "$db"
  done
  "$SP" compare "a-$i" "b-$i" --json --db "$db" > "$work/ab$i.json"
  "$SP" compare "a-$i" "n-$i" --json --db "$db" > "$work/an$i.json"
done
python3 - "$work" "$PAIRS" "$BENCH" <<'PY'
import json, sys
work, pairs, bench = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def judge(path):
    c = json.load(open(path))
    row = next(r for r in c["rows"] if r["id"] == bench)
    return row["ratios"][1]
hits = quiet = 0
for i in range(1, pairs + 1):
    ab, an = judge(f"{work}/ab{i}.json"), judge(f"{work}/an{i}.json")
    hits += ab["verdict"] == "slower"
    quiet += an["verdict"] not in ("faster", "slower")
    print(f"  pair {i}: B/A {ab['ratio']:.3f} [{ab['ci'][0]:.3f}, {ab['ci'][1]:.3f}] {ab['verdict']:<12} "
          f"N/A {an['ratio']:.3f} [{an['ci'][0]:.3f}, {an['ci'][1]:.3f}] {an['verdict']} ({ab['covers']})")
print(f"ab.sh: {bench}, seccomp filter of {__import__('os').environ.get('AB_CHECKS')} argument checks: "
      f"the change detected as slower in {hits} of {pairs} pairs; no change called in {quiet} of {pairs} null pairs")
PY
