"""conftest for pylibmc's own tests: the server under test, not 11211.

run-client-suites copies this file into the unpacked pylibmc source as
its conftest.py. pylibmc.test.make_test_client already reads
MEMCACHED_HOST and MEMCACHED_PORT, but the test case class keeps
127.0.0.1:11211 for the tests that build an address themselves
(test_autoconf), and autoconf.elasticache() defaults to 127.0.0.1:11211.
Both are pointed at the server under test here, so no test talks to
whatever may listen on the default port.
"""
import os

import tests
from pylibmc import autoconf

_HOST = os.environ["MEMCACHED_HOST"]
_PORT = os.environ["MEMCACHED_PORT"]

tests.PylibmcTestCase.memcached_host = _HOST
tests.PylibmcTestCase.memcached_port = _PORT
_defaults = list(autoconf.elasticache.__defaults__)
_defaults[0] = "%s:%s" % (_HOST, _PORT)
autoconf.elasticache.__defaults__ = tuple(_defaults)
