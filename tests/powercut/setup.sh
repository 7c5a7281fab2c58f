# Sourced by tests/powercut/run-short, run-peer and run-memory: sets here,
# top, build (the build tree: $KURA_BUILD_DIR, the current directory when
# make check runs the test there, else build/) and crashfs (where
# tests/crashfs/build puts it), and skips (exit 77) without root or FUSE.
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
if [ -n "${KURA_BUILD_DIR:-}" ]; then
    build="$KURA_BUILD_DIR"
elif [ -x src/kurad ] && [ -x tools/kura/kura ]; then
    build=$(pwd)
else
    build="$top/build"
fi
crashfs="$build/tests/crashfs/crashfs"

if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: the power-cut test needs root"; exit 77
fi
if [ ! -e /dev/fuse ]; then
    echo "SKIP: /dev/fuse is missing"; exit 77
fi
