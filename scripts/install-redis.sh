#!/usr/bin/env bash
# Install redis-server (Debian's package), which the scale-out tests start on a free loopback port
# (tests/scale/; under CI=true they fail, not skip, without it). Run by `make testdata` (so by every test
# target and CI). Idempotent: nothing to do when
# redis-server is already on PATH. Needs root and apt-get (CI runs as root on Debian); elsewhere it says
# what to run. The scale-out code itself needs Redis 7 or later (XADD with an `<ms>-*` id).
set -euo pipefail
if command -v redis-server >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "install-redis: redis-server is missing; install it (Debian/Ubuntu: sudo apt-get install redis-server)" >&2
    # outside CI the scale-out tests skip without it; under CI=true they fail, and so does this
    [ "${CI:-}" = true ] && exit 1
    exit 0
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
echo "install-redis: $(redis-server --version)"
