# shellcheck shell=bash
# #41 item 1: an export file whose B run records kernel.core_pattern = "|<attacker's program>
# %p" (in its fingerprint and in an ab side's notes), forged to name this host, made by the
# throwaway user and imported by root, then `explain --try-switches`: the pattern must never
# be written (a watcher reads core_pattern all along), nor any protection lowered (B also
# records kernel.randomize_va_space = 0). Sourced by scripts/secprobe.sh.
probe_41_1() {
  local d=$W/i41-1 what="explain --try-switches of an imported hostile sysctl" hits=()
  chmod 755 "$d"
  mkdir -m 700 "$d/root"
  local ud=$AH/i41-1
  as_user mkdir -p "$ud"
  printf '#!/bin/sh\ntouch %s/ran\n' "$ud" | as_user tee "$ud/evil" >/dev/null
  as_user chmod 755 "$ud/evil"
  # Not --quick: explain refuses smoke tests (#42), before the check this probes.
  if ! as_user "$SYSPERF" run syscall --trials 3 --min-time 0.01 --label u0 --db "$ud/u.db" >/dev/null 2>"$d/run.err" ||
    ! as_user "$SYSPERF" export u0 --db "$ud/u.db" -o "$ud/u0.json" 2>>"$d/run.err"; then
    report 41.1 "$what" inconclusive "the attacker's run or export failed: $(head -c 200 "$d/run.err")"
    return
  fi
  local pattern="|$ud/evil %p" core aslr
  core=$(cat /proc/sys/kernel/core_pattern)
  aslr=$(cat /proc/sys/kernel/randomize_va_space)
  as_user /usr/bin/python3 - "$ud/u0.json" "$ud/pair.json" "$pattern" "$core" "$aslr" "$(hostname)" <<'PY'
import json, sys
src, dst, pattern, core, aslr, host = sys.argv[1:]
doc = json.load(open(src))
run = doc["runs"][0]
runs = []
for side, value, asl in (("a", core, aslr), ("b", pattern, "0")):
    r = json.loads(json.dumps(run))
    r["id"] = side * 2 + "4100000001"
    r["label"] = "evil-" + side
    r["fingerprint"]["hostname"] = host
    r["fingerprint"]["sysctls"]["kernel.core_pattern"] = value
    r["fingerprint"]["sysctls"]["kernel.randomize_va_space"] = asl
    onoff = "on" if side == "b" else "off"
    r["notes"] = ["ab: switch %s kernel.core_pattern: kernel.core_pattern = %s" % (onoff, value)]
    runs.append(r)
doc["runs"] = runs
json.dump(doc, open(dst, "w"))
PY
  # Root's side: import the other user's file, then explain with --try-switches, while a
  # watcher notes any moment the pattern or ASLR is not as found.
  (
    while :; do
      c=$(cat /proc/sys/kernel/core_pattern)
      [ "$c" != "$core" ] && echo "core_pattern was set to '$c'" >>"$d/seen"
      [ "$(cat /proc/sys/kernel/randomize_va_space)" != "$aslr" ] && echo "randomize_va_space was lowered" >>"$d/seen"
      sleep 0.001
    done
  ) &
  local watcher=$!
  bg+=("$watcher")
  SYSPERF_STATE_DIR=$d/root/st "$SYSPERF" import "$ud/pair.json" --db "$d/root/s.db" >/dev/null 2>"$d/import.err" ||
    hits+=("import failed: $(head -c 150 "$d/import.err")")
  SYSPERF_STATE_DIR=$d/root/st "$SYSPERF" explain evil-a evil-b syscall --try-switches \
    --try-seconds 0.3 --json --db "$d/root/s.db" >"$d/explain.json" 2>"$d/explain.err"
  kill "$watcher" 2>/dev/null
  wait "$watcher" 2>/dev/null
  [ -s "$d/seen" ] && hits+=("$(sort -u "$d/seen" | head -2 | tr '\n' ' ')")
  [ -e "$ud/ran" ] && hits+=("the attacker's program ran as $(stat -c %U "$ud/ran")")
  [ "$(cat /proc/sys/kernel/core_pattern)" != "$core" ] && hits+=("core_pattern left changed")
  if ! grep -q 'not a setting sysperf manages' "$d/explain.json"; then
    hits+=("explain did not list core_pattern as not managed: $(head -c 200 "$d/explain.err")")
  fi
  # Put back what a broken build left changed.
  printf '%s' "$core" >/proc/sys/kernel/core_pattern
  echo "$aslr" >/proc/sys/kernel/randomize_va_space
  judge 41.1 "$what" "$(IFS=';'; echo "${hits[*]}")"
}
