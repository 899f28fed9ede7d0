#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests of the store's PostgreSQL path (Debian's postgresql).
#
#   scripts/postgres.sh install      apt-get install postgresql, if its binaries are missing
#   scripts/postgres.sh start        a new cluster in a new folder under /tmp, on 127.0.0.1 and a
#                                    free port; prints the database URL, then the folder (trust
#                                    authentication: for tests only)
#   scripts/postgres.sh stop DIR     stop that server and remove its folder
#
# initdb refuses to run as root: as root the cluster belongs to the `postgres` user (made by the
# package), otherwise to the caller.
set -euo pipefail

bindir() {
    local d
    for d in /usr/lib/postgresql/*/bin; do
        if [ -x "$d/initdb" ]; then echo "$d"; fi
    done | sort -V | tail -n 1
}

as_owner() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

cmd=${1:-}
case "$cmd" in
install)
    if [ -n "$(bindir)" ]; then exit 0; fi
    bash "$(dirname "$0")/apt_install.sh" postgres.sh postgresql
    if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null 2>&1; then exit 0; fi  # skipped
    if [ -z "$(bindir)" ]; then echo "postgres.sh: installed, but no initdb under /usr/lib/postgresql" >&2; exit 1; fi
    ;;
start)
    bin=$(bindir)
    if [ -z "$bin" ]; then echo "postgres.sh: PostgreSQL is not installed (postgres.sh install)" >&2; exit 1; fi
    # its own folder under /tmp: the server's user must reach it (a caller's temporary folder is
    # often private to the caller)
    dir=$(mktemp -d /tmp/recsys-pg.XXXXXX)
    chmod 755 "$dir"
    if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir"; fi
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 || {
        cat "$dir/initdb.log" >&2; exit 1; }
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=on" start >/dev/null || {
        cat "$dir/server.log" >&2; exit 1; }
    as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres recsys
    echo "postgresql://postgres@127.0.0.1:$port/recsys"
    echo "$dir"
    ;;
stop)
    dir=${2:?usage: postgres.sh stop DIR}
    bin=$(bindir)
    if [ -n "$bin" ] && [ -f "$dir/data/postmaster.pid" ]; then
        as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    case "$dir" in /tmp/recsys-pg.*) rm -rf "$dir" ;; esac  # only a folder `start` made
    ;;
*)
    echo "usage: postgres.sh install | start | stop DIR" >&2
    exit 2
    ;;
esac
