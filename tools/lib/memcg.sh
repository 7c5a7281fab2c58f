# memcg.sh: run a command inside a memory limit, the way systemd's
# MemoryMax= and container runtimes do: a cgroup of its own, with the
# cgroup v2 memory.max where the unified hierarchy has the memory
# controller, and the v1 memory.limit_in_bytes otherwise. Needs root.
#
#   . tools/lib/memcg.sh
#   cg=$(kura_memcg_create NAME BYTES)   # prints the cgroup's directory
#   kura_memcg_exec "$cg" cmd args... &  # runs cmd inside it
#   kura_memcg_usage "$cg"               # bytes charged now
#   kura_memcg_peak "$cg"                # most bytes charged so far
#   kura_memcg_stat "$cg" KEY            # one line of memory.stat
#   kura_memcg_ooms "$cg"                # OOM kills inside it
#   kura_memcg_drop "$cg"                # reclaim its page cache (a cold
#                                        # start without dropping the
#                                        # whole machine's caches)
#   kura_memcg_destroy "$cg"             # after its processes are gone
#
# The cgroup is made under the caller's own (so that a limit the caller
# already runs under still applies) and named NAME-<pid>.

# The mount point of the cgroup v2 hierarchy, or nothing.
_kura_memcg_v2_root() {
    awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo
}

# The mount point of the cgroup v1 hierarchy with the memory controller.
_kura_memcg_v1_root() {
    awk '$9 == "cgroup" && $NF ~ /(^|,)memory(,|$)/ { print $5; exit }' \
        /proc/self/mountinfo
}

# Prints "v2" or "v1": the hierarchy that controls memory here.
kura_memcg_version() {
    local v2 own
    v2=$(_kura_memcg_v2_root)
    own=$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)
    if [ -n "$v2" ] && [ -n "$own" ] &&
        grep -qw memory "$v2$own/cgroup.controllers" 2>/dev/null; then
        echo v2
    elif [ -n "$(_kura_memcg_v1_root)" ]; then
        echo v1
    else
        echo none
    fi
}

kura_memcg_create() {
    local name=$1 bytes=$2 dir parent
    case $(kura_memcg_version) in
    v2)
        parent=$(_kura_memcg_v2_root)$(awk -F: '$1 == "0" { print $3 }' \
            /proc/self/cgroup)
        # A process may not sit in a cgroup whose children have
        # controllers (v2's "no internal processes"): the child goes
        # beside the caller, under its parent.
        if [ "$(cat "$parent/cgroup.procs" 2>/dev/null | head -1)" != "" ]; then
            parent=$(dirname "$parent")
        fi
        echo +memory > "$parent/cgroup.subtree_control" 2>/dev/null || true
        dir="$parent/$name-$$"
        mkdir -p "$dir" || return 1
        echo "$bytes" > "$dir/memory.max" || return 1
        echo 0 > "$dir/memory.swap.max" 2>/dev/null || true
        ;;
    v1)
        parent=$(_kura_memcg_v1_root)$(awk -F: '$2 ~ /(^|,)memory(,|$)/ \
            { print $3 }' /proc/self/cgroup)
        dir="$parent/$name-$$"
        mkdir -p "$dir" || return 1
        echo "$bytes" > "$dir/memory.limit_in_bytes" || return 1
        # No swap either, as memory.swap.max=0 above.
        echo "$bytes" > "$dir/memory.memsw.limit_in_bytes" 2>/dev/null || true
        ;;
    *)
        echo "memcg: no memory cgroup controller on this machine" >&2
        return 1
        ;;
    esac
    echo "$dir"
}

kura_memcg_exec() {
    local dir=$1
    shift
    # shellcheck disable=SC2016
    exec sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$dir" "$@"
}

kura_memcg_usage() {
    if [ -f "$1/memory.current" ]; then
        cat "$1/memory.current"
    else
        cat "$1/memory.usage_in_bytes"
    fi
}

kura_memcg_peak() {
    if [ -f "$1/memory.peak" ]; then
        cat "$1/memory.peak"
    elif [ -f "$1/memory.max_usage_in_bytes" ]; then
        cat "$1/memory.max_usage_in_bytes"
    else
        echo 0
    fi
}

kura_memcg_stat() {
    awk -v k="$2" '$1 == k { print $2; found = 1 } END { if (!found) print 0 }' \
        "$1/memory.stat"
}

kura_memcg_ooms() {
    if [ -f "$1/memory.events" ]; then
        awk '$1 == "oom_kill" { print $2 }' "$1/memory.events"
    else
        awk '$1 == "oom_kill" { print $2; f = 1 } END { if (!f) print 0 }' \
            "$1/memory.oom_control"
    fi
}

kura_memcg_drop() {
    if [ -f "$1/memory.reclaim" ]; then
        echo "$(kura_memcg_usage "$1")" > "$1/memory.reclaim" 2>/dev/null || true
    elif [ -f "$1/memory.force_empty" ]; then
        echo 0 > "$1/memory.force_empty" 2>/dev/null || true
    fi
}

kura_memcg_destroy() {
    [ -n "${1:-}" ] && [ -d "$1" ] && rmdir "$1" 2>/dev/null || true
}
