mode sasl
# SASL authentication over the binary protocol (memcached -S with Cyrus
# SASL, mech_list: plain; users testuser/testpass and other/secret).
# Opcodes: list mechanisms 0x20, auth 0x21 (key: the mechanism, value: the
# client's first response), step 0x22. PLAIN's response is
# authzid \0 user \0 password. Until a connection has authenticated, every
# other command but version gets AUTH_ERROR ("Auth failure.") and the
# connection is closed. Checked against memcached 1.6.18.

# --- mechanisms, version: allowed before authenticating
conn m
send-bin sasl_list_mechs opaque=1
expect-bin sasl_list_mechs value="PLAIN" opaque=1
send-bin sasl_list_mechs opaque=2
expect-bin sasl_list_mechs value="PLAIN" opaque=2
send-bin version opaque=3
expect-bin version value="{version}" opaque=3

# --- anything else unauthenticated: AUTH_ERROR, then the server closes
conn u1
send-bin get key="k" opaque=0x10
expect-bin get status=auth_error value="Auth failure." opaque=0x10
expect-closed
conn u2
send-bin noop opaque=0x11
expect-bin noop status=auth_error value="Auth failure." opaque=0x11
expect-closed
conn u3
send-bin set key="k" value="v" opaque=0x12
expect-bin set status=auth_error value="Auth failure." opaque=0x12
expect-closed
conn u4
send-bin stat opaque=0x13
expect-bin stat status=auth_error value="Auth failure." opaque=0x13
expect-closed
# (quit: memcached answers AUTH_ERROR and closes; kurad lets an
# unauthenticated client quit, answers it and closes: not pinned)
conn u6
send-bin flush opaque=0x15
expect-bin flush status=auth_error value="Auth failure." opaque=0x15
expect-closed
conn u7
send-bin 0x44 opaque=0x16
expect-bin 0x44 status=auth_error value="Auth failure." opaque=0x16
expect-closed

# --- a successful PLAIN authentication
conn ok
send-bin sasl_auth key="PLAIN" value="\0testuser\0testpass" opaque=0x20
expect-bin sasl_auth value="Authenticated" opaque=0x20
send-bin set key="sasl:k" flags=9 value="secret value" opaque=0x21
expect-bin set opaque=0x21 cas={$c}
send-bin get key="sasl:k" opaque=0x22
expect-bin get flags=9 value="secret value" opaque=0x22 cas=$c
send-bin noop opaque=0x23
expect-bin noop opaque=0x23
send-bin stat key="settings" opaque=0x24
expect-stats bin opaque=0x24
  auth_enabled_sasl = yes
  # memcached -S: no and binary; kurad's -auth serves both protocols
  auth_enabled_ascii str
  binding_protocol str
send-bin stat opaque=0x25
expect-stats bin opaque=0x25
  auth_cmds int
  auth_errors int
# a second authentication on the same connection fails, and leaves the
# connection unauthenticated (1.6.18 with Cyrus SASL)
send-bin sasl_auth key="PLAIN" value="\0testuser\0testpass" opaque=0x26
expect-bin sasl_auth status=auth_error value="Auth failure." opaque=0x26
send-bin noop opaque=0x27
expect-bin noop status=auth_error value="Auth failure." opaque=0x27
expect-closed

# the other user; an authzid equal to the user is accepted; the mechanism
# name is not case-sensitive
conn other
send-bin sasl_auth key="PLAIN" value="\0other\0secret" opaque=0x30
expect-bin sasl_auth value="Authenticated" opaque=0x30
send-bin get key="sasl:k" opaque=0x31
expect-bin get flags=9 value="secret value" opaque=0x31 cas=$c
conn authz
send-bin sasl_auth key="PLAIN" value="testuser\0testuser\0testpass" opaque=0x32
expect-bin sasl_auth value="Authenticated" opaque=0x32
conn lower
send-bin sasl_auth key="plain" value="\0testuser\0testpass" opaque=0x33
expect-bin sasl_auth value="Authenticated" opaque=0x33
send-bin noop opaque=0x34
expect-bin noop opaque=0x34

# --- failures: AUTH_ERROR, the connection stays open for another try
conn bad
send-bin sasl_auth key="PLAIN" value="\0testuser\0wrong" opaque=0x40
expect-bin sasl_auth status=auth_error value="Auth failure." opaque=0x40
send-bin sasl_auth key="PLAIN" value="\0nobody\0testpass" opaque=0x41
expect-bin sasl_auth status=auth_error value="Auth failure." opaque=0x41
send-bin sasl_auth key="PLAIN" value="\0testuser" opaque=0x42
expect-bin sasl_auth status=auth_error value="Auth failure." opaque=0x42
send-bin sasl_auth key="FOO" value="\0testuser\0testpass" opaque=0x43
expect-bin sasl_auth status=auth_error value="Auth failure." opaque=0x43
send-bin sasl_auth key="PLAIN" value="\0testuser\0testpass" opaque=0x44
expect-bin sasl_auth value="Authenticated" opaque=0x44
send-bin get key="sasl:k" opaque=0x45
expect-bin get flags=9 value="secret value" opaque=0x45 cas=$c
# a failure after a failure closes nothing, but a command does
conn bad2
send-bin sasl_auth key="PLAIN" value="\0testuser\0wrong" opaque=0x46
expect-bin sasl_auth status=auth_error value="Auth failure." opaque=0x46
send-bin get key="sasl:k" opaque=0x47
expect-bin get status=auth_error value="Auth failure." opaque=0x47
expect-closed

# --- two steps: an auth with no data gets AUTH_CONTINUE and an empty
# challenge; the step then carries the PLAIN response
conn step
send-bin sasl_auth key="PLAIN" opaque=0x50
expect-bin sasl_auth status=auth_continue opaque=0x50
send-bin sasl_step key="PLAIN" value="\0testuser\0testpass" opaque=0x51
expect-bin sasl_step value="Authenticated" opaque=0x51
send-bin noop opaque=0x52
expect-bin noop opaque=0x52
conn stepbad
send-bin sasl_auth key="PLAIN" opaque=0x53
expect-bin sasl_auth status=auth_continue opaque=0x53
send-bin sasl_step key="PLAIN" value="\0testuser\0wrong" opaque=0x54
expect-bin sasl_step status=auth_error value="Auth failure." opaque=0x54
# a step with no auth before it fails
conn steponly
send-bin sasl_step key="PLAIN" value="\0testuser\0testpass" opaque=0x55
expect-bin sasl_step status=auth_error value="Auth failure." opaque=0x55

# --- malformed SASL requests: EINVAL and a close
conn e1
send-bin sasl_auth value="\0testuser\0testpass" opaque=0x60
expect-bin sasl_auth status=einval value="Invalid arguments" opaque=0x60
expect-closed
conn e2
send-bin sasl_list_mechs value="x" opaque=0x61
expect-bin sasl_list_mechs status=einval value="Invalid arguments" opaque=0x61
expect-closed
conn e3
send-bin sasl_auth key="PLAIN" extras=u32:0 value="\0testuser\0testpass" opaque=0x62
expect-bin sasl_auth status=einval value="Invalid arguments" opaque=0x62
expect-closed

# (with -S memcached speaks only the binary protocol and closes a text
# connection; kurad's -auth also takes memcached's text authentication,
# tested in text_auth.t: not pinned)
