"""conftest for python-binary-memcached's own tests: the servers under
test, not the default addresses.

run-client-suites puts this file in place of the suite's test/conftest.py,
which starts memcached itself on the default port, on port 5000 and on
/tmp/memcached.sock. The tests name those addresses in many places
(MEMCACHED_HOST plus ":11211", "127.0.0.1:11211", "/tmp/memcached.sock",
a test proxy that connects on its own), so the connections are redirected
where they are made, in socket.socket.connect, for this process and the
processes it forks:

  loopback port 11211   -> the first server of KURA_SUITE_SERVERS
  loopback port 5000    -> the second
  /tmp/memcached.sock   -> the third (a unix socket)

and a loopback connection to 11212-11214 (ports the tests only hash
over) is refused here, so no test reaches whatever may listen there. Other
addresses, such as a test's own proxy, pass unchanged. The keys and server
names the tests see stay the ones they wrote.
"""
import os
import socket

_LOOPBACK = ("127.0.0.1", "localhost")
_DEFAULT_UNIX = "/tmp/memcached.sock"


def _parse(spec):
    if spec.startswith("/"):
        return spec
    host, port = spec.rsplit(":", 1)
    return (host, int(port))


_servers = [_parse(s) for s in os.environ["KURA_SUITE_SERVERS"].split()]
_TCP = {11211: _servers[0], 5000: _servers[1]}
_UNIX = _servers[2]
_REFUSED = (11212, 11213, 11214)


def _redirect(sock, address):
    if sock.family == socket.AF_UNIX:
        if address in (_DEFAULT_UNIX, _DEFAULT_UNIX.encode()):
            return _UNIX
        return address
    if (sock.family == socket.AF_INET and isinstance(address, tuple)
            and address[0] in _LOOPBACK):
        if address[1] in _TCP:
            return _TCP[address[1]]
        if address[1] in _REFUSED:
            raise ConnectionRefusedError(111, "Connection refused "
                                         "(not a server of this run)")
    return address


_connect = socket.socket.connect
_connect_ex = socket.socket.connect_ex


def _connect_redirected(self, address):
    return _connect(self, _redirect(self, address))


def _connect_ex_redirected(self, address):
    return _connect_ex(self, _redirect(self, address))


socket.socket.connect = _connect_redirected
socket.socket.connect_ex = _connect_ex_redirected
