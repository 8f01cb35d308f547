#!/usr/bin/env bash
# Store scale check (#21): builds a store of N runs quickly and times the store commands on it,
# on SQLite (the default) or PostgreSQL. Not a benchmark of the kernel: it measures sysperf's
# own store as its history grows.
#
# The store is made from one seed run (an export file, default tests/data/minimal-export.json;
# give a real run's export with SEED=FILE for realistic sizes): the seed is imported once, then
# copied N-1 times inside the database (SQL, no sysperf) with fresh ids (12 hex digits), spread
# over 10 hosts, 4 kernel releases and 20,000 labels (5 runs each, as `run --repeat 5` makes),
# one minute apart. Then each command below runs twice (cold after the copy, then warm) and one
# line is printed per command: backend, command, wall ms cold and warm, peak RSS in kB (GNU
# time). The fleet's grouped views (--by kernel, the heat map, changes) and the upload of one
# run by sync are timed too. The export/import lines move EXPORT_RUNS runs (default 10,000 or N, the smaller), once.
#
# Usage: [N=100000] [SEED=FILE] [SYSPERF=path/to/sysperf] [EXPORT_RUNS=10000] [KEEP=DIR] \
#        [BUILD_ONLY=1] [BACKEND=sqlite|pg] [DB=postgres://USER@HOST:PORT/DATABASE [IMPORT_DB=postgres://...]] \
#        scripts/store-scale.sh
# BACKEND=pg starts a private PostgreSQL cluster in a temporary directory (initdb, a free port,
# pg_ctl start; stopped and removed on exit, as the tests do; SYSPERF_PG_BIN names its bin
# directory, else the newest /usr/lib/postgresql/N/bin); DB=postgres://... uses an existing
# EMPTY database instead (the runs are copied into it; the import goes into IMPORT_DB, an empty
# database too, and is skipped without one).
# SYSPERF defaults to target/debug/sysperf (run 'cargo build' first); give an older binary to
# compare before and after. Needs sqlite3 or psql (Debian: apt-get install sqlite3
# postgresql-client; the private cluster needs postgresql) and GNU time.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-100000}
SEED=${SEED:-tests/data/minimal-export.json}
SP=${SYSPERF:-$PWD/target/debug/sysperf}
EXPORT_RUNS=${EXPORT_RUNS:-10000}
((EXPORT_RUNS > N)) && EXPORT_RUNS=$N
BACKEND=${BACKEND:-sqlite}
DB=${DB:-}
case $DB in postgres://* | postgresql://*) BACKEND=pg ;; esac
die() { echo "store-scale: $*" >&2; exit 2; }
case $BACKEND in sqlite | pg) ;; *) die "BACKEND is sqlite or pg, not '$BACKEND'" ;; esac
[[ $BACKEND == sqlite && -n $DB ]] && die "DB is a postgres:// URL (the SQLite store is made in a temporary directory)"
[[ -x /usr/bin/time ]] || die "GNU time is needed (apt-get install time)"
[[ -x $SP ]] || die "no sysperf at $SP (cargo build, or SYSPERF=...)"
if [[ $BACKEND == sqlite ]]; then
  command -v sqlite3 >/dev/null || die "sqlite3 is needed (apt-get install sqlite3)"
else
  command -v psql >/dev/null || die "psql is needed (apt-get install postgresql-client)"
fi
cleanup=()
on_exit() { local c; for c in "${cleanup[@]}"; do eval "$c" || true; done; }
trap on_exit EXIT
if [[ -n ${KEEP:-} ]]; then work=$KEEP; mkdir -p "$work"; else
  work=$(mktemp -d); cleanup+=("rm -rf '$work'"); fi

# The private cluster: as the tests start it (tests/it/support/pg.rs), as postgres when root.
# shellcheck source=scripts/pg-cluster.sh
. scripts/pg-cluster.sh
start_cluster() {
  pg_cluster_start "$work/pg" || die "could not start the private PostgreSQL cluster"
  cleanup=("pg_cluster_stop immediate" "${cleanup[@]}")
  psql -Xq "$PG_URL/postgres" -c "CREATE DATABASE scale" -c "CREATE DATABASE imported"
  DB=$PG_URL/scale
  IMPORT_DB=$PG_URL/imported
}

if [[ $BACKEND == sqlite ]]; then
  store=$work/scale.db
  rm -f "$store" "$store-wal" "$store-shm"
  import_store=$work/imported.db
  q() { sqlite3 "$store" "$1"; }
  cols() { sqlite3 "$store" "SELECT group_concat(name, ', ') FROM pragma_table_info('$1')"; }
  hex='printf('"'"'%012x'"'"', k.n)'
