# shellcheck shell=bash
# #45 (the cspeed suite), sourced by scripts/secprobe.sh: the compiler's own variables in
# root's environment (another user's, under sudo -E). gcc runs the `as`, `cc1` and `collect2`
# it finds through COMPILER_PATH and GCC_EXEC_PREFIX; the attacker's directory holds ones
# that leave a mark. Root's `run --suite cspeed.compile --quick` with both variables set to
# it must compile with the system's own passes (SECURITY.md: cc runs with its environment
# cleared). Everything is under "$W/i45-1" and the attacker's home.
probe_45_1() {
  local what="compiler passes planted through COMPILER_PATH and GCC_EXEC_PREFIX (run --suite cspeed.compile)"
  local d=$W/i45-1 mark=$AH/i45-1-ran rc p
  as_user mkdir -p "$AH/cc45"
  for p in as cc1 collect2 ld; do
    printf '#!/bin/sh\nid -u >> %s\nexit 1\n' "$mark" | as_user tee "$AH/cc45/$p" >/dev/null
    as_user chmod 755 "$AH/cc45/$p"
  done
  COMPILER_PATH="$AH/cc45" GCC_EXEC_PREFIX="$AH/cc45/" timeout -k 5 300 "$SYSPERF" run \
    --suite cspeed.compile --quick --db "$d/s.db" >/dev/null 2>"$d/run.err"
  rc=$?
  judge_mark "45.1" "$what" "$mark" "compiler passes" "$rc" "$d/run.err"
}
