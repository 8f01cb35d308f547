#!/usr/bin/env bash
# Fleet audit (#35): re-measures what the fleet audit measured, against a private PostgreSQL
# cluster this script starts in a temporary directory and removes (scripts/pg-cluster.sh).
# A script, not a test: it takes minutes, loads both cores, and needs root for the cron-like
# part. Run it under the machine's timing lock: flock /tmp/sysperf-timing.lock scripts/fleet-audit.sh
#
# writers  WRITERS (8) writers each run `sysperf run` (a few tests, unique labels) one after the
#          other for WRITE_S (180) seconds while a killer SIGKILLs a random one every 0.5-4 s.
#          Then, in SQL: runs marked complete that are not whole (a test missing, a result
#          without its trials, a summary counting other trials than stored), results without
#          trials anywhere; every run that exited 0 is complete with exactly the trials its
#          --json output printed (no silent hole); every killed run is either complete or
#          incomplete and never ended, listed as measuring now and as abandoned once its
#          heartbeat is older than the timeout (the heartbeats moved 2 h back, then restored),
#          and `gc --abandoned --older-than 30s` removes exactly those.
# outage   WRITERS writers run while the server is stopped (pg_ctl stop -m fast) OUTAGES (12)
#          times for 1-12 s and started again, with SYSPERF_PG_RETRY_S=RETRY_S (5): short
#          outages are reconnected, long ones spooled, runs started during one start against
#          the spool. Nothing is done by hand: each writer's next run uploads the spools, then
#          one `doctor` on the host (as the design says). Every run that exited 0 or 5
#          (spooled) must be complete in the database with every measured trial (test, round,
#          wall_ns) its output printed, and the spool directory empty. Then a run started
#          while the server is down (exit 5, uploaded by the next run), and the same without
#          HOME and XDG_STATE_HOME (cron) as root: the spool goes to /var/lib/sysperf/spool,
#          here a tmpfs in a private mount namespace, so that nothing is left in the real one.
# export   a full default `sysperf run` into a temporary SQLite store, exported (its size
#          quoted), as the seed of `SEED=... N=EXPORT_RUNS EXPORT_RUNS=EXPORT_RUNS
#          scripts/store-scale.sh` on SQLite and on PostgreSQL (export and import wall time
#          and peak RSS, the export file's size). EXPORT_SEED=FILE reuses an export.
#
# Usage: [PARTS="writers outage export"] [WRITERS=8] [WRITE_S=180] [OUTAGES=12] [RETRY_S=5]
#        [EXPORT_RUNS=10000] [SEED=1] [SYSPERF=target/release/sysperf] scripts/fleet-audit.sh
# Prints one line per figure; exits 1 if any check failed.
set -uo pipefail
cd "$(dirname "$0")/.."
PARTS=${PARTS:-writers outage export}
WRITERS=${WRITERS:-8}
WRITE_S=${WRITE_S:-180}
OUTAGES=${OUTAGES:-12}
RETRY_S=${RETRY_S:-5}
EXPORT_RUNS=${EXPORT_RUNS:-10000}
RANDOM=${SEED:-1}
SP=${SYSPERF:-$PWD/target/release/sysperf}
[[ -x $SP ]] || { echo "fleet-audit: no sysperf at $SP (cargo build --release, or SYSPERF=...)" >&2; exit 2; }
for tool in psql jq; do
  command -v $tool >/dev/null || { echo "fleet-audit: $tool is needed (apt-get install postgresql-client jq)" >&2; exit 2; }
done
# shellcheck source=scripts/pg-cluster.sh
. scripts/pg-cluster.sh

