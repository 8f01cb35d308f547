#!/usr/bin/env bash
# Store scale check (#21): builds a store of N runs quickly and times the store commands on it.
# Not a benchmark of the kernel: it measures sysperf's own store (SQLite) as its history grows.
#
# The store is made from one seed run (an export file, default tests/data/minimal-export.json;
# give a real run's export with SEED=FILE for realistic sizes): the seed is imported once, then
# copied N-1 times inside SQLite with fresh ids (12 hex digits), spread over 10 hosts, 4 kernel
# releases and 20,000 labels (5 runs each, as `run --repeat 5` makes), one minute apart. Then
# each command below runs twice (cold after the copy, then warm) and its wall time and peak
# RSS (from /usr/bin/time) are printed, one line
# each. The export/import lines move EXPORT_RUNS runs (default 10,000 or N, the smaller).
#
# Usage: [N=100000] [SEED=FILE] [SYSPERF=path/to/sysperf] [EXPORT_RUNS=10000] [KEEP=DIR] \
#        scripts/store-scale.sh
# SYSPERF defaults to target/debug/sysperf (run 'cargo build' first); give an older binary to
# compare before and after. Needs sqlite3 (Debian: apt-get install sqlite3) and GNU time.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-100000}
SEED=${SEED:-tests/data/minimal-export.json}
SP=${SYSPERF:-$PWD/target/debug/sysperf}
EXPORT_RUNS=${EXPORT_RUNS:-10000}
((EXPORT_RUNS > N)) && EXPORT_RUNS=$N
command -v sqlite3 >/dev/null || { echo "store-scale: sqlite3 is needed (apt-get install sqlite3)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "store-scale: GNU time is needed (apt-get install time)" >&2; exit 2; }
[[ -x $SP ]] || { echo "store-scale: no sysperf at $SP (cargo build, or SYSPERF=...)" >&2; exit 2; }
if [[ -n ${KEEP:-} ]]; then work=$KEEP; mkdir -p "$work"; else
  work=$(mktemp -d); trap 'rm -rf "$work"' EXIT; fi
db=$work/scale.db
rm -f "$db" "$db-wal" "$db-shm"

"$SP" import --db "$db" "$SEED" >/dev/null
seed=$(sqlite3 "$db" "SELECT id FROM runs LIMIT 1")
cols() { sqlite3 "$db" "SELECT group_concat(name, ', ') FROM pragma_table_info('$1')"; }
# Every column copied as it is, but those named in $2 (a sed script over the list).
select_list() { cols "$1" | sed -E "$2"; }
run_cols=$(cols runs)
run_sel=$(select_list runs "
  s/\bseq\b/NULL/;
  s/\bid\b/printf('%012x', k.n)/;
  s/\blabel\b/'scale-' || (k.n % 20000)/;
  s/\bstarted_ns\b/started_ns + k.n * 60000000000/;
  s/\bended_ns\b/ended_ns + k.n * 60000000000/;
  s/\bhostname\b/'host-' || (k.n % 10)/;
  s/\bkernel_release\b/(CASE k.n % 4 WHEN 0 THEN '5.10.0-28-amd64' WHEN 1 THEN '6.1.0-18-amd64' WHEN 2 THEN '6.12.9-amd64' ELSE '6.9.7-amd64' END)/;
  s/\bfingerprint_json\b/json_set(fingerprint_json, '\$.hostname', 'host-' || (k.n % 10), '\$.kernel_release', (CASE k.n % 4 WHEN 0 THEN '5.10.0-28-amd64' WHEN 1 THEN '6.1.0-18-amd64' WHEN 2 THEN '6.12.9-amd64' ELSE '6.9.7-amd64' END))/")
res_cols=$(cols results)
res_sel=$(select_list results "s/^id\b/id + k.n * 1000/; s/\brun_id\b/printf('%012x', k.n)/")
tri_cols=$(cols trials)
tri_sel=$(cols trials | sed -E 's/([a-z_]+)/t.\1/g; s/t\.result_id/t.result_id + k.n * 1000/')
small_cols() { # warnings, derived, series, profiles: keyed by run_id
  local t=$1; printf 'INSERT INTO %s (%s) SELECT %s FROM %s, k WHERE run_id = %s;\n' "$t" \
    "$(cols "$t")" "$(select_list "$t" "s/\brun_id\b/printf('%012x', k.n)/")" "$t" "'$seed'"; }
{
  echo "PRAGMA foreign_keys = OFF; BEGIN;"
  echo "CREATE TEMP TABLE k (n INTEGER PRIMARY KEY);"
  echo "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < $((N - 1)))"
  echo "INSERT INTO k SELECT n FROM c;"
  echo "INSERT INTO runs ($run_cols) SELECT $run_sel FROM runs, k WHERE runs.id = '$seed';"
  echo "INSERT INTO results ($res_cols) SELECT $res_sel FROM results, k WHERE run_id = '$seed';"
  echo "INSERT INTO trials ($tri_cols) SELECT $tri_sel FROM trials t JOIN results r ON r.id = t.result_id, k WHERE r.run_id = '$seed';"
  for t in warnings derived series profiles; do small_cols "$t"; done
  echo "COMMIT;"
} >"$work/copy.sql"
sqlite3 "$db" <"$work/copy.sql"
echo "store: $(sqlite3 "$db" 'SELECT count(*) FROM runs') runs, $(du -h "$db" | cut -f1)"

t() { # NAME COMMAND...: wall seconds, CPU seconds (user + system) and peak RSS of the command
  local name=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" >/dev/null 2>"$work/err" || {
    echo "$name: FAILED ($(tail -1 "$work/err"))"; return; }
  read -r secs user sys kib <"$work/time"
  printf '%-34s %8.3f s wall %8.3f s CPU %8d KiB\n' "$name" "$secs" "$(echo "$user + $sys" | bc)" "$kib"
}
label=scale-7
id=$(sqlite3 "$db" "SELECT id FROM runs WHERE label = 'scale-8' ORDER BY started_ns DESC LIMIT 1")
for pass in cold warm; do
  t "show LABEL ($pass)" "$SP" show --db "$db" "$label"
  t "show ID ($pass)" "$SP" show --db "$db" "$id"
  t "compare LABEL LABEL ($pass)" "$SP" compare --db "$db" "$label" scale-8
  t "runs ($pass)" "$SP" runs --db "$db"
done
ids=$(sqlite3 "$db" "SELECT id FROM runs ORDER BY seq LIMIT $EXPORT_RUNS")
# shellcheck disable=SC2086
t "export $EXPORT_RUNS runs" "$SP" export --db "$db" -o "$work/many.json" $ids
if [[ -s $work/many.json ]]; then
  echo "export file: $(du -h "$work/many.json" | cut -f1)"
  t "import $EXPORT_RUNS runs" "$SP" import --db "$work/imported.db" "$work/many.json"
fi
before=$(stat -c %s "$db")
removed=$((N / 2 < 20 ? N / 2 : 20))
half=$(sqlite3 "$db" "SELECT id FROM runs ORDER BY seq LIMIT $removed")
for r in $half; do "$SP" rm --db "$db" "$r" >/dev/null; done
sqlite3 "$db" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
echo "rm $removed runs: file $before -> $(stat -c %s "$db") bytes, $(sqlite3 "$db" 'PRAGMA freelist_count') free pages"
