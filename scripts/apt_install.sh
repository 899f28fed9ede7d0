#!/usr/bin/env bash
# Install Debian packages for the tests' throwaway servers (scripts/postgres.sh, scripts/lb.sh):
#
#   scripts/apt_install.sh WHO PACKAGE...
#
# as root, or through `sudo -n`; without either it says so and exits 0 (the tests that need the
# package skip). WHO names the caller in the messages. On failure: apt-get's last lines, exit 1.
set -euo pipefail

who=${1:?usage: apt_install.sh WHO PACKAGE...}
shift
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo -n"; else
        echo "$who: $* missing and this is not root; skipping" >&2; exit 0
    fi
fi
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "$@"; } >"$log" 2>&1; then
    echo "$who: apt-get failed:" >&2
    tail -n 20 "$log" >&2
    exit 1
fi
