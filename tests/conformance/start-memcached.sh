#!/bin/bash
# start-memcached.sh: starts the reference memcached (Debian's 1.6.18) on a
# free loopback port in a temporary directory, in one of the modes the
# conformance transcripts and the client matrix need.
#
#   eval "$(tests/conformance/start-memcached.sh [MODE] [-- MEMCACHED-ARGS...])"
#   ... use $MC_HOST $MC_PORT $MC_ADDR ...
#   tests/conformance/start-memcached.sh stop "$MC_DIR"
#
# MODE is one of:
#   plain     memcached -m 64 -t 4 (the default)
#   textauth  plus -Y DIR/authfile: text-protocol authentication
#   sasl      plus -S, with a Cyrus SASL configuration in DIR (mech_list:
#             plain, a sasldb made with saslpasswd2); SASL_CONF_PATH=DIR
#   maxconns  -c 32 -t 4 -o idle_timeout=3600: a small connection limit
#             (and an idle timeout, which makes "stats" list idle_kicks)
# Both authenticated modes know the user "testuser" with the password
# "testpass" (and "other"/"secret"); kurad's test harness uses the same.
#
# It prints shell assignments (MC_HOST, MC_PORT, MC_ADDR, MC_PID, MC_DIR,
# MC_MODE) on stdout and returns once the server accepts connections
# (polled, 10 s deadline). The server's output goes to $MC_DIR/log.
# "stop DIR" sends SIGTERM to the server started in DIR, waits for it (5 s,
# then SIGKILL) and removes DIR. memcached takes about 2 s to stop.
#
# Needs: memcached; sasl2-bin for the sasl mode; python3 for a free port.
set -euo pipefail

TEST_USER=testuser
TEST_PASS=testpass
OTHER_USER=other
OTHER_PASS=secret

die() {
    echo "start-memcached.sh: $*" >&2
    exit 1
}

# Alive and not a zombie waiting to be reaped by whoever adopted it.
pid_alive() {
    kill -0 "$1" 2>/dev/null || return 1
    local state
    state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 0
    [ "$state" != Z ]
}

if [ "${1:-}" = stop ]; then
    dir=${2:?usage: start-memcached.sh stop DIR}
    [ -f "$dir/pid" ] || die "no server recorded in $dir"
    pid=$(cat "$dir/pid")
    if pid_alive "$pid"; then
        # memcached takes about 2 s to stop on SIGTERM: wait up to 5 s
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 100); do
            pid_alive "$pid" || break
            sleep 0.05
        done
        if pid_alive "$pid"; then
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    case "$dir" in
    /tmp/* | "${TMPDIR:-/tmp}"/*) rm -rf "$dir" ;;
    *) echo "start-memcached.sh: not removing $dir (not a temp dir)" >&2 ;;
    esac
    exit 0
fi

mode=plain
if [ $# -gt 0 ] && [ "$1" != -- ]; then
    mode=$1
    shift
fi
extra=()
if [ "${1:-}" = -- ]; then
    shift
    extra=("$@")
fi

command -v memcached >/dev/null ||
    die "memcached not found (Debian package memcached)"

dir=$(mktemp -d "${TMPDIR:-/tmp}/kura-memcached.XXXXXX")
args=(-l 127.0.0.1 -U 0 -m 64 -t 4)
[ "$(id -u)" -eq 0 ] && args+=(-u root)
envs=()
case "$mode" in
plain) ;;
maxconns) args+=(-c 32 -o idle_timeout=3600) ;;
textauth)
    printf '%s:%s\n%s:%s\n' "$TEST_USER" "$TEST_PASS" \
        "$OTHER_USER" "$OTHER_PASS" >"$dir/authfile"
    args+=(-Y "$dir/authfile")
    ;;
sasl)
    command -v saslpasswd2 >/dev/null ||
        die "saslpasswd2 not found (Debian package sasl2-bin)"
    # memcached's SASL application name is "memcached": Cyrus reads
    # $SASL_CONF_PATH/memcached.conf and the users are made for that app.
    printf '%s' "$TEST_PASS" |
        saslpasswd2 -a memcached -c -p -f "$dir/sasldb" "$TEST_USER"
    printf '%s' "$OTHER_PASS" |
        saslpasswd2 -a memcached -c -p -f "$dir/sasldb" "$OTHER_USER"
    printf 'mech_list: plain\nsasldb_path: %s\n' "$dir/sasldb" \
        >"$dir/memcached.conf"
    args+=(-S)
    envs+=("SASL_CONF_PATH=$dir")
    ;;
*)
    rm -rf "$dir"
    die "unknown mode $mode (plain, textauth, sasl, maxconns)"
    ;;
esac

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

port_open() {
    # bash's /dev/tcp: a connect that succeeds means the server listens.
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# A port found free can be taken before memcached binds it: try again.
for _attempt in 1 2 3 4 5; do
    port=$(free_port)
    env "${envs[@]}" memcached "${args[@]}" -p "$port" "${extra[@]}" \
        </dev/null >"$dir/log" 2>&1 &
    pid=$!
    echo "$pid" >"$dir/pid"
    deadline=$((SECONDS + 10))
    while [ $SECONDS -lt $deadline ] && pid_alive "$pid"; do
        if port_open "$port"; then
            cat <<EOF
MC_HOST=127.0.0.1
MC_PORT=$port
MC_ADDR=127.0.0.1:$port
MC_PID=$pid
MC_DIR=$dir
MC_MODE=$mode
EOF
            exit 0
        fi
        sleep 0.05
    done
    if pid_alive "$pid"; then
        kill -KILL "$pid" 2>/dev/null || true
        cat "$dir/log" >&2
        rm -rf "$dir"
        die "memcached did not accept connections within 10 s"
    fi
    wait "$pid" 2>/dev/null || true
    grep -qi 'address already in use\|failed to listen' "$dir/log" || break
done
cat "$dir/log" >&2
rm -rf "$dir"
die "memcached exited at start ($mode)"