work=$(mktemp -d /tmp/fleet-audit-XXXXXX)
bg=() # background jobs of this script, ended on exit
ours() { [[ -n ${PG_PORT:-} ]] && pgrep -f -- "--db postgres://sysperf@127.0.0.1:$PG_PORT/"; }
on_exit() {
  local p
  for p in "${bg[@]}"; do kill -KILL "$p" 2>/dev/null; done
  # The writers' sysperf processes: found by the cluster's port in their command line.
  for p in $(ours); do kill -KILL "$p" 2>/dev/null; done
  pg_cluster_stop immediate
  rm -rf "$work"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

failed=0
check() { # NAME GOT WANT: one line, counted as a failure when they differ
  if [[ $2 == "$3" ]]; then printf '  %-64s %s\n' "$1" "$2"; else
    printf '  %-64s %s (expected %s) FAILED\n' "$1" "$2" "$3"; failed=$((failed + 1)); fi
}
fig() { printf '  %-64s %s\n' "$1" "$2"; }
rand() { echo $(($1 + RANDOM % ($2 - $1 + 1))); }              # integer in [A, B]
rand_s() { awk -v r="$RANDOM" -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a + (b - a) * (r % 1000) / 999 }'; }

pg_cluster_start "$work/pg" || exit 1
q() { psql -XAtq -v ON_ERROR_STOP=1 "$1" -c "$2"; } # URL SQL
newdb() { q "$PG_URL/postgres" "CREATE DATABASE $1" && echo "$PG_URL/$1"; }

# One writer: runs one after the other until the time is up (or the file $work/stop appears),
# each labelled NAME-N, its --json output, stderr and exit code kept; "PID LABEL" of the one
# running in NAME.cur for the killer.
writer() { # NAME STATE-DIR DB UNTIL TESTS...
  local name=$1 db=$3 until=$4 n=0 l pid
  export XDG_STATE_HOME=$2
  shift 4
  while (($(date +%s) < until)) && [[ ! -e $work/stop ]]; do
    n=$((n + 1)); l=$name-$n
    "$SP" run "$@" --label "$l" --json --db "$db" >"$out/$l.json" 2>"$out/$l.err" </dev/null &
    pid=$!
    echo "$pid $l" >"$out/$name.cur"
    wait "$pid"
    echo $? >"$out/$l.rc"
  done
  rm -f "$out/$name.cur"
}

# Counts exit codes of the runs in $out: sets n_runs and prints one line per code.
exit_codes() {
  n_runs=$(ls "$out"/*.rc 2>/dev/null | wc -l)
  fig "runs started" "$n_runs"
  cat "$out"/*.rc 2>/dev/null | sort -n | uniq -c | while read -r c code; do
    case $code in 0) what=ok;; 5) what="spooled (server away)";; 137) what=SIGKILL;; *) what=other;; esac
    fig "  exit $code ($what)" "$c"
  done
}

# The measured trials (label test round wall_ns) of the runs whose exit code is one of $1,
# from their --json output, sorted; and the same from database $2.
printed_trials() {
  local f l
  for f in "$out"/*.rc; do
    [[ " $1 " == *" $(cat "$f") "* ]] || continue
    l=$(basename "$f" .rc)
    jq -r --arg l "$l" '.results[] | .id as $b | .trials[] | select(.kind == "measured")
      | "\($l) \($b) \(.round) \(.wall_ns)"' "$out/$l.json" 2>/dev/null || echo "$l unreadable-output"
  done | sort
}
stored_trials() { # DB LABELS-FILE
  q "$1" "SELECT u.label || ' ' || r.bench || ' ' || t.round || ' ' || t.wall_ns
            FROM runs u JOIN results r ON r.run_id = u.id JOIN trials t ON t.result_id = r.id
           WHERE t.kind = 'measured'" | sort | join - <(sort -u "$2") | sort
}

# Runs marked complete that are not whole, and results without trials; $1 the database, $2
# the number of tests per run, $3 the counted trials per test.
integrity() {
  local measured="(SELECT count(*) FROM trials t WHERE t.result_id = r.id AND t.kind = 'measured')"
  check "complete runs that are not whole (half-written)" "$(q "$1" "
    SELECT count(*) FROM runs u WHERE u.complete = 1 AND (u.ended_ns IS NULL
       OR (SELECT count(*) FROM results r WHERE r.run_id = u.id) <> $2
       OR EXISTS (SELECT 1 FROM results r WHERE r.run_id = u.id
                   AND (r.error IS NOT NULL OR r.has_summary = 0 OR $measured <> $3)))")" 0
  check "results without trials (any run)" "$(q "$1" "
    SELECT count(*) FROM results r WHERE NOT EXISTS (SELECT 1 FROM trials t WHERE t.result_id = r.id)")" 0
  check "summaries counting other trials than stored (any run)" "$(q "$1" "
    SELECT count(*) FROM results r WHERE r.has_summary = 1 AND r.wall_n <> $measured")" 0
  check "trials, warnings, derived rows of no run" "$(q "$1" "
    SELECT (SELECT count(*) FROM trials t WHERE NOT EXISTS (SELECT 1 FROM results r WHERE r.id = t.result_id))
         + (SELECT count(*) FROM warnings w WHERE NOT EXISTS (SELECT 1 FROM runs u WHERE u.id = w.run_id))
         + (SELECT count(*) FROM derived d WHERE NOT EXISTS (SELECT 1 FROM runs u WHERE u.id = d.run_id))")" 0
}

# The runs that exited with one of the codes $1 are in database $2 with every trial printed.
no_holes() { # CODES DB WHAT
  printed_trials "$1" >"$work/printed"
  awk '{ print $1 }' "$work/printed" | sort -u >"$work/labels"
  stored_trials "$2" "$work/labels" >"$work/stored"
  local labels rounds_printed rounds_stored
  labels=$(wc -l <"$work/labels")
  check "$3: runs not complete in the database" "$(q "$2" "SELECT count(*) FROM runs WHERE complete = 1 AND label IN ($(sed "s/.*/'&'/" "$work/labels" | paste -sd, -))" |
    awk -v n="$labels" '{ print n - $1 }')" 0
  # A round is finished when each test has its trial of that round.
  rounds_printed=$(awk '{ print $1, $3 }' "$work/printed" | sort -u | wc -l)
  rounds_stored=$(awk '{ print $1, $3 }' "$work/stored" | sort -u | wc -l)
  fig "$3: measured trials printed / in the database" "$(wc -l <"$work/printed") / $(wc -l <"$work/stored")"
  fig "$3: rounds finished / in the database" "$rounds_printed / $rounds_stored"
  check "$3: printed trials missing from the database (holes)" "$(comm -23 "$work/printed" "$work/stored" | wc -l)" 0
  check "$3: trials in the database never printed" "$(comm -13 "$work/printed" "$work/stored" | wc -l)" 0
}


part_writers() {
  echo "writers: $WRITERS concurrent writers for $WRITE_S s, a random one SIGKILLed every 0.5-4 s"
  local db tests=(syscall signocsw pipeself4 csw --trials 4 --min-time 0.05) ntests=4 trials=4
  db=$(newdb writers) || return
  out=$work/writers; mkdir -p "$out"
  local until=$(($(date +%s) + WRITE_S)) i
  for i in $(seq 1 "$WRITERS"); do
    writer "w$i" "$work/state" "$db" "$until" "${tests[@]}" 2>/dev/null &
    bg+=($!)
  done
  local kills=0 pid l
  while (($(date +%s) < until)); do
    sleep "$(rand_s 0.5 4)"
    read -r pid l 2>/dev/null <"$out/w$(rand 1 "$WRITERS").cur" || continue
    kill -KILL "$pid" 2>/dev/null && { echo "$l" >>"$out/killed"; kills=$((kills + 1)); }
  done
  wait "${bg[@]}"; bg=()
  local last_kill; last_kill=$(date +%s)
  fig "SIGKILLs sent" "$kills"
  exit_codes
  check "sysperf processes left" "$(ours | wc -l)" 0
  check "spool files (the server was up)" "$(find "$work/state" -name '*.db' 2>/dev/null | wc -l)" 0
  integrity "$db" "$ntests" "$trials"
  no_holes 0 "$db" "exit 0"
  # Killed runs: in the database complete, or incomplete and never ended (abandoned later).
  local killed_in killed_complete incomplete ended_incomplete
  grep -lx 137 "$out"/*.rc 2>/dev/null | xargs -r -n1 basename | sed 's/\.rc$//' | sort >"$work/killed"
  local in_list; in_list=$(sed "s/.*/'&'/" "$work/killed" | paste -sd, -); [[ -n $in_list ]] || in_list="''"
  killed_in=$(q "$db" "SELECT count(*) FROM runs WHERE label IN ($in_list)")
  killed_complete=$(q "$db" "SELECT count(*) FROM runs WHERE complete = 1 AND label IN ($in_list)")
  incomplete=$(q "$db" "SELECT count(*) FROM runs WHERE complete = 0")
  ended_incomplete=$(q "$db" "SELECT count(*) FROM runs WHERE complete = 0 AND ended_ns IS NOT NULL")
  fig "killed runs (exit 137) / in the database" "$(wc -l <"$work/killed") / $killed_in"
  fig "  of which complete (killed after their end was stored)" "$killed_complete"
  check "incomplete runs that are not killed ones" "$(q "$db" "SELECT count(*) FROM runs WHERE complete = 0 AND label NOT IN ($in_list)")" 0
  check "incomplete runs with an end (interrupted, not killed)" "$ended_incomplete" 0
  local json="$SP runs --db $db --json"
  check "incomplete runs listed as measuring now" "$($json | jq '[.[] | select(.complete | not) | select(.stopped.abandoned == false)] | length')" "$incomplete"
  # The timeout (an hour) passed: every heartbeat moved 2 h back, and put back after.
  q "$db" "UPDATE runs SET heartbeat_ns = heartbeat_ns - 7200000000000, started_ns = started_ns - 7200000000000" >/dev/null
  check "incomplete runs listed as abandoned 2 h later" "$($json | jq '[.[] | select(.stopped.abandoned == true)] | length')" "$incomplete"
  check "complete runs listed as abandoned 2 h later" "$($json | jq '[.[] | select(.complete) | select(.stopped != null)] | length')" 0
  q "$db" "UPDATE runs SET heartbeat_ns = heartbeat_ns + 7200000000000, started_ns = started_ns + 7200000000000" >/dev/null
  sleep $((last_kill + 31 - $(date +%s) > 0 ? last_kill + 31 - $(date +%s) : 0))
  local complete_before; complete_before=$(q "$db" "SELECT count(*) FROM runs WHERE complete = 1")
  "$SP" gc --abandoned --older-than 30s --db "$db" >/dev/null 2>"$work/gc.err"
  check "gc --abandoned --older-than 30s: runs removed" "$(grep -c 'removed abandoned run' "$work/gc.err")" "$incomplete"
  check "incomplete runs left after gc --abandoned" "$(q "$db" "SELECT count(*) FROM runs WHERE complete = 0")" 0
  check "complete runs removed by gc --abandoned" "$((complete_before - $(q "$db" "SELECT count(*) FROM runs WHERE complete = 1")))" 0
}

part_outage() {
  echo "outage: $WRITERS writers; the server stopped $OUTAGES times for 1-12 s (SYSPERF_PG_RETRY_S=$RETRY_S)"
  local db tests=(syscall signocsw pipeself4 csw --trials 6 --min-time 0.05) ntests=4 trials=6
  db=$(newdb outage) || return
  out=$work/outage; mkdir -p "$out"
  local state=$work/state-outage i k down long=0 short=0
  export SYSPERF_PG_RETRY_S=$RETRY_S
  rm -f "$work/stop"
  for i in $(seq 1 "$WRITERS"); do
    writer "o$i" "$state" "$db" $(($(date +%s) + 3600)) "${tests[@]}" 2>/dev/null &
    bg+=($!)
  done
  for k in $(seq 1 "$OUTAGES"); do
    sleep "$(rand_s 3 8)"
    down=$(rand 1 12)
    pg_cluster_stop fast
    sleep "$down"
    pg_cluster_again || { echo "fleet-audit: the server did not start again" >&2; return 1; }
    if ((down > RETRY_S)); then long=$((long + 1)); else short=$((short + 1)); fi
  done
  # Each writer finishes the run it is in; the next runs uploaded what spooled before.
  sleep 5; touch "$work/stop"
  wait "${bg[@]}"; bg=()
  fig "outages (down > RETRY_S / shorter)" "$long / $short"
  exit_codes
  fig "spool files waiting after the writers" "$(find "$state" -name '*.db' 2>/dev/null | wc -l)"
  # The host's next command: doctor (no hand: no sync, no path given).
  XDG_STATE_HOME=$state "$SP" doctor --db "$db" >/dev/null 2>"$work/doctor.err"
  fig "uploaded by the next doctor" "$(grep -c 'uploaded the spool file' "$work/doctor.err")"
  check "spool files left after the next doctor" "$(find "$state" -name '*.db' 2>/dev/null | wc -l)" 0
  check "runs that failed (exit 1)" "$(grep -lx 1 "$out"/*.rc 2>/dev/null | wc -l)" 0
  check "sysperf processes left" "$(ours | wc -l)" 0
  integrity "$db" "$ntests" "$trials"
  no_holes "0 5" "$db" "exit 0 or 5"

  echo "outage: a run started while the server is down, then the next run"
  local l
  pg_cluster_stop fast
  out=$work/away; mkdir -p "$out"
  XDG_STATE_HOME=$state "$SP" run "${tests[@]}" --label away-1 --json --db "$db" >"$out/away-1.json" 2>"$out/away-1.err"
  echo $? >"$out/away-1.rc"
  check "exit code of a run started with the server down" "$(cat "$out/away-1.rc")" 5
  check "its spool files" "$(find "$state" -name '*.db' | wc -l)" 1
  pg_cluster_again
  XDG_STATE_HOME=$state "$SP" run "${tests[@]}" --label away-2 --json --db "$db" >"$out/away-2.json" 2>"$out/away-2.err"
  echo $? >"$out/away-2.rc"
  check "the next run (server back): exit code" "$(cat "$out/away-2.rc")" 0
  check "  said it uploaded the spool file" "$(grep -c 'uploaded the spool file' "$out/away-2.err")" 1
  check "  spool files left" "$(find "$state" -name '*.db' | wc -l)" 0
  no_holes "0 5" "$db" "started while down"

  echo "outage: the same from cron (no HOME, no XDG_STATE_HOME, root: /var/lib/sysperf/spool)"
  if ((EUID != 0)); then echo "  skipped: not root"; return; fi
  out=$work/cron; mkdir -p "$out"
  # A private mount namespace (held by a sleeping process) with a tmpfs on /var/lib/sysperf:
  # sysperf sees that path, and nothing it writes there reaches the real one.
  unshare -m --propagation private sleep 3600 &
  local holder=$!; bg+=("$holder")
  sleep 0.2
  local ns=(nsenter -t "$holder" -m --)
  "${ns[@]}" mount -t tmpfs fleet-audit /var/lib/sysperf || { check "tmpfs on /var/lib/sysperf" failed ok; return; }
  local cron=(env -i PATH=/usr/bin:/bin SYSPERF_PG_RETRY_S="$RETRY_S")
  pg_cluster_stop fast
  "${ns[@]}" "${cron[@]}" "$SP" run "${tests[@]}" --label cron-1 --json --db "$db" >"$out/cron-1.json" 2>"$out/cron-1.err"
  echo $? >"$out/cron-1.rc"
  "${ns[@]}" find /var/lib/sysperf/spool -name '*.db' | wc -l >"$out/spooled"
  pg_cluster_again
  "${ns[@]}" "${cron[@]}" "$SP" doctor --db "$db" >/dev/null 2>"$out/doctor.err"
  "${ns[@]}" find /var/lib/sysperf/spool -name '*.db' | wc -l >"$out/left"
  kill "$holder"; wait "$holder" 2>/dev/null
  check "cron-like run with the server down: exit code" "$(cat "$out/cron-1.rc" 2>/dev/null)" 5
  check "  spool files in /var/lib/sysperf/spool" "$(cat "$out/spooled" 2>/dev/null)" 1
  check "  uploaded by the next doctor (cron-like)" "$(grep -c 'uploaded the spool file /var/lib/sysperf/spool/' "$out/doctor.err" 2>/dev/null)" 1
  check "  spool files left" "$(cat "$out/left" 2>/dev/null)" 0
  no_holes "0 5" "$db" "cron-like"
  unset SYSPERF_PG_RETRY_S
}

part_export() {
  echo "export: a full default run as the seed of $EXPORT_RUNS runs (scripts/store-scale.sh)"
  local seed=${EXPORT_SEED:-}
  if [[ -z $seed ]]; then
    seed=$work/seed.json
    local t0=$(date +%s)
    "$SP" run --label seed --db "$work/seed.db" >/dev/null 2>"$work/seed.err" || {
      check "the full default run" "exit $?: $(tail -1 "$work/seed.err")" ok; return; }
    fig "full default run" "$(($(date +%s) - t0)) s, $(sqlite3 "$work/seed.db" 'SELECT count(*) FROM results') tests"
    "$SP" export --db "$work/seed.db" -o "$seed" seed >/dev/null 2>&1
  fi
  fig "seed export (one run)" "$(stat -c %s "$seed") bytes"
  local backend
  for backend in sqlite pg; do
    SEED=$seed N=$EXPORT_RUNS EXPORT_RUNS=$EXPORT_RUNS BACKEND=$backend SYSPERF=$SP \
      scripts/store-scale.sh 2>&1 | grep -E '^store|export|import|FAILED' | sed 's/^/  /'
  done
}

for part in $PARTS; do
  case $part in
    writers) part_writers ;;
    outage) part_outage ;;
    export) part_export ;;
    *) echo "fleet-audit: no part '$part' (writers, outage, export)" >&2; exit 2 ;;
  esac
done
echo "fleet-audit: $failed check(s) failed"
[[ $failed -eq 0 ]]
