#!/bin/sh
# libmemcached's ASCII conformance suite against kurad: all 27 must pass.
# Run under with_kurad, which provides KURA_HOST and KURA_PORT.
set -eu
if ! command -v memccapable >/dev/null 2>&1; then
    echo "memccapable not found (Debian package libmemcached-tools)" >&2
    exit 99
fi
out=$(memccapable -a -h "$KURA_HOST" -p "$KURA_PORT" -t 5 2>&1) || true
echo "$out"
passed=$(echo "$out" | grep -c '\[pass\]' || true)
echo "memccapable: $passed of 27 passed"
[ "$passed" -eq 27 ] && echo "$out" | grep -q 'All tests passed'
