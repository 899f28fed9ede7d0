#!/usr/bin/env bash
# A throwaway nginx load balancer on 127.0.0.1 with the compose file's config, deploy/nginx.conf
# (Debian's nginx), for the tests that put it in front of local `recsys serve` processes.
#
#   scripts/lb.sh install              apt-get install nginx-light, if nginx is missing
#   scripts/lb.sh start PORT ADDR...   nginx on 127.0.0.1:PORT in front of ADDR... (host:port),
#                                      in a new folder under /tmp (its log: nginx.log there);
#                                      prints the folder
#   scripts/lb.sh stop DIR             stop that nginx and remove its folder
#
# The config is deploy/nginx.conf with three lines changed: the upstream's servers (between the
# "# servers" markers) become ADDR..., `listen 8000` becomes 127.0.0.1:PORT, the pid file goes
# to the folder.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)

nginx_bin() {
    command -v nginx 2>/dev/null || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; } || true
}

cmd=${1:-}
case "$cmd" in
install)
    if [ -n "$(nginx_bin)" ]; then exit 0; fi
    bash "$ROOT/scripts/apt_install.sh" lb.sh nginx-light
    # the package starts a server on port 80 where an init system runs; the tests start their own
    if [ "$(id -u)" -eq 0 ] && command -v systemctl >/dev/null 2>&1; then
        systemctl disable --now nginx >/dev/null 2>&1 || true
    fi
    ;;
start)
    port=${2:?usage: lb.sh start PORT ADDR...}
    shift 2
    if [ "$#" -eq 0 ]; then echo "lb.sh start: name at least one ADDR (host:port)" >&2; exit 2; fi
    bin=$(nginx_bin)
    if [ -z "$bin" ]; then echo "lb.sh: nginx is not installed (lb.sh install)" >&2; exit 1; fi
    dir=$(mktemp -d /tmp/recsys-lb.XXXXXX)
    chmod 755 "$dir"
    servers=""
    for addr in "$@"; do servers="$servers        server $addr max_fails=3 fail_timeout=2s;\n"; done
    awk -v servers="$servers" -v port="$port" -v dir="$dir" '
        /# end servers/ { skipping = 0; printf "%s", servers; next }
        skipping { next }
        /# servers$/ { skipping = 1; next }
        /^pid / { print "pid " dir "/nginx.pid;"; next }
        /^ *listen 8000;/ { sub(/listen 8000;/, "listen 127.0.0.1:" port ";") }
        { print }
    ' "$ROOT/deploy/nginx.conf" >"$dir/nginx.conf"
    grep -q "listen 127.0.0.1:$port;" "$dir/nginx.conf" || { echo "lb.sh: deploy/nginx.conf has no 'listen 8000;'" >&2; exit 1; }
    mkdir -p "$dir/logs"
    "$bin" -t -q -p "$dir" -c "$dir/nginx.conf" || { echo "lb.sh: the config does not pass nginx -t" >&2; exit 1; }
    # the daemon's output to a file: it must not hold the caller's stdout (a pipe) open
    "$bin" -p "$dir" -c "$dir/nginx.conf" </dev/null >>"$dir/nginx.log" 2>&1
    for _ in $(seq 1 50); do [ -s "$dir/nginx.pid" ] && break; sleep 0.1; done
    echo "$dir"
    ;;
stop)
    dir=${2:?usage: lb.sh stop DIR}
    case "$dir" in /tmp/recsys-lb.*) ;; *) echo "lb.sh stop: $dir is not a folder lb.sh start made" >&2; exit 2 ;; esac
    if [ -s "$dir/nginx.pid" ]; then
        pid=$(cat "$dir/nginx.pid")
        kill -QUIT "$pid" 2>/dev/null || true  # graceful: finish the requests in flight
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -rf "$dir"
    ;;
*)
    echo "usage: lb.sh install | start PORT ADDR... | stop DIR" >&2
    exit 2
    ;;
esac
