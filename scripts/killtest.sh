#!/usr/bin/env bash
# Kill test (a script, not a test: it takes minutes and needs root for cgroups and tracefs).
# Starts each command that creates something (run, run --suite for every suite, trace,
# profile, watch) N times in all, in turn, and sends it SIGKILL, SIGINT or SIGTERM at a random
# moment; then runs one `sysperf run syscall --quick` (which removes what the killed ones
# could not) and counts what is left: live processes, tracefs instances, memory cgroups,
# scratch directories, and stores failing PRAGMA integrity_check. Also checks that SIGINT and
# SIGTERM end a command with 130 and 143. Prints one line per kind and exits 1 if anything
# is left.
#
# Usage: [N=100] [SEED=1] scripts/killtest.sh
set -uo pipefail
cd "$(dirname "$0")/.."
N=${N:-100}
RANDOM=${SEED:-1}
cargo build --release -q || exit 1
SP=$PWD/target/release/sysperf
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmds=(
  "run syscall csw pipeback4 forks0 execs0null seqpage"
  "run --suite bbn"
  "run --suite feder"
  "run --suite scaling"
  "run --suite tty"
  "run --suite vm"
  "run --suite workload"
  "run --suite net"
  "trace pipeback4"
  "profile forks0 --seconds 1"
  "watch 1 5"
)
sigs=(KILL INT TERM)
declare -A want=([INT]=130 [TERM]=143 [KILL]=137)
bad_exit=0
for i in $(seq 1 "$N"); do
  c=${cmds[$(( (i - 1) % ${#cmds[@]} ))]}
  sig=${sigs[$(( RANDOM % 3 ))]}
  # A random moment in the first 3 s, sometimes right at the start (before any handler).
  delay=$(awk -v r="$RANDOM" 'BEGIN { printf "%.3f", (r % 3000) / 1000 }')
  # run and profile store what they measure; trace and watch keep nothing.
  dbarg=()
  case "$c" in run*|profile*) dbarg=(--db "$work/store$(( i % 5 )).db");; esac
  # shellcheck disable=SC2086
  "$SP" $c "${dbarg[@]}" >/dev/null 2>"$work/err" &
  pid=$!
  sleep "$delay"
  kill -s "$sig" "$pid" 2>/dev/null
  # A command that ended before the signal counts with its own code.
  for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "killtest: '$c' still running 10 s after SIG$sig" >&2
    kill -KILL "$pid"
    bad_exit=$((bad_exit + 1))
  fi
  wait "$pid"
  code=$?
  if [ "$code" -ne "${want[$sig]}" ] && [ "$code" -ne 0 ]; then
    echo "killtest: '$c' after SIG$sig at ${delay}s: exit $code (expected ${want[$sig]}): $(head -c 300 "$work/err")" >&2
    bad_exit=$((bad_exit + 1))
  fi
done
# Orphaned workers die with their sysperf (PR_SET_PDEATHSIG); give them a moment.
sleep 1
"$SP" run syscall --quick --db "$work/final.db" >/dev/null 2>"$work/final.err"
cat "$work/final.err" >&2
procs=$(ps -eo stat=,comm= | awk '$1 !~ /^Z/ && ($2 ~ /^sysperf/ || $2 == "nulljob" || $2 == "bigjob" || $2 == "forks" || $2 == "execs")' | wc -l)
cgroups=$(find /sys/fs/cgroup -maxdepth 4 -type d -name 'sysperf-*' 2>/dev/null | wc -l)
tmpdirs=$(find "${TMPDIR:-/tmp}" /var/tmp -maxdepth 1 -name 'sysperf-*' 2>/dev/null | wc -l)
instances=$(unshare -m sh -c 'mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null; ls /sys/kernel/tracing/instances 2>/dev/null' | grep -c '^sysperf-')
broken=0
for db in "$work"/store*.db; do
  [ -e "$db" ] || continue
  ok=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("PRAGMA integrity_check").fetchone()[0])' "$db")
  [ "$ok" = "ok" ] || { echo "killtest: $db: $ok" >&2; broken=$((broken + 1)); }
done
stores=$(ls "$work"/store*.db 2>/dev/null | wc -l)
echo "killtest: $N kills of ${#cmds[@]} commands (SIGKILL/SIGINT/SIGTERM at 0-3 s), then one run"
echo "  live processes left:    $procs"
echo "  memory cgroups left:    $cgroups"
echo "  tracefs instances left: $instances"
echo "  scratch dirs left:      $tmpdirs"
echo "  stores failing integrity_check: $broken of $stores"
echo "  wrong exit codes or hangs: $bad_exit"
total=$((procs + cgroups + instances + tmpdirs + broken + bad_exit))
[ "$total" -eq 0 ]
