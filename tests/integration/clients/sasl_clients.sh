#!/bin/sh
# The binary-protocol clients with SASL PLAIN against a kurad started with
# -auth: pylibmc, python-binary-memcached, Dalli, PHP memcached and
# libmemcached's tools, each
# running its usual checks after authenticating.
#
#   sasl_clients.sh
#
# Run under with_kurad like the other client scripts, it ignores that
# daemon and starts its own with a password file, through with_kurad
# again ($KURA_WITH_KURAD, set by make check). Exits 1 if a client
# failed, 77 if none of the clients is installed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
with=${KURA_WITH_KURAD:?KURA_WITH_KURAD names the with_kurad program}
dir=$(mktemp -d /tmp/kura-sasl-XXXXXX)
trap 'rm -rf "$dir"' EXIT
printf 'saslu:sasl-secret\n' > "$dir/users"
chmod 600 "$dir/users"

KURA_SASL_USER=saslu KURA_SASL_PASS=sasl-secret
export KURA_SASL_USER KURA_SASL_PASS

ran=0
failed=0
run() {  # NAME COMMAND...
    name=$1
    shift
    "$with" --kurad-arg -auth --kurad-arg "$dir/users" "$@"
    rc=$?
    case $rc in
    0) ran=$((ran + 1)); echo "sasl_clients: $name passed" ;;
    77) echo "sasl_clients: $name skipped (not installed)" ;;
    *) ran=$((ran + 1)); failed=$((failed + 1))
       echo "sasl_clients: $name FAILED ($rc)" ;;
    esac
}

run pylibmc /usr/bin/python3 "$here/pylibmc_binary_test.py" --mode binary
run bmemcached /usr/bin/python3 "$here/bmemcached_test.py"
run dalli /usr/bin/ruby "$here/dalli_binary_test.rb"
run php-memcached /usr/bin/php "$here/php_memcached_test.php" --mode binary
run libmemcached-tools /bin/sh "$here/memcached_tools_binary.sh" --mode binary

[ "$ran" -gt 0 ] || exit 77
[ "$failed" -eq 0 ]
