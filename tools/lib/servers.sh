# servers.sh: helpers for the benchmark scripts that start servers on
# loopback.
#
#   . tools/lib/servers.sh
#   port=$(kura_free_port)
#   kura_wait_ready PORT SECONDS WHO   # WHO names the caller in the error
#   value=$(kura_stat PORT NAME)         # one line of `stats`, 0 if absent
#   before=$(kura_cpu_snap PID...)       # the servers' CPU (proccpu.py)
#   us=$(kura_cpu_us_per_op "$before" "$(kura_cpu_snap PID...)" OPS)

# Prints a TCP port on 127.0.0.1 that nothing listens on right now.
kura_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Waits until the server on PORT answers "version", for at most SECONDS;
# otherwise says so (as WHO) and exits 1.
kura_wait_ready() {
    local port=$1 deadline=$((SECONDS + $2)) who=$3
    while [ $SECONDS -lt $deadline ]; do
        if python3 - "$port" <<'PY' 2>/dev/null; then return 0; fi
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1)
s.sendall(b"version\r\n")
sys.exit(0 if s.recv(100).startswith(b"VERSION") else 1)
PY
        sleep 0.05
    done
    echo "$who: server on port $port did not start" >&2
    exit 1
}

# Prints the value of NAME in the `stats` of the server on PORT, or 0 if
# it reports no such line.
kura_stat() {
    python3 - "$1" "$2" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"stats\r\n")
buf = b""
while not buf.endswith(b"END\r\n"):
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
for line in buf.decode().split("\r\n"):
    parts = line.split()
    if len(parts) == 3 and parts[1] == sys.argv[2]:
        print(parts[2])
        break
else:
    print(0)
PY
}

# Prints a snapshot of the CPU time of the processes PID... (user +
# system, every thread; `--tree PID...` adds their descendants) and of the
# host, as JSON for kura_cpu_us_per_op (tools/lib/proccpu.py reads /proc).
kura_cpu_snap() {
    python3 "$(dirname "${BASH_SOURCE[0]}")/proccpu.py" snap "$@"
}

# Prints the microseconds of CPU per operation between two snapshots of
# kura_cpu_snap, over OPS operations.
kura_cpu_us_per_op() {
    python3 "$(dirname "${BASH_SOURCE[0]}")/proccpu.py" per-op "$1" "$2" "$3"
}
