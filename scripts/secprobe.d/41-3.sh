# shellcheck shell=bash
# #41 item 3, sourced by scripts/secprobe.sh: a PATH entry that is the attacker's symbolic
# link. In a sticky directory (as /tmp) the attacker's link `bin` points to /usr/bin, a
# trusted directory, while a second link `alt` points to the attacker's own directory, whose
# `true` leaves a mark; the two are swapped (RENAME_EXCHANGE, or mv -T without the C helper)
# in a tight loop while root's `ab --a true --b true` runs with that entry first in PATH.
# A sysperf that judged the entry through the link and ran `true` later by the link's path
# ran the attacker's `true` as root. Everything is under "$W/i41-3" and the attacker's home.
probe_41_3() {
  local what="a PATH entry that is another user's link, flipped (ab --a true --b true)"
  local d=$W/i41-3 mark=$AH/i41-3-ran x i rc=0
  mkdir -m 1777 "$d/sticky"
  as_user mkdir -p "$AH/bin3"
  printf '#!/bin/sh\nid -u >> %s\nexit 0\n' "$mark" | as_user tee "$AH/bin3/true" >/dev/null
  as_user chmod 755 "$AH/bin3/true"
  as_user ln -s /usr/bin "$d/sticky/bin"
  as_user ln -s "$AH/bin3" "$d/sticky/alt"
  if [ "$cc_ok" = 1 ]; then
    "${asu[@]}" "$helper" xchg "$d/sticky/bin" "$d/sticky/alt" 300 >/dev/null &
  else
    # Without the helper: the link replaced by rename in a loop, pointing each way in turn.
    "${asu[@]}" sh -c "
      while :; do
        ln -sfn '$AH/bin3' '$d/sticky/.n' && mv -T '$d/sticky/.n' '$d/sticky/bin'
        ln -sfn /usr/bin '$d/sticky/.n' && mv -T '$d/sticky/.n' '$d/sticky/bin'
      done" >/dev/null 2>&1 &
  fi
  x=$!
  bg+=("$x")
  # The race is won when a worker looks `true` up while the link points to /usr/bin and
  # runs it after it flipped: a few tries of a fraction of a second each.
  for i in $(seq 1 10); do
    PATH="$d/sticky/bin:/usr/bin:/bin" timeout -k 5 300 "$SYSPERF" ab --quick \
      --a true --b true >/dev/null 2>"$d/ab.err"
    rc=$?
    [ -s "$mark" ] && break
  done
  kill -KILL "$x" 2>/dev/null
  wait "$x" 2>/dev/null
  judge_mark "41.3" "$what" "$mark" "true through $d/sticky/bin (in ab $i)" "$rc" "$d/ab.err"
}
