# A private PostgreSQL cluster for the scripts (sourced, not run): initdb into a directory
# the caller made and removes, a free port on 127.0.0.1, the unix socket in that directory,
# `pg_ctl start -w`, as tests/it/support/pg.rs starts one for the tests (as the postgres user
# when root, since initdb refuses root). It never touches a system cluster nor assumes 5432.
#
#   pg_cluster_start DIR   initdb and start; sets PG_URL (postgres://sysperf@127.0.0.1:PORT,
#                          trust authentication: append /DATABASE), or returns 1 saying why
#   pg_cluster_stop [MODE] pg_ctl stop (fast by default; immediate when removing)
#   pg_cluster_again       start it again after a stop, on the same port
#
# SYSPERF_PG_BIN names the bin directory, else the newest /usr/lib/postgresql/N/bin, else
# `pg_config --bindir`. PG_MAX_CONNECTIONS sets max_connections (default 50).

pg_cluster_start() {
  local dir=$1
  PG_BIN=${SYSPERF_PG_BIN:-}
  if [[ -z $PG_BIN ]]; then
    PG_BIN=$(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin 2>/dev/null | sort -V | tail -1)
    [[ -n $PG_BIN ]] || PG_BIN=$(pg_config --bindir 2>/dev/null) || true
  fi
  if [[ ! -x $PG_BIN/initdb ]]; then
    echo "PostgreSQL is not installed (no initdb; apt-get install postgresql, or SYSPERF_PG_BIN=DIR)" >&2
    return 1
  fi
  PG_DIR=$dir
  PG_DATA=$dir/data
  PG_AS=()
  mkdir -p "$dir"
  if ((EUID == 0)); then
    if ! id postgres >/dev/null 2>&1; then
      echo "running as root, but there is no postgres user to run PostgreSQL as" >&2
      return 1
    fi
    PG_AS=(runuser -u postgres --)
    chmod 755 "$(dirname "$dir")"
    chown postgres: "$dir"
  fi
  if ! "${PG_AS[@]}" "$PG_BIN/initdb" -D "$PG_DATA" -U sysperf --auth=trust -E UTF8 --locale=C -N \
    >"$dir/initdb.log" 2>&1; then
    echo "initdb failed: $(tail -3 "$dir/initdb.log")" >&2
    return 1
  fi
  local try
  for try in 1 2 3 4 5; do
    PG_PORT=$((20000 + RANDOM % 40000))
    if pg_cluster_again; then
      PG_URL=postgres://sysperf@127.0.0.1:$PG_PORT
      return 0
    fi
  done
  echo "the private PostgreSQL cluster did not start: $(tail -3 "$dir/log" 2>/dev/null)" >&2
  return 1
}

pg_cluster_again() {
  "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_DIR/log" -w -t 60 \
    -o "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1 -c max_connections=${PG_MAX_CONNECTIONS:-50}" \
    start >/dev/null 2>&1
}

pg_cluster_stop() {
  [[ -n ${PG_DATA:-} ]] || return 0
  "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DATA" -m "${1:-fast}" -w stop >/dev/null 2>&1
}
