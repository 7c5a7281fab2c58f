# deps.sh: make sure the Debian packages a step needs are installed.
#
#   . tools/lib/deps.sh
#   kura_need_packages pkg...
#
# As root, missing packages are installed with apt-get (refreshing the
# package lists once if the first attempt fails). Otherwise the function
# prints the exact command to run and exits 1.

kura_missing_packages() {
    local pkg
    for pkg in "$@"; do
        if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null |
            grep -q 'install ok installed'; then
            printf '%s ' "$pkg"
        fi
    done
}

kura_need_packages() {
    local missing
    missing=$(kura_missing_packages "$@")
    [ -z "$missing" ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "kura: missing Debian packages: $missing" >&2
        echo "kura: install them with: sudo apt-get install -y $missing" >&2
        exit 1
    fi
    echo "kura: installing $missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    # shellcheck disable=SC2086
    if ! apt-get install -y -q --no-install-recommends $missing >&2; then
        apt-get update -q >&2
        # shellcheck disable=SC2086
        apt-get install -y -q --no-install-recommends $missing >&2
    fi
}

# Packages needed to build kurad and the kura tool.
KURA_BUILD_PACKAGES="gcc make autoconf automake pkg-config
    libtokyocabinet-dev libevent-dev check libh2o-evloop-dev libyajl-dev
    liburing-dev libssl-dev"
# Clients the integration tests drive kurad with; the reference server
# (memcached); the runner of the clients' own suites (pytest, six); the
# SASL PLAIN plugin the clients authenticate with (libsasl2-modules, only
# a Recommends of theirs, which an install without recommends leaves
# out); openssl for the TLS tests' certificates; perl and IO::Socket::SSL
# for memcached's own t/ files (tests/memcached-t).
KURA_TEST_PACKAGES="libmemcached-tools python3 python3-pymemcache
    libcache-memcached-fast-perl python3-pylibmc python3-binary-memcached
    ruby ruby-dalli php-cli php-memcached fuse3 libfuse3-dev curl
    iproute2 keepalived nutcracker memcached python3-pytest python3-six
    libsasl2-modules openssl perl libio-socket-ssl-perl"

# Programs some tests use when the distribution has them, skipped (77)
# otherwise: promtool (prometheus) for the alert rules, and the memcached
# exporter (Debian 13 and later) scraping kurad.
KURA_OPTIONAL_TEST_PACKAGES="prometheus prometheus-memcached-exporter"

# Installs, as root, those of the packages named that the package lists
# offer; never fails for one they lack.
kura_want_packages() {
    local missing pkg offered=""
    missing=$(kura_missing_packages "$@")
    [ -z "$missing" ] && return 0
    [ "$(id -u)" -eq 0 ] || return 0
    # A fresh machine has no package lists yet.
    if ! ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1; then
        apt-get update -q >&2 || true
    fi
    for pkg in $missing; do
        if [ -n "$(apt-cache policy "$pkg" 2>/dev/null |
            awk '/Candidate:/ && $2 != "(none)" { print $2 }')" ]; then
            offered="$offered $pkg"
        else
            echo "kura: $pkg is not offered here; its test will be skipped" >&2
        fi
    done
    [ -n "$offered" ] || return 0
    echo "kura: installing$offered" >&2
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        --no-install-recommends $offered >&2 || true
}

# Configures (once) and builds in directory $1 with configure flags $2...
kura_build() {
    local dir=$1
    shift
    local top
    top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    if [ ! -x "$top/configure" ] || [ "$top/configure.ac" -nt "$top/configure" ] ||
        [ "$top/Makefile.am" -nt "$top/Makefile.in" ]; then
        (cd "$top" && autoreconf -fi >&2)
    fi
    # A source tree configured in place (./configure there) refuses every
    # build directory ("source directory already configured").
    if [ -f "$top/config.status" ]; then
        echo "kura: the source tree was configured in place; cleaning it" \
            "(make distclean) to build in $dir" >&2
        make -C "$top" -s distclean >&2 || rm -f "$top/config.status"
    fi
    mkdir -p "$dir"
    # The kura command was built as tools/kura before its sources moved
    # into tools/kura/; an older build tree's binary blocks the directory.
    if [ -f "$dir/tools/kura" ]; then
        rm -f "$dir/tools/kura"
    fi
    local stamp="$dir/.configured-with"
    if [ ! -f "$dir/Makefile" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$*" ]; then
        (cd "$dir" && "$top/configure" -q "$@" >&2)
        echo "$*" > "$stamp"
    fi
    make -C "$dir" -j"$(nproc)" -s >&2
}
