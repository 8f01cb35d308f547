#!/usr/bin/env bash
# `sysperf ab` of commands beside hyperfine on the same pairs, in one sitting (#43; a benchmark,
# not a test: it times, so run it alone on the machine).
#
# Pairs (each a planted difference or none):
#   aa      sleep 0.02 against itself (A/A: nothing to find)
#   sleep   sleep 0.020 against sleep 0.021 (+1 ms, +5%)
#   build   one C program built -O0 and -O2 (two builds of one program)
#   ldpath  python3 -c pass with LD_LIBRARY_PATH empty, and with 300 directories that do
#           not hold its libraries (ld.so looks in each for each library: a real slowdown)
#   mt      sort --parallel=2 against sort --parallel=1 of one 20 MB file (multi-threaded)
# Each pair TRIES times (default 3), alternating the tools: sysperf ab (its defaults: paired
# rounds, a shell) and hyperfine (its defaults, a shell; hyperfine 1.15 prints mean +- sd per
# command, and the ratio of the means with its propagated spread). Prints one line per pair:
# sysperf's ratio with its 95% interval, verdict and wall time; hyperfine's ratio +- spread
# (1 sd) and wall time.
#
# Usage (root not needed): [TRIES=3] [SP=path/to/sysperf] [PAIRS="aa sleep build ldpath mt"]
#        scripts/ab-vs-hyperfine.sh
set -euo pipefail
cd "$(dirname "$0")/.."
TRIES=${TRIES:-3}
PAIRS=${PAIRS:-"aa sleep build ldpath mt"}
if [ -z "${SP:-}" ]; then
  cargo build --release -q
  SP=./target/release/sysperf
fi
command -v hyperfine >/dev/null || { echo "ab-vs-hyperfine.sh: needs hyperfine (apt-get install hyperfine)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
db="$work/s.db"

# The pairs' material.
cat > "$work/loop.c" <<'C'
#include <stdio.h>
int main(void) {
    volatile unsigned long s = 0;
    for (unsigned long i = 0; i < 30000000UL; i++) s += i * i ^ (s >> 3);
    return (int)(s & 1) * 0;
}
C
cc -O0 -o "$work/loop-O0" "$work/loop.c"
cc -O2 -o "$work/loop-O2" "$work/loop.c"
lp=""
for i in $(seq 1 300); do lp="$lp:$work/nolib$i"; done
lp=${lp#:}
python3 -c "
import random
random.seed(1)
with open('$work/f.txt','w') as f:
    for _ in range(1200000): f.write('%016x\n' % random.getrandbits(64))
"

# "A" "B" and the extra sysperf ab / hyperfine options of each pair.
pair() {
  case $1 in
    aa) A="sleep 0.02"; B="sleep 0.02"; AB=(); HF=() ;;
    sleep) A="sleep 0.020"; B="sleep 0.021"; AB=(); HF=() ;;
    build) A="$work/loop-O0"; B="$work/loop-O2"; AB=(); HF=() ;;
    ldpath) A="python3 -c pass"; B="LD_LIBRARY_PATH=$lp python3 -c pass"; AB=(); HF=() ;;
    mt) A="sort --parallel=2 -S 64M $work/f.txt"; B="sort --parallel=1 -S 64M $work/f.txt"; AB=(); HF=() ;;
  esac
}

printf '%-7s | %-44s | %-30s\n' pair "sysperf ab: ratio [95% CI] verdict (s)" "hyperfine: ratio +- 1 sd (s)"
for p in $PAIRS; do
  pair "$p"
  for t in $(seq 1 "$TRIES"); do
    s0=$(date +%s.%N)
    "$SP" ab "$A" "$B" --output null --json --db "$db" "${AB[@]}" > "$work/ab.json" 2>"$work/ab.err" || true
    s1=$(date +%s.%N)
    hyperfine --style none --output null --export-json "$work/hf.json" "${HF[@]}" "$A" "$B" > /dev/null 2>"$work/hf.err" || true
    s2=$(date +%s.%N)
    python3 - "$work/ab.json" "$work/hf.json" "$p" "$s0" "$s1" "$s2" <<'PY'
import json, math, sys
abf, hff, p, s0, s1, s2 = sys.argv[1:]
try:
    d = json.load(open(abf))
    d = d[0] if isinstance(d, list) else d
    r = next(x for x in d["rows"] if x["id"] == "command")["ratios"][1]
    ci = r.get("ci") or [float("nan")] * 2
    ab = f"{r['ratio']:.3f} [{ci[0]:.3f}, {ci[1]:.3f}] {r['verdict']}"
except Exception as e:
    ab = f"failed ({type(e).__name__})"
try:
    h = json.load(open(hff))["results"]
    a, b = h[0], h[1]
    ratio = b["mean"] / a["mean"]
    sd = ratio * math.sqrt((a["stddev"] / a["mean"]) ** 2 + (b["stddev"] / b["mean"]) ** 2)
    hf = f"{ratio:.3f} +- {sd:.3f} ({len(a['times'])}+{len(b['times'])} runs)"
except Exception as e:
    hf = f"failed ({type(e).__name__})"
t_ab, t_hf = float(s1) - float(s0), float(s2) - float(s1)
print(f"{p:<7} | {ab:<36} {t_ab:5.1f} s | {hf:<30} {t_hf:5.1f} s")
PY
  done
done
