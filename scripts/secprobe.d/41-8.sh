# shellcheck shell=bash
# #41 item 8, sourced by scripts/secprobe.sh: a store root's sysperf makes in a directory
# others may enter (0755). Made 0644 (the umask's), it and its -shm (which SQLite gives the
# store's mode) could be opened by the attacker, who held read locks on them (python3's
# fcntl.lockf) while a reader of root's kept the store open: root's next run gave up
# ("locked"). Replayed with python3; without it, judged by the modes alone.
probe_41_8() {
  local what="a new store in a 0755 directory (another user's lock on its -shm)"
  local d=$W/i41-8 db reader holder i out rc modes py evidence=""
  chmod 755 "$d"
  db=$d/store.db
  timeout -k 5 120 "$SYSPERF" run syscall --quick --db "$db" >/dev/null 2>"$d/run.err"
  if [ ! -f "$db" ]; then
    report "41.8" "$what" inconclusive "root's run made no store: $(head -c 200 "$d/run.err")"
    return
  fi
  modes="store.db mode $(stat -c %a "$db")"
  # The system's python3, which the attacker can run too (root's PATH may start with a
  # directory of root's, such as pyenv's shims, that other users cannot enter).
  py=$(PATH=/usr/bin:/bin command -v python3)
  if [ -z "$py" ]; then
    [ $(($(stat -c %#a "$db") & 044)) -ne 0 ] &&
      evidence="root's new $modes: others may open it and lock it"
    judge "41.8" "$what" "$evidence"
    return
  fi
  # Root's reader keeps the store open, so that its -shm exists.
  "$py" -c "
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1])
c.execute('select count(*) from runs').fetchall()
open(sys.argv[2], 'w').write('ready')
time.sleep(60)" "$db" "$d/reader.ready" 2>/dev/null &
  reader=$!
  bg+=("$reader")
  for i in $(seq 1 50); do [ -e "$d/reader.ready" ] && break; sleep 0.1; done
  [ -e "$db-shm" ] && modes="$modes, store.db-shm mode $(stat -c %a "$db-shm")"
  # The attacker opens the store and its -shm and holds read locks on both.
  "${asu[@]}" "$py" -c "
import fcntl, sys, time
fs = [open(sys.argv[1], 'rb'), open(sys.argv[1] + '-shm', 'rb')]
for f in fs:
    fcntl.lockf(f, fcntl.LOCK_SH | fcntl.LOCK_NB, 0, 0)
print('locked', flush=True)
time.sleep(60)" "$db" >"$d/holder.out" 2>"$d/holder.err" &
  holder=$!
  bg+=("$holder")
  for i in $(seq 1 50); do
    grep -q locked "$d/holder.out" 2>/dev/null && break
    alive "$holder" || break
    sleep 0.1
  done
  if grep -q locked "$d/holder.out" 2>/dev/null; then
    out=$(SYSPERF_TEST_BUSY_TIMEOUT_MS=500 timeout -k 5 120 "$SYSPERF" run syscall --quick \
      --db "$db" 2>&1)
    rc=$?
    evidence="the attacker holds read locks on root's new store and its -shm ($modes)"
    [ "$rc" != 0 ] && evidence="$evidence; root's next run failed (exit $rc): $(printf '%s\n' "$out" | grep -m1 -i 'lock' | cut -c1-110)"
  fi
  kill -KILL "$holder" "$reader" 2>/dev/null
  wait "$holder" "$reader" 2>/dev/null
  # Held only when the attacker was refused the files, not when the replay itself failed.
  if [ -z "$evidence" ] && ! grep -q PermissionError "$d/holder.err" 2>/dev/null; then
    report "41.8" "$what" inconclusive "the attacker's python3 neither locked nor was refused ($modes): $(tail -1 "$d/holder.err" 2>/dev/null | cut -c1-100)"
    return
  fi
  judge "41.8" "$what" "$evidence"
}
