#!/bin/sh
# curl against kurad's HTTP interface, as a user would drive it: PUT and
# POST of JSON documents (Content-Length, chunked, Expect: 100-continue),
# GET, HEAD, DELETE, conditional requests with the ETag, Kura-Exptime,
# several requests on one kept-alive connection, and the operator
# endpoints. Run under with_kurad (KURA_HOST, KURA_PORT). Prints one line
# per check and "N passed, N failed"; exits 1 if a check failed, 77 if
# curl is missing.
set -u
command -v curl >/dev/null 2>&1 || { echo "curl missing: skip"; exit 77; }
base="http://${KURA_HOST:-127.0.0.1}:${KURA_PORT:?KURA_PORT unset}"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
check() {  # name, expected, actual
    if [ "$2" = "$3" ]; then
        echo "ok   $1"
        passed=$((passed + 1))
    else
        echo "FAIL $1: expected [$2], got [$3]"
        failed=$((failed + 1))
    fi
}
# status of a request: curl's -w, the body into $tmp/body, headers $tmp/h
req() {
    curl -s -o "$tmp/body" -D "$tmp/h" -w '%{http_code}' --max-time 10 "$@"
}
header() {  # the value of header $1 in the last response
    tr -d '\r' < "$tmp/h" | sed -n "s/^$1: //Ip" | tail -n 1
}

printf '{"user":"kura","n":1}' > "$tmp/doc.json"
check "PUT creates" 201 "$(req -X PUT -H 'Content-Type: application/json' \
    --data-binary @"$tmp/doc.json" "$base/curl/doc")"
etag=$(header ETag)
check "GET returns the document" 200 "$(req "$base/curl/doc")"
check "body round-trips" '{"user":"kura","n":1}' "$(cat "$tmp/body")"
check "Content-Type kept" application/json "$(header Content-Type)"
check "ETag stable" "$etag" "$(header ETag)"
check "HEAD" 200 "$(req -I "$base/curl/doc")"
check "HEAD length" 21 "$(header Content-Length)"
check "POST replaces" 204 "$(req -X POST -H 'Content-Type: application/json' \
    --data-binary '{"n":2}' "$base/curl/doc")"
check "If-Match stale tag" 412 "$(req -X PUT -H "If-Match: $etag" \
    --data-binary x "$base/curl/doc")"
req "$base/curl/doc" >/dev/null
check "If-None-Match current tag" 304 "$(req -H "If-None-Match: $(header ETag)" \
    "$base/curl/doc")"
check "create-only on existing" 412 "$(req -X PUT -H 'If-None-Match: *' \
    --data-binary x "$base/curl/doc")"
check "invalid JSON" 400 "$(req -X PUT -H 'Content-Type: application/json' \
    --data-binary '{"n":' "$base/curl/bad")"
check "invalid JSON says why" yes "$(grep -q '"offset"' "$tmp/body" && echo yes)"
check "invalid JSON not stored" 404 "$(req "$base/curl/bad")"
# chunked upload (curl streams stdin with Transfer-Encoding: chunked)
check "chunked PUT" 201 "$(printf '[1,2,3]' | req -X PUT -T - \
    -H 'Transfer-Encoding: chunked' -H 'Content-Type: application/json' \
    "$base/curl/chunked")"
check "chunked body" '[1,2,3]' "$(req "$base/curl/chunked" >/dev/null; cat "$tmp/body")"
# Expect: 100-continue on a larger body
head -c 200000 /dev/zero | tr '\0' 'a' > "$tmp/big"
check "100-continue PUT" 201 "$(req -X PUT -H 'Expect: 100-continue' \
    --data-binary @"$tmp/big" "$base/curl/big")"
check "large body back" 200000 "$(req "$base/curl/big" >/dev/null; wc -c < "$tmp/body" | tr -d ' ')"
check "over the item limit" 413 "$(head -c 1100000 /dev/zero |
    req -X PUT --data-binary @- "$base/curl/huge")"
check "percent-encoded key" 201 "$(req -X PUT --data-binary v \
    "$base/curl/caf%C3%A9%2Fx")"
check "key memcached cannot use" 400 "$(req "$base/curl/a%20b")"
check "TTL set" 201 "$(req -X PUT -H 'Kura-Exptime: -1' --data-binary v \
    "$base/curl/gone")"
check "expired is 404" 404 "$(req "$base/curl/gone")"
check "DELETE" 204 "$(req -X DELETE "$base/curl/doc")"
check "DELETE again" 404 "$(req -X DELETE "$base/curl/doc")"
check "method not allowed" 405 "$(req -X OPTIONS "$base/curl/doc")"
check "health" 200 "$(req "$base/-/health")"
check "metrics" 200 "$(req "$base/-/metrics")"
# keep-alive: five URLs, one connection
curl -sv --max-time 10 -o /dev/null -o /dev/null -o /dev/null -o /dev/null \
    -o /dev/null "$base/curl/chunked" "$base/curl/big" "$base/curl/chunked" \
    "$base/curl/big" "$base/-/health" 2> "$tmp/v"
check "keep-alive reuses one connection" 1 \
    "$(grep -c -i 'Connected to' "$tmp/v")"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
