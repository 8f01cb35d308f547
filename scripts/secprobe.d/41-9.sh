# shellcheck shell=bash
# #41 item 9, sourced by scripts/secprobe.sh (which defines judge, $W and $SYSPERF): root's
# own `gc --abandoned --older-than 1s`, once a second, races root's run while it calibrates
# (`run --min-time 3`: the run's first write comes some 9 s after its start). gc took the
# silent run for abandoned and removed it, and the run then died storing its results.
probe_41_9() {
  local what="gc --abandoned racing a calibrating run" d=$W/i41-9 hit="" r rc
  timeout -k 5 120 "$SYSPERF" run syscall --min-time 3 --trials 1 --db "$d/s.db" \
    >/dev/null 2>"$d/run.err" &
  r=$!
  for _ in 1 2 3 4 5 6 7; do
    sleep 1
    "$SYSPERF" gc --abandoned --older-than 1s --db "$d/s.db" >/dev/null 2>>"$d/gc.err"
  done
  wait "$r"
  rc=$?
  if grep -q 'removed abandoned run' "$d/gc.err"; then
    hit="$(grep -m1 'removed abandoned run' "$d/gc.err" | cut -c1-100); the run exited $rc"
  elif [ "$rc" != 0 ]; then
    hit="the run exited $rc: $(tail -1 "$d/run.err" | cut -c1-120)"
  fi
  judge "41.9" "$what" "$hit"
}
