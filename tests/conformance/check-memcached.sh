#!/bin/bash
# check-memcached.sh: runs every conformance transcript against the
# reference, Debian's memcached 1.6.18, so that the transcripts cannot drift
# from it. Each transcript gets a memcached of its own, started by
# start-memcached.sh in the mode the transcript declares (plain, textauth,
# sasl, maxconns); with --shared, one server per mode runs all of that
# mode's transcripts in sequence (as a single kurad would), except those
# marked "fresh", which still get a server of their own.
#
#   tests/conformance/check-memcached.sh [--shared] [-v] [TRANSCRIPT...]
#
# Exits 0 when every transcript passed, 1 otherwise, 77 when memcached is
# not installed. Needs: memcached, sasl2-bin, python3.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
shared=false
runargs=()
files=()
for a in "$@"; do
    case "$a" in
    --shared) shared=true ;;
    -v) runargs+=(-v) ;;
    -h | --help)
        sed -n '2,13p' "$0"
        exit 0
        ;;
    *) files+=("$a") ;;
    esac
done
[ ${#files[@]} -gt 0 ] || files=("$here"/*.t)

if ! command -v memcached >/dev/null; then
    echo "check-memcached: memcached is not installed (Debian package memcached)" >&2
    exit 77
fi
version=$(memcached -V 2>/dev/null | awk '{print $2}')
echo "check-memcached: reference memcached $version"
[ "$version" = 1.6.18 ] ||
    echo "check-memcached: warning: the transcripts were written against 1.6.18" >&2

mode_of() {
    awk '$1 == "mode" { print $2; found=1; exit } END { if (!found) print "plain" }' "$1"
}

dirs=()
cleanup() {
    local d
    for d in "${dirs[@]}"; do
        [ -d "$d" ] && "$here/start-memcached.sh" stop "$d"
    done
}
trap cleanup EXIT

passed=0
failed=0
failed_names=()

# run_batch MODE FILE...: one server for the given transcripts
run_batch() {
    local mode=$1
    shift
    local out
    if ! out=$("$here/start-memcached.sh" "$mode"); then
        echo "FAIL (memcached did not start in mode $mode): $*"
        failed=$((failed + $#))
        failed_names+=("$@")
        return
    fi
    local MC_ADDR MC_DIR MC_PID MC_HOST MC_PORT MC_MODE
    eval "$out"
    dirs+=("$MC_DIR")
    local res
    res=$(python3 "$here/run.py" "${runargs[@]}" --mode "$mode" "$MC_ADDR" "$@")
    local rc=$?
    echo "$res" | grep -v '^[0-9]* passed, [0-9]* failed'
    passed=$((passed + $(echo "$res" | grep -c '^PASS ')))
    local nf
    nf=$(echo "$res" | grep -c '^FAIL ')
    if [ "$rc" -ne 0 ] && [ "$nf" -eq 0 ]; then
        nf=$#
    fi
    failed=$((failed + nf))
    if [ "$nf" -gt 0 ]; then
        failed_names+=($(echo "$res" | sed -n 's/^FAIL \([^:]*\):.*/\1/p'))
        echo "--- memcached log ($mode):"
        tail -20 "$MC_DIR/log"
    fi
    # memcached takes ~2 s to stop: let it, while the next one runs
    "$here/start-memcached.sh" stop "$MC_DIR" &
}

if $shared; then
    for mode in plain textauth sasl maxconns; do
        batch=()
        for f in "${files[@]}"; do
            [ "$(mode_of "$f")" = "$mode" ] || continue
            if grep -q '^fresh' "$f"; then
                run_batch "$mode" "$f"
            else
                batch+=("$f")
            fi
        done
        [ ${#batch[@]} -gt 0 ] && run_batch "$mode" "${batch[@]}"
    done
else
    for f in "${files[@]}"; do
        run_batch "$(mode_of "$f")" "$f"
    done
fi

wait
echo "check-memcached: $passed passed, $failed failed"
[ "$failed" -eq 0 ] || {
    echo "check-memcached: failed: ${failed_names[*]}" >&2
    exit 1
}
exit 0
