"""debsource: the upstream sources of a Debian package, fetched at test time.

Tests that run someone else's test files (the clients' own suites in
tests/clientsuites/, memcached's t/ files in tests/memcached-t/) take
those files from the upstream tarball of Debian's source package, so that
they match what Debian installed and nothing of them is kept in this
repository. The tarball is found through the package's .dsc on a Debian
mirror (KURA_DEBIAN_MIRROR, default http://deb.debian.org/debian),
checked against the SHA-256 the .dsc gives, and kept in a cache directory
that the caller names (in the build tree), so later runs need no network.
Where the mirror lacks a tarball, a few upstream releases are known on
PyPI with their published digest (PYPI_SDISTS).

Every failure to get the sources (no network, a missing package, a
checksum that differs) raises Unavailable: the callers report a skip.
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import urllib.error
import urllib.request


class Unavailable(Exception):
    """What a test needs cannot be had here (the caller reports a skip)."""


def dpkg_source(binary):
    """(source package, source version) of an installed Debian package;
    Unavailable if it is not installed."""
    try:
        out = subprocess.run(
            ["dpkg-query", "-W", "-f=${db:Status-Abbrev} ${source:Package} "
             "${source:Version}", binary],
            capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = []
    if len(out) != 3 or not out[0].startswith("ii"):
        raise Unavailable("%s is not installed (Debian package)" % binary)
    return out[1], out[2]


def fetch(url, path):
    """Downloads url to path (atomically), unless path already exists."""
    if os.path.exists(path):
        return
    tmp = "%s.%d.tmp" % (path, os.getpid())
    try:
        with urllib.request.urlopen(url, timeout=30) as r, \
                open(tmp, "wb") as f:
            shutil.copyfileobj(r, f)
        os.replace(tmp, path)
    except (OSError, urllib.error.URLError) as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise Unavailable("cannot fetch %s: %s" % (url, e))


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def source_orig(src, version, cache):
    """Path of the upstream tarball of Debian source package src at
    version (as in its .dsc's name, e.g. "1.6.18-1"), in cache/SRC_VERSION/,
    fetched (the .dsc, then the tarball with the checksum the .dsc gives)
    if it is not there yet."""
    version = version.split(":", 1)[-1]  # no epoch in file names
    mirror = os.environ.get("KURA_DEBIAN_MIRROR",
                            "http://deb.debian.org/debian").rstrip("/")
    prefix = src[:4] if src.startswith("lib") else src[0]
    base = "%s/pool/main/%s/%s/" % (mirror, prefix, src)
    d = os.path.join(cache, "%s_%s" % (src, version))
    os.makedirs(d, exist_ok=True)
    dsc = os.path.join(d, "%s_%s.dsc" % (src, version))
    fetch(base + os.path.basename(dsc), dsc)
    with open(dsc, errors="replace") as f:
        text = f.read()
    m = re.search(r"^Checksums-Sha256:\n((?: .*\n)+)", text, re.M)
    origs = [ln.split() for ln in (m.group(1) if m else "").splitlines()]
    origs = [o for o in origs if len(o) == 3 and ".orig.tar." in o[2]]
    if len(origs) != 1:
        os.unlink(dsc)
        raise Unavailable("%s names no single upstream tarball" % dsc)
    want, _, name = origs[0]
    path = os.path.join(d, name)
    fetch(base + name, path)
    if sha256(path) != want:
        os.unlink(path)
        raise Unavailable("%s: checksum differs from the .dsc's" % name)
    return path


def debian_orig(binary, cache):
    """source_orig() for the source package and version of the installed
    Debian package binary."""
    src, version = dpkg_source(binary)
    return source_orig(src, version, cache)


# Upstream releases on PyPI, for a Debian source package whose upstream
# tarball the mirror does not serve: the same upstream version, checked
# against the digest PyPI published for it.
PYPI_SDISTS = {
    ("python-binary-memcached", "0.31.1"): (
        "https://files.pythonhosted.org/packages/e1/88/"
        "9a40a7c99d9085d5f5d998651ae40fdf2622513bfa3dd87ff7ce5e08bb48/"
        "python-binary-memcached-0.31.1.tar.gz",
        "de4056f00a15d054dcf1af87d6cc9564876699e52da954c3ef44e8c5753d4050"),
}


def upstream_orig(binary, cache):
    """debian_orig(), or when the mirror lacks the tarball, the same
    upstream release from PyPI (PYPI_SDISTS) if it is known there."""
    try:
        return debian_orig(binary, cache)
    except Unavailable as first:
        src, version = dpkg_source(binary)
        upstream = version.split(":", 1)[-1].rsplit("-", 1)[0]
        upstream = re.sub(r"\+dfsg\d*$", "", upstream)
        known = PYPI_SDISTS.get((src, upstream))
        if known is None:
            raise first
        url, want = known
        path = os.path.join(cache, os.path.basename(url))
        fetch(url, path)
        if sha256(path) != want:
            os.unlink(path)
            raise Unavailable("%s: checksum differs from PyPI's" % path)
        print("%s (Debian's tarball: %s; the same release from PyPI)" % (
            os.path.basename(path), first), file=sys.stdout, flush=True)
        return path


def unpack(tarball, members, dest):
    """Extracts from tarball the members under the given relative
    directories (below the top directory every upstream tarball has) into
    dest, without that top directory. A directory instead of a tarball is
    an unpacked source tree: the same members are copied."""
    if os.path.isdir(tarball):
        for d in members:
            if not os.path.isdir(os.path.join(tarball, d)):
                raise Unavailable("%s has no %s/" % (tarball, d))
            shutil.copytree(os.path.join(tarball, d), os.path.join(dest, d),
                            ignore=shutil.ignore_patterns("__pycache__"))
        return
    n = 0
    with tarfile.open(tarball) as t:
        for m in t.getmembers():
            parts = m.name.split("/", 1)
            if len(parts) < 2 or ".." in m.name.split("/"):
                continue
            rel = parts[1]
            if not any(rel == d or rel.startswith(d + "/") for d in members):
                continue
            if not (m.isfile() or m.isdir()):
                continue
            out = os.path.join(dest, rel)
            if m.isdir():
                os.makedirs(out, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with t.extractfile(m) as r, open(out, "wb") as w:
                shutil.copyfileobj(r, w)
            if m.mode & 0o111:
                os.chmod(out, 0o755)
            n += 1
    if n == 0:
        raise Unavailable("%s holds none of %s" % (tarball, members))
