#!/bin/sh
# libmemcached's command-line tools against the server over the binary
# protocol: memccp, memccat, memcrm, memcflush, memcstat, memctouch,
# memcexist (Debian names memcp & co. memccp & co.), and memccapable -b,
# whose binary tests also stand in for the checks the tools cannot make
# (cas, incr/decr: there is no tool for them).
#
#   memcached_tools_binary.sh [--host H] [--port P] [--mode binary|text]
#
# The address comes from KURA_HOST and KURA_PORT (set by with_kurad) unless
# given. With KURA_SASL_USER and KURA_SASL_PASS set the tools authenticate
# with SASL (memccapable cannot, and is then skipped). Prints one line per
# check and "N passed, N failed"; exits 1 if a check failed, 77 if the tools
# (Debian package libmemcached-tools) are missing. The wait for a TTL to
# pass polls against a deadline. memccapable flushes the server.
set -u

host=${KURA_HOST:-127.0.0.1}
port=${KURA_PORT:-}
mode=binary
while [ $# -gt 0 ]; do
    case "$1" in
    --host) host=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    *) echo "usage: $0 [--host H] [--port P] [--mode binary|text]" >&2; exit 2 ;;
    esac
done
if [ -z "$port" ]; then
    echo "no server: set KURA_HOST/KURA_PORT or give --host/--port" >&2
    exit 2
fi
for tool in memccp memccat memcrm memcflush memcstat memctouch memcexist memccapable; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "SKIP: $tool not found (Debian package libmemcached-tools)"
        exit 77
    fi
done
case "$mode" in
binary) bflag=-b; capflag=-b ;;
text) bflag=; capflag=-a ;;
*) echo "--mode is binary or text" >&2; exit 2 ;;
esac

servers="$host:$port"
sasl=
if [ -n "${KURA_SASL_USER:-}" ] && [ -n "${KURA_SASL_PASS:-}" ]; then
    sasl="-u $KURA_SASL_USER -p $KURA_SASL_PASS"
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kura-tools.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 143' INT TERM
cd "$tmp" || exit 99

# tool NAME ARGS...: the tool with the server, protocol and SASL options
tool() {
    t=$1
    shift
    # shellcheck disable=SC2086
    "$t" -s "$servers" $bflag -N $sasl "$@"
}

passed=0
failed=0
pass() {
    passed=$((passed + 1))
    echo "PASS $1"
}
fail() {
    failed=$((failed + 1))
    echo "FAIL $1: $2"
}

echo "libmemcached tools ($(memccp --version 2>&1 | head -1)), $mode protocol, $servers${sasl:+ (SASL $KURA_SASL_USER)}"

# --- set/get
printf 'hello' >tools_k
if ! tool memccp tools_k; then
    fail "set/get" "memccp failed"
elif [ "$(tool memccat tools_k)" != hello ]; then
    fail "set/get" "memccat read '$(tool memccat tools_k 2>&1)'"
elif ! tool memcexist tools_k; then
    fail "set/get" "memcexist does not see the key"
else
    pass "set/get"
fi
if [ "$failed" -gt 0 ]; then
    # the server does not answer this protocol: fail the rest at once
    # rather than wait out every tool's timeouts
    for c in "serialised object (flags)" "add/replace" "delete" \
        "100-key multi-get" "500 KB value" memcstat "TTL expiry" \
        "touch extends the TTL" memcflush cas "incr/decr (floor at 0)" \
        "memccapable $capflag"; do
        fail "$c" "not run: set/get failed"
    done
    echo "$passed passed, $failed failed"
    exit 1
fi

# --- a structured document with client flags (the tools have no
# serializer: a JSON document stored with flags 2 must come back with them)
printf '{"user": 42, "roles": ["admin", "dev"], "nested": {"t": [1, 2]}}' >tools_obj
if ! tool memccp --flags=2 tools_obj; then
    fail "serialised object (flags)" "memccp --flags failed"
else
    got=$(tool memccat --flags tools_obj)
    want=$(printf '2\n%s' "$(cat tools_obj)")
    if [ "$got" = "$want" ]; then
        pass "serialised object (flags)"
    else
        fail "serialised object (flags)" "memccat --flags read '$got'"
    fi
fi

# --- add/replace
printf 'first' >tools_ar
tool memcrm tools_ar 2>/dev/null
if tool memccp --replace tools_ar 2>/dev/null; then
    fail "add/replace" "replace of a missing key succeeded"
elif ! tool memccp --add tools_ar; then
    fail "add/replace" "add of a missing key failed"
elif printf 'second' >tools_ar && tool memccp --add tools_ar 2>/dev/null; then
    fail "add/replace" "add of an existing key succeeded"
elif [ "$(tool memccat tools_ar)" != first ]; then
    fail "add/replace" "add changed the value"
elif ! { printf 'third' >tools_ar && tool memccp --replace tools_ar; }; then
    fail "add/replace" "replace of an existing key failed"
elif [ "$(tool memccat tools_ar)" != third ]; then
    fail "add/replace" "replace did not store"
else
    pass "add/replace"
fi

# --- delete
printf 'x' >tools_d
tool memccp tools_d
if ! tool memcrm tools_d; then
    fail "delete" "memcrm of an existing key failed"
