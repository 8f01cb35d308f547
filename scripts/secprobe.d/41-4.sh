# shellcheck shell=bash
# #41 item 4, sourced by scripts/secprobe.sh: the PostgreSQL spool directory below the
# attacker's HOME (root's `sudo -E`) or XDG_STATE_HOME. The attacker plants a spool file
# `x.db` whose destination file `x.dest` is a link to a root-only file (standing for
# /etc/shadow); root's `doctor` says each waiting spool file with the store it waits for,
# and printed the linked file whole. Each way is tried; every one that breaks is named.
probe_41_4() {
  local what="a spool directory under another user's HOME (doctor)"
  local d=$W/i41-4 secret=W41SECRET$$ hits=() base spool out
  mkdir -m 700 "$d/rootonly"
  printf 'root:$6$%s:19000:0:99999:7:::\n' "$secret" >"$d/rootonly/shadow"
  chmod 600 "$d/rootonly/shadow"
  for base in "$AH/.local/state" "$AH/xdg4"; do
    spool=$base/sysperf/spool
    as_user mkdir -p "$spool"
    as_user touch "$spool/x.db"
    as_user ln -sfn "$d/rootonly/shadow" "$spool/x.dest"
    if [ "$base" = "$AH/.local/state" ]; then
      out=$(env -u XDG_STATE_HOME HOME="$AH" timeout -k 5 60 "$SYSPERF" doctor 2>&1)
    else
      out=$(env HOME=/root XDG_STATE_HOME="$base" timeout -k 5 60 "$SYSPERF" doctor 2>&1)
    fi
    if printf '%s\n' "$out" | grep -q "$secret"; then
      hits+=("with spool $spool root's doctor printed the root-only file the attacker's x.dest links to: '...$(printf '%s\n' "$out" | grep -m1 -o ".\{0,16\}$secret.\{0,12\}")...'")
    fi
    as_user rm -rf "$base/sysperf"
  done
  if [ ${#hits[@]} -gt 0 ]; then
    report "41.4" "$what" broken "$(IFS=';'; echo "${hits[*]}" | sed 's/;/; /g')"
  else
    judge "41.4" "$what" ""
  fi
}
