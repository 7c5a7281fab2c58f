mode textauth
# Text-protocol authentication (memcached -Y authfile; the reference's file
# holds testuser:testpass and other:secret). The first command must be a
# "set" whose data is "user password"; until then every command is
# answered "CLIENT_ERROR unauthenticated" and the connection stays open.
# Checked against memcached 1.6.18.

# --- before authenticating
# (memcached also refuses version and quit here; kurad answers version and
# closes on quit, as its README says: they are not pinned)
conn pre
send "get foo\r\n"
expect "CLIENT_ERROR unauthenticated\r\n"
send "stats\r\n"
expect "CLIENT_ERROR unauthenticated\r\n"
send "mn\r\n"
expect "CLIENT_ERROR unauthenticated\r\n"
send "mg foo v\r\n"
expect "CLIENT_ERROR unauthenticated\r\n"
# only "set" authenticates: "add" with the same data is refused
send "add auth 0 0 17\r\ntestuser testpass\r\n"
expect "CLIENT_ERROR unauthenticated\r\n"
send "get foo\r\n"
expect "CLIENT_ERROR unauthenticated\r\n"
# (with -Y memcached reads a binary frame as text; kurad, whose -auth
# serves both protocols, answers it with SASL's AUTH_ERROR: not pinned)

# --- failures
conn bad
send "set auth 0 0 14\r\ntestuser wrong\r\n"
expect "CLIENT_ERROR authentication failure\r\n"
send "get foo\r\n"
expect "CLIENT_ERROR unauthenticated\r\n"
send "set auth 0 0 13\r\nnobody secret\r\n"
expect "CLIENT_ERROR authentication failure\r\n"
# no space between user and password
send "set auth 0 0 8\r\ntestuser\r\n"
expect "CLIENT_ERROR bad authentication token format\r\n"
send "get foo\r\n"
expect "CLIENT_ERROR unauthenticated\r\n"
# a later good attempt on the same connection works
send "set auth 0 0 17\r\ntestuser testpass\r\n"
expect "STORED\r\n"
send "version\r\n"
expect "VERSION {version}\r\n"

# --- success: key, flags and exptime are ignored, the item is not stored
conn good
send "set anything 123 456 17\r\ntestuser testpass\r\n"
expect "STORED\r\n"
send "get anything\r\n"
expect "END\r\n"
send "version\r\n"
expect "VERSION {version}\r\n"
# after that a set is a set
send "set ta:k 7 0 5\r\nvalue\r\n"
expect "STORED\r\n"
send "get ta:k\r\n"
expect "VALUE ta:k 7 5\r\nvalue\r\nEND\r\n"
send "mg ta:k v f\r\n"
expect "VA 5 f7\r\nvalue\r\n"
send "delete ta:k\r\n"
expect "DELETED\r\n"
# authenticating again just stores
send "set ta:k 0 0 17\r\ntestuser testpass\r\n"
expect "STORED\r\n"
send "get ta:k\r\n"
expect "VALUE ta:k 0 17\r\ntestuser testpass\r\nEND\r\n"
send "stats\r\n"
expect-stats
  auth_cmds int
  auth_errors in 1..1000
send "stats settings\r\n"
expect-stats
  auth_enabled_ascii str
  # no for memcached -Y; yes for kurad, whose -auth also enables SASL
  auth_enabled_sasl str
send "quit\r\n"
expect-closed

# the other user, and noreply (ignored: the reply is sent anyway)
conn other
send "set x 0 0 12 noreply\r\nother secret\r\n"
expect "STORED\r\n"
send "version\r\n"
expect "VERSION {version}\r\n"

# an authenticated connection speaks text only: a binary noop frame is an
# unknown text command (its opcode byte 0x0a ends the "line")
conn bin
send "set auth 0 0 17\r\ntestuser testpass\r\n"
expect "STORED\r\n"
send-bin noop opaque=1
expect "ERROR\r\n"
close
