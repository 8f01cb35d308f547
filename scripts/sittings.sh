#!/usr/bin/env bash
# Cross-sitting A/A, and a real slowdown found across sittings (#42; a benchmark, not a test).
#
# S sittings of `sysperf run SEL --repeat REPEAT --settle SETTLE` into a fresh store, each
# after real disturbance: caches dropped (as root), a memory churn of CHURN_GIB GiB (written
# page by page, then freed), and a CPU hog on every CPU for HOG_S seconds. Nothing else differs
# between the sittings, so every "faster" or "slower" between them is false. Then:
#   - every run of sitting i against every run of sitting j (i < j), one run a side
#     (`compare RUN RUN`: covers trials+sittings);
#   - every sitting's group against every other's (`compare sI sJ`: runs+sittings);
# each counted twice: the raw ratios and the speed-adjusted ones (the host-speed reference).
# With SLOW=1 a last sitting runs under a seccomp filter around sysperf (scripts/seccomp_wrap.py,
# AB_CHECKS argument checks on every system call: a kernel-side slowdown the user-space
# reference does not feel), and each earlier sitting's group is compared with it: its syscall
# row should be slower.
#
# Prints the false verdicts with a 95% Clopper-Pearson interval, the share without a verdict,
# the median interval half-width, for singles and groups, raw and adjusted; the rows refused
# as disturbed judged anyway, by cause (steal time alone, or other work), to show whether the
# refusal keeps false verdicts out; then the slow sitting's syscall verdicts.
#
# RUN_OPTS adds options to every run (e.g. RUN_OPTS="--precision 8": each run measures until a
# comparison with another run made alike would resolve 8%).
#
# Usage: [S=4] [REPEAT=3] [SEL="..."] [RUN_OPTS="..."] [SETTLE=60] [CHURN_GIB=3] [HOG_S=15] [SLOW=1]
#        [AB_CHECKS=40] [SP=path/to/sysperf] [KEEP=DIR] [REUSE=DIR] scripts/sittings.sh
# REUSE=DIR measures nothing: it compares again the runs of a store KEEP kept (DIR/s.db,
# copied first), as this sysperf judges them (a change of the statistics, on the same data).
set -euo pipefail
cd "$(dirname "$0")/.."
S=${S:-4}
REPEAT=${REPEAT:-3}
SEL=${SEL:-"syscall csw pipeback4 forks0 execs0null seqpage"}
SETTLE=${SETTLE:-60}
RUN_OPTS=${RUN_OPTS:-}
CHURN_GIB=${CHURN_GIB:-3}
HOG_S=${HOG_S:-15}
SLOW=${SLOW:-1}
export AB_CHECKS=${AB_CHECKS:-40}
if [ -z "${SP:-}" ]; then
  cargo build --release -q
  SP=./target/release/sysperf
fi
work=$(mktemp -d)
cleanup() {
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp -r "$work"/. "$KEEP"/; fi
  rm -rf "$work"
}
trap cleanup EXIT
db="$work/s.db"

disturb() {
  sync
  if [ -w /proc/sys/vm/drop_caches ]; then echo 3 > /proc/sys/vm/drop_caches; fi
  python3 - "$CHURN_GIB" <<'PY'
import sys
gib = float(sys.argv[1])
b = bytearray(int(gib * (1 << 30)))
for i in range(0, len(b), 4096):
    b[i] = 1
del b
PY
  local pids=()
  for _ in $(seq 1 "$(nproc)"); do
    (end=$((SECONDS + HOG_S)); while [ $SECONDS -lt $end ]; do :; done) & pids+=($!)
  done
  wait "${pids[@]}"
}

start=$SECONDS
if [ -n "${REUSE:-}" ]; then
  # The slow sitting was measured after the A/A's comparisons: out of their history.
  cp "$REUSE/s.db" "$db"
  "$SP" rm slow --db "$db" >/dev/null 2>&1 || true
  S=$("$SP" runs --json --db "$db" --limit 1000 | python3 -c "import json,sys; print(len({r['label'] for r in json.load(sys.stdin) if r.get('label','').startswith('s')}))")
fi
for s in $(seq 1 "$S"); do
  [ -n "${REUSE:-}" ] && break
  disturb
  # shellcheck disable=SC2086
  "$SP" run $SEL $RUN_OPTS --repeat "$REPEAT" --settle "$SETTLE" --label "s$s" --db "$db" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
  echo "sitting $s of $S stored ($((SECONDS - start)) s)" >&2
done
"$SP" runs --json --db "$db" --limit 1000 > "$work/runs.json"
ids() { python3 -c "import json,sys; print(' '.join(r['id'] for r in json.load(open(sys.argv[1])) if r.get('label') == sys.argv[2]))" "$work/runs.json" "$1"; }
n=0
for i in $(seq 1 "$S"); do
  for j in $(seq $((i + 1)) "$S"); do
    for a in $(ids "s$i"); do
      for b in $(ids "s$j"); do
        n=$((n + 1))
        "$SP" compare "$a" "$b" --json --db "$db" > "$work/single$n.json"
      done
    done
  done
done
g=0
for i in $(seq 1 "$S"); do
  for j in $(seq $((i + 1)) "$S"); do
    g=$((g + 1))
    "$SP" compare "s$i" "s$j" --json --db "$db" > "$work/group$g.json"
  done