else
  [[ -n $DB ]] || start_cluster
  store=$DB
  import_store=${IMPORT_DB:-}
  q() { psql -XAtq "$store" -c "$1"; }
  # Every column but the serial ones PostgreSQL numbers itself (runs.seq).
  cols() { q "SELECT string_agg(column_name, ', ' ORDER BY ordinal_position) FROM information_schema.columns
              WHERE table_schema = current_schema() AND table_name = '$1' AND NOT (table_name = 'runs' AND column_name = 'seq')"; }
  hex="lpad(to_hex(k.n), 12, '0')"
  if [[ -n $(q "SELECT 1 FROM information_schema.tables WHERE table_name = 'runs'") ]]; then
    [[ $(q "SELECT count(*) FROM runs") == 0 ]] || die "$store holds runs already; give an empty database"
  fi
fi

"$SP" import --db "$store" "$SEED" >/dev/null
seed=$(q "SELECT id FROM runs LIMIT 1")
# Every column copied as it is, but those the sed script $2 rewrites.
select_list() { cols "$1" | sed -E "$2"; }
kernel="(CASE k.n % 4 WHEN 0 THEN '5.10.0-28-amd64' WHEN 1 THEN '6.1.0-18-amd64' WHEN 2 THEN '6.12.9-amd64' ELSE '6.9.7-amd64' END)"
host="'host-' || (k.n % 10)"
if [[ $BACKEND == sqlite ]]; then
  fingerprint="json_set(fingerprint_json, '\$.hostname', $host, '\$.kernel_release', $kernel)"
else
  fingerprint="jsonb_set(jsonb_set(fingerprint_json::jsonb, '{hostname}', to_jsonb($host)), '{kernel_release}', to_jsonb($kernel))::text"
fi
run_cols=$(cols runs)
run_sel=$(select_list runs "
  s/\bseq\b/NULL/;
  s/\bid\b/$hex/;
  s/\blabel\b/'scale-' || (k.n % 20000)/;
  s/\bstarted_ns\b/started_ns + k.n * 60000000000/;
  s/\bended_ns\b/ended_ns + k.n * 60000000000/;
  s/\bhostname\b/$host/;
  s/\bkernel_release\b/$kernel/;
  s/\bfingerprint_json\b/$fingerprint/")
res_cols=$(cols results)
res_sel=$(select_list results "s/^id\b/id + k.n * 1000/; s/\brun_id\b/$hex/")
tri_cols=$(cols trials)
tri_sel=$(cols trials | sed -E 's/([a-z_]+)/t.\1/g; s/t\.result_id/t.result_id + k.n * 1000/')
small_cols() { # warnings, derived, series, profiles: keyed by run_id
  local t=$1; printf 'INSERT INTO %s (%s) SELECT %s FROM %s, k WHERE run_id = %s;\n' "$t" \
    "$(cols "$t")" "$(select_list "$t" "s/\brun_id\b/$hex/")" "$t" "'$seed'"; }
{
  if [[ $BACKEND == sqlite ]]; then
    echo "PRAGMA foreign_keys = OFF; BEGIN;"
    echo "CREATE TEMP TABLE k (n INTEGER PRIMARY KEY);"
    echo "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < $((N - 1)))"
    echo "INSERT INTO k SELECT n FROM c;"
  else
    echo "BEGIN;"
    echo "CREATE TEMP TABLE k AS SELECT n::bigint AS n FROM generate_series(1, $((N - 1))) n;"
  fi
  echo "INSERT INTO runs ($run_cols) SELECT $run_sel FROM runs, k WHERE runs.id = '$seed';"
  echo "INSERT INTO results ($res_cols) SELECT $res_sel FROM results, k WHERE run_id = '$seed';"
  # The results' ids were given explicitly: PostgreSQL's sequence goes on after them.
  if [[ $BACKEND == pg ]]; then
    echo "SELECT setval(pg_get_serial_sequence('results', 'id'), (SELECT max(id) FROM results));"
  fi
  echo "INSERT INTO trials ($tri_cols) SELECT $tri_sel FROM trials t JOIN results r ON r.id = t.result_id, k WHERE r.run_id = '$seed';"
  for t in warnings derived series profiles; do small_cols "$t"; done
  echo "COMMIT;"
  if [[ $BACKEND == pg ]]; then echo "ANALYZE;"; fi
} >"$work/copy.sql"
if [[ $BACKEND == sqlite ]]; then
  sqlite3 "$store" <"$work/copy.sql"
  size=$(du -h "$store" | cut -f1)
else
  psql -XAtq -v ON_ERROR_STOP=1 "$store" -f "$work/copy.sql" >/dev/null
  size=$(q "SELECT pg_size_pretty(pg_database_size(current_database()))")
fi
echo "store ($BACKEND): $(q 'SELECT count(*) FROM runs') runs, $size"
# BUILD_ONLY=1: the store is made (keep it with KEEP=DIR or DB=URL) and nothing is timed.
[[ -z ${BUILD_ONLY:-} ]] || exit 0

ms() { echo $(($(date +%s%N) / 1000000)); }
once() { # COMMAND...: sets took (wall ms) and kib (peak RSS), or fails with its last message
  local t0 rc=0; t0=$(ms)
  /usr/bin/time -f "%M" -o "$work/time" "$@" >/dev/null 2>"$work/err" || rc=$?
  # changes answers with its exit code: 6 changes found, 7 nothing searched (every result
  # of a history left out as disturbed, as in a store copied from a busy seed).
  if ((rc != 0)) && ! [[ $2 == changes && ($rc == 6 || $rc == 7) ]]; then
    failed="FAILED (exit $rc: $(tail -1 "$work/err"))"; return 1
  fi
  took=$(($(ms) - t0)); kib=$(tail -1 "$work/time")
}
line() { printf '%-6s %-30s %9s ms cold %9s ms warm %9s kB\n' "$BACKEND" "$1" "$2" "$3" "$4"; }
t() { # NAME COMMAND...: run twice, cold then warm
  local name=$1 cold; shift
  once "$@" || { echo "$BACKEND $name: $failed"; return; }
  cold=$took; local peak=$kib
  once "$@" || { echo "$BACKEND $name: $failed"; return; }
  if ((kib > peak)); then peak=$kib; fi
  line "$name" "$cold" "$took" "$peak"
}
t1() { # NAME COMMAND...: run once
  local name=$1; shift
  once "$@" || { echo "$BACKEND $name: $failed"; return; }
  line "$name" "$took" - "$kib"
}
label=scale-7
id=$(q "SELECT id FROM runs WHERE label = 'scale-8' ORDER BY started_ns DESC LIMIT 1")
t "show LABEL" "$SP" show --db "$store" "$label"
t "show ID" "$SP" show --db "$store" "$id"
t "compare LABEL LABEL" "$SP" compare --db "$store" "$label" scale-8
t "runs --limit 20" "$SP" runs --db "$store" --limit 20
t "runs" "$SP" runs --db "$store"
# The fleet's views, grouped in the database (#35 item 5: they read every run before).
t "runs --by kernel" "$SP" runs --db "$store" --by kernel
t "compare --by kernel" "$SP" compare --db "$store" --by kernel
t "report --by host" "$SP" report --db "$store" --by host -o "$work/by.html"
t "report --by kernel" "$SP" report --db "$store" --by kernel -o "$work/by.html"
t "plot --heatmap --by kernel" "$SP" plot --db "$store" --heatmap --by kernel -o "$work/heat.svg"
t "changes" "$SP" changes --db "$store"
# One run uploaded into the big store, as a spool file is: a one-run SQLite store synced in
# (a fresh id for the seed run, so that it is copied).
fresh=$(printf '%012x' $((0xfeed00000000 + N)))
sed "s/$seed/$fresh/g" "$SEED" >"$work/one.json"
"$SP" import --db "$work/one.db" "$work/one.json" 2>/dev/null
t1 "sync 1 run in" "$SP" sync "$work/one.db" "$store"
ids=$(q "SELECT id FROM runs ORDER BY seq LIMIT $EXPORT_RUNS")
# shellcheck disable=SC2086
t1 "export $EXPORT_RUNS runs" "$SP" export --db "$store" -o "$work/many.json" $ids
if [[ -s $work/many.json ]]; then
  echo "export file: $(du -h "$work/many.json" | cut -f1)"
  if [[ -n $import_store ]]; then
    t1 "import $EXPORT_RUNS runs" "$SP" import --db "$import_store" "$work/many.json"
  else
    echo "$BACKEND import: skipped (give IMPORT_DB=postgres://... an empty database)"
  fi
fi
[[ $BACKEND == sqlite ]] || exit 0
before=$(stat -c %s "$store")
removed=$((N / 2 < 20 ? N / 2 : 20))
half=$(q "SELECT id FROM runs ORDER BY seq LIMIT $removed")
for r in $half; do "$SP" rm --db "$store" "$r" >/dev/null; done
q "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
echo "rm $removed runs: file $before -> $(stat -c %s "$store") bytes, $(q 'PRAGMA freelist_count') free pages"
