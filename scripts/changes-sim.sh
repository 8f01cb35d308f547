#!/usr/bin/env bash
# The rates of `sysperf changes` (src/changepoint.rs) on histories of 50 runs, and the real
# run-to-run noise of this VM they are drawn from. docs/changes.md quotes its output.
#
#   scripts/changes-sim.sh            how short a history can be (a perfect step between k
#                                     runs and k runs, found in how many of 200), then the
#                                     rates: first on simulated noise profiles (the first
#                                     split's test on log times against on ranks, then the
#                                     whole detector), then in the VM's real noise: the real
#                                     A/A histories of tests/data/vm-noise.tsv described, and
#                                     false alarms in 1,000 A/A histories and planted 3%, 10%
#                                     and 30% steps found in 200 each, per measured test, the
#                                     histories drawn from its per-run residuals in blocks of 5;
#                                     and (#42) the false alarms per search of 49 tests at a
#                                     false discovery rate of 0.05, simulated and in the real
#                                     noise, and how large a found step is measured. The
#                                     real-noise searches take about 20 minutes.
#                                     SYSPERF_SIM_SEED picks the real-noise draws (default 35,
#                                     the seed quoted). Pure computation: seconds of one CPU
#                                     once the release build is made (that takes minutes).
#   scripts/changes-sim.sh --measure [N]
#                                     makes the real A/A histories: N (default 60) pairs of a
#                                     `run --quick` and a default `run` of six tests, one after
#                                     the other, each run under the machine's timing lock
#                                     (about 8 s a pair on a quiet machine), into a store in
#                                     a new private directory, then writes their run medians
#                                     to tests/data/vm-noise.tsv. This measures: run it only
#                                     when timing is allowed. SERIES=NAME keeps the file's
#                                     histories and adds these as series NAME-quick and
#                                     NAME-default (e.g. SERIES=quiet for a quiet machine).
#                                     A test's result in a run where it ran beside other work
#                                     (busy_cpu, busy_machine or steal warning) is left out, as
#                                     `sysperf changes` leaves it out; the file's header says
#                                     how many. SPACING=S starts the pairs S seconds apart
#                                     (sleeping between them) instead of back to back.
set -euo pipefail
cd "$(dirname "$0")/.."
TESTS="syscall csw pipeback4 forks0 execs0null seqpage"

if [ "${1:-}" = "--measure" ]; then
  pairs=${2:-60}
  command -v sqlite3 >/dev/null || { echo "changes-sim.sh --measure needs the sqlite3 command" >&2; exit 2; }
  cargo build --release --quiet
  dir=$(mktemp -d) # mode 700: sysperf refuses a store others could change
  trap 'rm -rf "$dir"' EXIT
  db=$dir/aa.db
  for i in $(seq "$pairs"); do
    start=$(date +%s)
    flock /tmp/sysperf-timing.lock target/release/sysperf run --db "$db" --label "aa-quick-$i" --quick $TESTS >/dev/null 2>&1
    flock /tmp/sysperf-timing.lock target/release/sysperf run --db "$db" --label "aa-$i" $TESTS >/dev/null 2>&1
    # SPACING=S: pairs start S seconds apart, as a timer spreads a fleet's runs over time.
    if [ -n "${SPACING:-}" ] && [ "$i" -lt "$pairs" ]; then
      sleep $((start + SPACING - $(date +%s) > 0 ? start + SPACING - $(date +%s) : 0))
    fi
  done
  prefix=${SERIES:+$SERIES-}
  how=" (other work running)"
  [ -n "${SERIES:-}" ] && how=" (series $SERIES)"
  [ -n "${SPACING:-}" ] && how="$how, pairs started ${SPACING} s apart"
  out=tests/data/vm-noise.tsv
  new=$dir/noise.tsv
  busy="EXISTS (SELECT 1 FROM warnings w WHERE w.run_id = r.id AND w.bench = s.bench
        AND w.kind IN ('busy_cpu', 'busy_machine', 'steal'))"
  left=$(sqlite3 "$db" "SELECT count(*) FROM runs r JOIN results s ON s.run_id = r.id
    WHERE s.wall_median > 0 AND s.error IS NULL AND $busy")
  {
    echo "# Real A/A histories of this VM (#35 item 9): ${SERIES:+SERIES=$SERIES }scripts/changes-sim.sh --measure $pairs, $(date -u '+%Y-%m-%d %H:%M') UTC,"
    echo "# $(uname -r), $(nproc) CPUs, the machine as it was$how. A quick run and a default"
    echo "# run of the six tests in turn, each under the timing lock. Columns: series (quick: run --quick;"
    echo "# default: run), test, the run's label, its median wall time per operation in ns. Runs in order."
    echo "# $left results left out: their test ran beside other work (busy_cpu, busy_machine or steal), as changes leaves them out."
    sqlite3 -separator $'\t' "$db" "
      SELECT '$prefix' || CASE WHEN r.label LIKE 'aa-quick-%' THEN 'quick' ELSE 'default' END, s.bench, r.label, s.wall_median
      FROM runs r JOIN results s ON s.run_id = r.id
      WHERE s.wall_median > 0 AND s.error IS NULL AND NOT $busy
      ORDER BY 1 DESC, s.bench, r.started_ns, r.seq"
  } >"$new"
  if [ -n "${SERIES:-}" ]; then cat "$new" >>"$out"; else cp "$new" "$out"; fi
  echo "wrote $(grep -vc '^#' "$new") run medians to $out"
  exit 0
fi

cargo test --release --lib changepoint::tests:: -- --ignored --nocapture --test-threads 1 2>&1 |
  sed -n 's/^test changepoint::tests::[a-z_:]* \.\.\. //; /^running\|^$\|^ok$\|test result\|^test /d; p'