done
if [ "$SLOW" = 1 ]; then
  if [ -n "${REUSE:-}" ]; then
    cp "$REUSE/s.db" "$db"
  else
    disturb
    # shellcheck disable=SC2086
    python3 scripts/seccomp_wrap.py "$SP" run $SEL $RUN_OPTS --repeat "$REPEAT" --settle "$SETTLE" --label slow --db "$db" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
  fi
  for i in $(seq 1 "$S"); do
    "$SP" compare "s$i" slow --json --db "$db" > "$work/slow$i.json"
  done
fi
elapsed=$((SECONDS - start))
python3 - "$work" "$n" "$g" "$S" "$SLOW" "$elapsed" $SEL <<'PY'
import json, math, statistics, sys
sys.path.insert(0, "scripts")
from verdicts import clopper_pearson
work, n, g, s, slow, elapsed, sel = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6], sys.argv[7:]

def tally(prefix, count, key):
    rows = verdicts = false = 0
    none, widths, covers, why = 0, [], {}, {}
    for k in range(1, count + 1):
        c = json.load(open(f"{work}/{prefix}{k}.json"))
        for row in c["rows"]:
            if row["id"] not in sel:
                continue
            ratios = row.get(key) or []
            r = ratios[1] if len(ratios) > 1 else None
            rows += 1
            if r is None or r["ci"] is None or r["verdict"] in ("noise_unknown", "sittings_unknown", "disturbed", "unlike_options", "too_few_trials", "no_verdict"):
                none += 1
                v = "absent" if r is None else r["verdict"]
                why[v] = why.get(v, 0) + 1
                continue
            verdicts += 1
            covers[r["covers"]] = covers.get(r["covers"], 0) + 1
            lo, hi = r["ci"]
            widths.append(100 * (hi - lo) / 2 / r["ratio"])
            if r["verdict"] in ("faster", "slower"):
                false += 1
    lo, hi = clopper_pearson(false, verdicts) if verdicts else (0, 1)
    med = statistics.median(widths) if widths else float("nan")
    print(f"{prefix:>6} {key:>8}: {false} of {verdicts} judged faster/slower ({100*false/max(verdicts,1):.1f}%, 95% CI {100*lo:.1f}-{100*hi:.1f}%); "
          f"{none} of {rows} without a verdict ({100*none/max(rows,1):.0f}%: {why}); median half-width {med:.1f}%; covers {covers}")

def would_be(prefix, count, key):
    """The rows refused as disturbed, judged as if they were not: is steal time alone (the
    hypervisor's, 2-4% all day on this VM) a disturbance that misjudges, like other work?"""
    by = {}
    for k in range(1, count + 1):
        c = json.load(open(f"{work}/{prefix}{k}.json"))
        band = c.get("noise_pct", 2.0) / 100
        ids = {h["id"] for h in c["runs"]}
        for row in c["rows"]:
            if row["id"] not in sel:
                continue
            r = (row.get(key) or [None, None])[1]
            if r is None or r["verdict"] != "disturbed" or not r["ci"]:
                continue
            tests = {row["id"]} | ({"hostspeed"} if key == "adjusted" else set())
            kinds = {w["kind"] for w in c["warnings"] if w.get("bench") in tests and w["run"] in ids
                     and w["kind"] in ("busy_cpu", "busy_machine", "steal")}
            cause = "steal only" if kinds == {"steal"} else "other work"
            lo, hi = r["ci"]
            d = by.setdefault(cause, [0, 0, []])
            d[0] += 1
            d[1] += lo > 1 + band or hi < 1 - band
            d[2].append(100 * (hi - lo) / 2 / r["ratio"])
    for cause, (rows, false, widths) in sorted(by.items()):
        lo, hi = clopper_pearson(false, rows)
        print(f"{prefix:>6} {key:>8} disturbed by {cause}, judged anyway: {false} of {rows} faster/slower "
              f"({100*false/rows:.1f}%, 95% CI {100*lo:.1f}-{100*hi:.1f}%); median half-width {statistics.median(widths):.1f}%")

print(f"{s} sittings of {' '.join(sel)}, {elapsed} s in all")
for prefix, count in (("single", n), ("group", g)):
    for key in ("ratios", "adjusted"):
        tally(prefix, count, key)
        would_be(prefix, count, key)
if slow == "1":
    for i in range(1, s + 1):
        c = json.load(open(f"{work}/slow{i}.json"))
        row = next(r for r in c["rows"] if r["id"] == "syscall")
        out = []
        for key in ("ratios", "adjusted"):
            r = (row.get(key) or [None, None])[1]
            if r is None:
                out.append(f"{key}: none")
            else:
                ci = r["ci"]
                ci = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "[-]"
                out.append(f"{key}: {r['ratio']:.3f} {ci} {r['verdict']}")
        host = next((r for r in c["rows"] if r["id"] == "hostspeed"), None)
        h = host["ratios"][1] if host else None
        hs = f"host {h['ratio']:.3f} {h['verdict']}" if h else "host -"
        print(f"slow vs s{i}: syscall {'; '.join(out)}; {hs}")
PY
