#!/usr/bin/env bash
# Install the interop peers the test suite drives, into .cache/ (git-ignored), pinned:
#   @modelcontextprotocol/server-everything (the reference TypeScript server; tests/client/test_everything.py)
# Idempotent. Needs npm and the npm registry. The official Python SDK comes from the `sdk` extra (pip).
set -euo pipefail
cd "$(dirname "$0")/.."
EVERYTHING_VERSION="2026.8.31"
DEST=".cache/server-everything"
STAMP="$DEST/.version"
if [ "$(cat "$STAMP" 2>/dev/null)" = "$EVERYTHING_VERSION" ]; then
    exit 0
fi
mkdir -p "$DEST"
npm install --prefix "$DEST" --no-audit --no-fund --ignore-scripts --loglevel=error \
    "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" >/dev/null
echo "$EVERYTHING_VERSION" >"$STAMP"
echo "install-test-peers: @modelcontextprotocol/server-everything@$EVERYTHING_VERSION in $DEST"
