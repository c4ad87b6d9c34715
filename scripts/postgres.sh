#!/usr/bin/env bash
# A private PostgreSQL cluster for tests and benchmarks: its own data directory, a Unix socket in
# that directory and no TCP port, trust authentication for the one user `jlog`, and run by a
# non-root user as PostgreSQL requires (`jlogpg`, made when run as root). Nothing else on the
# machine is touched; `stop` leaves the directory for the caller to remove.
#   bash scripts/postgres.sh start DIR   initdb (first time), start, create database jlog;
#                                        prints the socket's path (DIR/.s.PGSQL.5432)
#   bash scripts/postgres.sh stop DIR
#   bash scripts/postgres.sh stop-immediate DIR   as a crash: no shutdown checkpoint, backends
#                                        killed (`start DIR` again recovers from the WAL)
set -euo pipefail
cmd="${1:?usage: postgres.sh start|stop|stop-immediate DIR}"
dir="${2:?usage: postgres.sh start|stop|stop-immediate DIR}"
bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
[ -x "$bin/initdb" ] || { echo "postgres.sh: no PostgreSQL server (bash scripts/setup.sh installs it)" >&2; exit 1; }
as=()
if [ "$(id -u)" -eq 0 ]; then
  id jlogpg >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin jlogpg
  as=(runuser -u jlogpg --)
fi
case "$cmd" in
  start)
    mkdir -p "$dir"
    [ "$(id -u)" -eq 0 ] && chown jlogpg "$dir"
    chmod 755 "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      "${as[@]}" "$bin/initdb" -D "$dir/data" -U jlog --auth=trust -E UTF8 --no-instructions >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
      -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c max_connections=200" start >/dev/null \
      || { cat "$dir/server.log" >&2; exit 1; }
    "${as[@]}" "$bin/psql" -h "$dir" -U jlog -d postgres -qAtc "SELECT 1 FROM pg_database WHERE datname = 'jlog'" | grep -q 1 \
      || "${as[@]}" "$bin/createdb" -h "$dir" -U jlog jlog
    echo "$dir/.s.PGSQL.5432"
    ;;
  stop)
    [ -f "$dir/data/postmaster.pid" ] && "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
    ;;
  stop-immediate)
    "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null
    ;;
  *) echo "usage: postgres.sh start|stop|stop-immediate DIR" >&2; exit 2 ;;
esac
