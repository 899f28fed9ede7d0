#!/usr/bin/env bash
# Installs Debian's chromium for the browser test (tests/system/test_web_page.py), if it is missing.
# Idempotent and quiet: does nothing when /usr/bin/chromium exists. Runs as root (CI); elsewhere
# it uses sudo when available. Never downloads a browser build of its own (no `playwright install`).
set -euo pipefail

CHROMIUM=/usr/bin/chromium
if [ -x "$CHROMIUM" ]; then
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo -n"
    else
        echo "install_chromium: $CHROMIUM is missing and this is not root; skipping" >&2
        exit 0
    fi
fi

export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { $SUDO apt-get update -qq && \
       $SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core; } >"$log" 2>&1; then
    echo "install_chromium: apt-get failed:" >&2
    tail -n 20 "$log" >&2
    exit 1
fi
if [ ! -x "$CHROMIUM" ]; then
    echo "install_chromium: apt-get finished but $CHROMIUM is missing" >&2
    exit 1
fi
