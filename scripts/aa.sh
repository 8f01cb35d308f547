#!/usr/bin/env bash
# A/A check of the verdicts (a benchmark, not a test; #30). Nothing changes between the runs
# or sides compared, so every "faster" or "slower" is a false verdict. Two modes:
#
#   MODE=runs (default): K identical runs of a selection into a fresh store, one after the
#     other, then ALL K(K-1)/2 pairs compared as `sysperf compare Ri Rj --json` does it (one
#     run a side; the machine's run-to-run variance then comes from the other K-2 stored runs
#     made alike, so K >= 5 for a verdict at all). HOG=1 starts and stops a CPU hog
#     (`stress-ng --cpu 1`, else a shell loop) at random times, between and during the runs;
#     HOG=constant keeps one CPU hog running for the whole script (a neighbour that never
#     stops: every run is measured beside it).
#   MODE=ab: TRIES paired `sysperf ab SEL --switch none` (both sides alike), each compared
#     round by round.
#
# Prints one line: the false verdicts out of all comparisons with a 95% Clopper-Pearson
# interval (the comparisons of one run share it, so the interval is a guide, not exact), the
# rows without a verdict, the median interval half-width, what the intervals cover, and the
# machine time taken.
#
# Usage: [MODE=runs|ab] [K=6] [TRIES=20] [SEL="..."] [TRIALS=5] [SETTLE=0] [HOG=0|1|constant]
#        [DESIGN=paired|duet] [SP=path/to/sysperf] [KEEP=DIR] scripts/aa.sh
# KEEP=DIR keeps the store (DIR/aa.db) and the comparisons' JSON for a closer look; REUSE=DIR
# (MODE=runs) measures nothing and compares a kept store's runs again, as this sysperf judges.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${MODE:-runs}
K=${K:-6}
TRIES=${TRIES:-20}
SEL=${SEL:-"syscall csw pipeback4 forks0 execs0null seqpage"}
TRIALS=${TRIALS:-5}
SETTLE=${SETTLE:-0}
HOG=${HOG:-0}
DESIGN=${DESIGN:-paired}
case "$K" in ''|*[!0-9]*|0|1) echo "aa.sh: K must be a number of runs of at least 2" >&2; exit 2;; esac
if [ -z "${SP:-}" ]; then
  cargo build --release -q
  SP=./target/release/sysperf
fi
work=$(mktemp -d)
hog_pid=
cleanup() {
  if [ -n "$hog_pid" ]; then kill "$hog_pid" 2>/dev/null || true; wait "$hog_pid" 2>/dev/null || true; fi
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp -r "$work"/. "$KEEP"/; fi
  rm -rf "$work"
}
trap cleanup EXIT
db="$work/aa.db"
settle=()
[ "$SETTLE" != 0 ] && settle=(--settle "$SETTLE")

# The hog: off and on at random, 2-20 s each, for as long as the script runs.
if [ "$HOG" = 1 ]; then
  (
    trap 'kill $h 2>/dev/null; exit 0' TERM
    while :; do
      sleep $((2 + RANDOM % 19))
      if command -v stress-ng >/dev/null; then
        stress-ng --cpu 1 --timeout $((2 + RANDOM % 19)) --quiet & h=$!
      else
        (end=$((SECONDS + 2 + RANDOM % 19)); while [ $SECONDS -lt $end ]; do :; done) & h=$!
      fi
      wait $h || true
    done
  ) & hog_pid=$!
elif [ "$HOG" = constant ]; then
  if command -v stress-ng >/dev/null; then
    stress-ng --cpu 1 --quiet & hog_pid=$!
  else
    (while :; do :; done) & hog_pid=$!
  fi
fi

start=$SECONDS
if [ "$MODE" = ab ]; then
  duet=()
  [ "$DESIGN" = duet ] && duet=(--duet)
  for t in $(seq 1 "$TRIES"); do
    # shellcheck disable=SC2086
    "$SP" ab $SEL --switch none "${duet[@]}" --json --label "aa-$t" --db "$db" > "$work/c$t.json" 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
  done
  n=$TRIES
else
  if [ -n "${REUSE:-}" ]; then
    cp "$REUSE/aa.db" "$db"
    K=$("$SP" runs --json --db "$db" --limit 1000 | python3 -c "import json,sys; print(len({r['label'] for r in json.load(sys.stdin) if r.get('label','').startswith('aa-')}))")
  fi
  for k in $(seq 1 "$K"); do
    [ -n "${REUSE:-}" ] && break
    # shellcheck disable=SC2086
    "$SP" run $SEL --trials "$TRIALS" "${settle[@]}" --label "aa-$k" --db "$db" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
  done
  n=0
  for i in $(seq 1 "$K"); do
    for j in $(seq $((i + 1)) "$K"); do
      n=$((n + 1))
      "$SP" compare "aa-$i" "aa-$j" --json --db "$db" > "$work/c$n.json"
    done
  done
fi
elapsed=$((SECONDS - start))
python3 - "$work" "$n" "$MODE" "$K" "$HOG" "$elapsed" "$DESIGN" $SEL <<'PY'
import json, math, statistics, sys
sys.path.insert(0, "scripts")
from verdicts import clopper_pearson
work, n, mode, k, hog, elapsed, design, sel = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7], sys.argv[8:]

def tally(key):
    calls = judged = unknown = disturbed = other = 0
    widths, covers, false = [], set(), []
    for i in range(1, n + 1):
        c = json.load(open(f"{work}/c{i}.json"))
        for row in c["rows"]:
            if row["id"] not in sel:
                continue
            rs = row.get(key) or []
            r = rs[1] if len(rs) > 1 else None
            if r is None:
                other += 1
                continue
            if r["verdict"] == "noise_unknown":
                unknown += 1
                continue
            if r["verdict"] == "disturbed":
                disturbed += 1
                continue
            if r["ci"] is None:
                other += 1
                continue
            judged += 1
            covers.add(r["covers"])
            lo, hi = r["ci"]
            widths.append(100 * (hi - lo) / 2 / r["ratio"])
            if r["verdict"] in ("faster", "slower"):
                calls += 1
                false.append(f"{c['runs'][0]['label']} vs {c['runs'][1]['label']} {row['id']}: {r['verdict']} {r['ratio']:.3f} [{lo:.3f}, {hi:.3f}]")
    if key == "adjusted" and judged + unknown + disturbed == 0:
        return
    for f in false:
        print(f"  false verdict ({key}): {f}")
    lo, hi = clopper_pearson(calls, judged) if judged else (0.0, 1.0)
    what = (f"{k} runs, all {n} pairs" if mode == "runs" else f"{n} paired ab tries ({design}, --switch none)")
    print(f"aa.sh: {mode}{' with a CPU hog' if hog == '1' else ' with a constant CPU hog' if hog == 'constant' else ''}: {what} of {' '.join(sel)}, {key}: "
          f"{calls} of {judged} comparisons faster/slower = {100 * calls / max(judged, 1):.1f}% "
          f"[95% CI {100 * lo:.1f}-{100 * hi:.1f}%, Clopper-Pearson]; {unknown} without a verdict (noise unknown), {disturbed} without a verdict (other work beside the test), {other} without an interval; "
          f"median half-width {statistics.median(widths) if widths else float('nan'):.1f}%; covers: {', '.join(sorted(covers)) or '-'}; "
          f"machine time {elapsed} s")

# The raw ratios, then the speed-adjusted ones (#42; none for ab's paired sides).
tally("ratios")
tally("adjusted")
PY