elif tool memccat tools_d >/dev/null 2>&1; then
    fail "delete" "the key is still there"
elif tool memcrm tools_d 2>/dev/null; then
    fail "delete" "memcrm of a missing key succeeded"
else
    pass "delete"
fi

# --- 100-key multi-get: one memccp stores 100 files, one memccat reads them
mkdir multi
i=0
keys=
while [ $i -lt 100 ]; do
    k=$(printf 'tools_m%03d' $i)
    printf 'value-%d' $i >"multi/$k"
    keys="$keys $k"
    i=$((i + 1))
done
# shellcheck disable=SC2086
if ! (cd multi && tool memccp $keys); then
    fail "100-key multi-get" "memccp of 100 files failed"
else
    # shellcheck disable=SC2086
    got=$(tool memccat $keys | tr '\n' ' ')
    want=$(i=0; while [ $i -lt 100 ]; do printf 'value-%d ' $i; i=$((i + 1)); done)
    if [ "$got" = "$want" ]; then
        pass "100-key multi-get"
    else
        fail "100-key multi-get" "memccat read $(printf '%s' "$got" | wc -w) of 100 values in order"
    fi
fi

# --- a 500 KB value
head -c 512000 /dev/urandom >tools_big
rm -f big.out
if ! tool memccp tools_big; then
    fail "500 KB value" "memccp failed"
elif ! tool memccat --file=big.out tools_big || ! cmp -s tools_big big.out; then
    fail "500 KB value" "the value read back differs"
else
    pass "500 KB value"
fi

# --- memcstat: the server's statistics
stats=$(tool memcstat 2>&1)
if printf '%s\n' "$stats" | grep -q 'pid: [0-9]' &&
    printf '%s\n' "$stats" | grep -q 'curr_items: [0-9]'; then
    pass "memcstat"
else
    fail "memcstat" "no pid/curr_items in: $(printf '%s' "$stats" | head -3)"
fi

# --- TTL expiry and touch: both items get a 3 s TTL (long enough to read
# them back on a busy machine), one is touched to 100 s; then poll, with a
# deadline, until the other has expired on the server's clock
printf 'short' >tools_ttl
printf 'kept' >tools_touch
ttl_err=
tool memccp --expire=3 tools_ttl tools_touch || ttl_err="memccp --expire failed"
[ -z "$ttl_err" ] && [ "$(tool memccat tools_ttl)" != short ] && ttl_err="the item is not there at once"
[ -z "$ttl_err" ] && { tool memctouch --expire=100 tools_touch || ttl_err="memctouch failed"; }
if [ -n "$ttl_err" ]; then
    fail "TTL expiry" "$ttl_err"
    fail "touch extends the TTL" "$ttl_err"
else
    deadline=$(($(date +%s) + 15))
    while tool memccat tools_ttl >/dev/null 2>&1 &&
        [ "$(date +%s)" -lt "$deadline" ]; do
        sleep 0.1
    done
    if tool memccat tools_ttl >/dev/null 2>&1; then
        fail "TTL expiry" "still there 15 s after its 3 s TTL"
    else
        pass "TTL expiry"
    fi
    # Both items had the same TTL: the touched one has outlived it.
    if [ "$(tool memccat tools_touch)" = kept ]; then
        pass "touch extends the TTL"
    else
        fail "touch extends the TTL" "gone after its first TTL"
    fi
fi

# --- memcflush
tool memccp tools_k
if ! tool memcflush; then
    fail "memcflush" "memcflush failed"
elif tool memccat tools_k >/dev/null 2>&1; then
    fail "memcflush" "an item survived the flush"
else
    pass "memcflush"
fi

# --- memccapable: the protocol tests; cas and incr/decr come from them
if [ -n "$sasl" ]; then
    echo "SKIP memccapable: it cannot authenticate with SASL"
    echo "SKIP cas: no tool for it, and memccapable cannot authenticate"
    echo "SKIP incr/decr (floor at 0): no tool for it, and memccapable cannot authenticate"
else
    out=$(memccapable $capflag -h "$host" -p "$port" -t 5 2>&1)
    total=$(printf '%s\n' "$out" | grep -c '\[\(pass\|FAIL\)\]')
    npass=$(printf '%s\n' "$out" | grep -c '\[pass\]')
    result() { # result NAME TEST...: pass if every named memccapable test passed
        name=$1
        shift
        for t in "$@"; do
            if ! printf '%s\n' "$out" | grep -q "^$t  *\[pass\]"; then
                fail "$name" "memccapable '$t' did not pass"
                return
            fi
        done
        pass "$name (memccapable: $*)"
    }
    if [ "$mode" = binary ]; then
        result "cas" "binary set" "binary replace"
        result "incr/decr (floor at 0)" "binary incr" "binary decr"
    else
        result "cas" "ascii cas"
        result "incr/decr (floor at 0)" "ascii incr" "ascii decr"
    fi
    if [ "$total" -gt 0 ] && [ "$npass" -eq "$total" ]; then
        pass "memccapable $capflag ($npass of $total)"
    else
        fail "memccapable $capflag" "$npass of $total passed"
        printf '%s\n' "$out" | grep -v '\[pass\]' | head -20
    fi
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
