# shellcheck shell=bash
# #41 item 5: a setting is put back byte for byte: kernel.core_pattern set to values with
# spaces, tabs, a pipe and brackets, then switched by `ab --sysctl` (to its end, and killed
# with SIGKILL mid-run then cleaned up by `doctor`): each must read back exactly as it was.
# Root's own use, no attacker. Sourced by scripts/secprobe.sh.
probe_41_5() {
  local d=$W/i41-5 what="settings put back exactly" hits=() core v got pid
  mkdir -m 700 "$d/st"
  core=$(cat /proc/sys/kernel/core_pattern)
  for v in 'core.%p %u %g' "$(printf 'core.%%p\t%%u\t%%g')" '|/nonexistent/sp-probe %p [%s]  x'; do
    printf '%s' "$v" >/proc/sys/kernel/core_pattern
    SYSPERF_STATE_DIR=$d/st "$SYSPERF" ab --sysctl kernel.core_pattern=core.sp-probe syscall \
      --quick --db "$d/s.db" >/dev/null 2>"$d/ab.err"
    got=$(cat /proc/sys/kernel/core_pattern)
    [ "$got" != "$v" ] && hits+=("after ab: '$v' came back as '$(printf '%s' "$got" | od -c | head -1 | cut -c9-)'")
    # Killed mid-run, cleaned up by the next sysperf.
    SYSPERF_STATE_DIR=$d/st "$SYSPERF" ab --sysctl kernel.core_pattern=core.sp-probe syscall \
      --db "$d/s.db" >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 1 200); do
      [ "$(cat /proc/sys/kernel/core_pattern)" = core.sp-probe ] && break
      sleep 0.05
    done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    SYSPERF_STATE_DIR=$d/st "$SYSPERF" doctor --db "$d/s.db" >/dev/null 2>&1
    got=$(cat /proc/sys/kernel/core_pattern)
    [ "$got" != "$v" ] && hits+=("after a killed ab: '$v' came back as '$(printf '%s' "$got" | od -c | head -1 | cut -c9-)'")
  done
  printf '%s' "$core" >/proc/sys/kernel/core_pattern
  judge 41.5 "$what" "$(IFS=';'; echo "${hits[*]}")"
}
