#!/usr/bin/env bash
# A/A check of the verdicts (a benchmark, not a test): K identical runs of a selection on this
# machine, one after the other, each compared with the first as `sysperf compare R1 Rk --json`
# does it (one run a side; the machine's run-to-run variance then comes from the other stored
# runs). Nothing changed between the runs, so every "faster" or "slower" is a false verdict.
# Prints the false verdicts out of all comparisons and the median interval half-width.
#
# Usage: [K=6] [SEL="syscall csw ..."] [TRIALS=5] [SETTLE=120] scripts/aa.sh
set -euo pipefail
cd "$(dirname "$0")/.."
K=${K:-6}
SEL=${SEL:-"syscall csw pipeback4 forks0 execs0null seqpage"}
TRIALS=${TRIALS:-5}
# Each run first waits (up to SETTLE s) for a quiet machine, as a user comparing runs should.
SETTLE=${SETTLE:-120}
case "$K" in ''|*[!0-9]*|0|1) echo "aa.sh: K must be a number of runs of at least 2" >&2; exit 2;; esac
cargo build --release -q
SP=./target/release/sysperf
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
db="$work/aa.db"
for k in $(seq 1 "$K"); do
  # shellcheck disable=SC2086
  "$SP" run $SEL --trials "$TRIALS" --settle "$SETTLE" --label "aa-$k" --db "$db" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
done
for k in $(seq 2 "$K"); do
  "$SP" compare aa-1 "aa-$k" --json --db "$db" > "$work/c$k.json"
done
python3 - "$work" "$K" $SEL <<'PY'
import json, statistics, sys
work, k, sel = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
calls, n, widths, covers = 0, 0, [], set()
for i in range(2, k + 1):
    c = json.load(open(f"{work}/c{i}.json"))
    for row in c["rows"]:
        if row["id"] not in sel:
            continue
        r = row["ratios"][1]
        if r is None or r["ci"] is None:
            continue
        n += 1
        covers.add(r["covers"])
        calls += r["verdict"] in ("faster", "slower")
        lo, hi = r["ci"]
        widths.append(100 * (hi - lo) / 2 / r["ratio"])
        if r["verdict"] in ("faster", "slower"):
            print(f"  false verdict: aa-1 vs aa-{i} {row['id']}: {r['verdict']} {r['ratio']:.3f} [{lo:.3f}, {hi:.3f}]")
print(f"aa.sh: {k} runs of {' '.join(sel)}: {calls} of {n} comparisons called significant "
      f"({100 * calls / max(n, 1):.1f}%); median interval half-width {statistics.median(widths):.1f}%; "
      f"intervals cover: {', '.join(sorted(covers))}")
PY
