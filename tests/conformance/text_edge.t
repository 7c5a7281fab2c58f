# Text protocol edge cases that clients depend on: key and value limits,
# noreply, cas, incr/decr errors, touch/gat/gats, flush_all with a delay,
# verbosity, unknown commands, quit. Checked against memcached 1.6.18.

send "flush_all\r\n"
expect "OK\r\n"

# --- keys: 250 bytes is the limit
send "set "+"k"*250+" 0 0 1\r\nx\r\n"
expect "STORED\r\n"
send "get "+"k"*250+"\r\n"
expect "VALUE "+"k"*250+" 0 1\r\nx\r\nEND\r\n"
# a longer key: the line is refused. memcached then reads the data line
# as a command (ERROR); kurad discards the announced data instead, so that
# a value is never run as commands. Only the refusal is pinned.
conn longkey
send "set "+"k"*251+" 0 0 1\r\nx\r\n"
expect "CLIENT_ERROR bad command line format\r\n"
close longkey
conn main
send "get "+"k"*251+"\r\n"
expect "CLIENT_ERROR bad command line format\r\n"

# --- values: over 1 MiB is refused after the data is read
send "set te:big 0 0 1048577\r\n"+"x"*1048577+"\r\n"
expect "SERVER_ERROR object too large for cache\r\n"
send "get te:big\r\n"
expect "END\r\n"
send "set te:ok 0 0 500000\r\n"+"y"*500000+"\r\n"
expect "STORED\r\n"
send "get te:ok\r\n"
expect "VALUE te:ok 0 500000\r\n"+"y"*500000+"\r\nEND\r\n"
# a data block longer than announced
send "set te:a 0 0 1\r\nxy\r\n"
expect "CLIENT_ERROR bad data chunk\r\nERROR\r\n"
# a negative length
send "set te:a 0 0 -1\r\n"
expect "CLIENT_ERROR bad command line format\r\n"
# the largest flags
send "set te:a 4294967295 0 1\r\nx\r\n"
expect "STORED\r\n"
send "get te:a\r\n"
expect "VALUE te:a 4294967295 1\r\nx\r\nEND\r\n"

# --- noreply: silent on success and on failure
send "set te:n 0 0 1 noreply\r\n1\r\nadd te:n 0 0 1 noreply\r\n2\r\nincr te:n 5 noreply\r\ndelete te:none noreply\r\nget te:n\r\n"
expect "VALUE te:n 0 1\r\n6\r\nEND\r\n"

# --- cas
send "gets te:n\r\n"
expect "VALUE te:n 0 1 {$c}\r\n6\r\nEND\r\n"
send "cas te:n 0 0 1 {$c+1}\r\n7\r\n"
expect "EXISTS\r\n"
send "cas te:n 0 0 1 {$c}\r\n7\r\n"
expect "STORED\r\n"
send "cas te:none 0 0 1 {$c}\r\n7\r\n"
expect "NOT_FOUND\r\n"
send "cas te:n 0 0 1\r\n7\r\n"
expect "ERROR\r\nERROR\r\n"

# --- incr / decr
send "incr te:none 1\r\n"
expect "NOT_FOUND\r\n"
send "set te:s 0 0 3\r\nabc\r\n"
expect "STORED\r\n"
send "incr te:s 1\r\n"
expect "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
send "incr te:n abc\r\n"
expect "CLIENT_ERROR invalid numeric delta argument\r\n"
send "incr te:n -1\r\n"
expect "CLIENT_ERROR invalid numeric delta argument\r\n"
send "decr te:n 100\r\n"
expect "0\r\n"
send "set te:w 0 0 20\r\n18446744073709551615\r\n"
expect "STORED\r\n"
send "incr te:w 2\r\n"
expect "1\r\n"

# --- an already expired item: a negative exptime
send "set te:e 0 -1 1\r\nx\r\n"
expect "STORED\r\n"
send "get te:e\r\n"
expect "END\r\n"

# --- touch, gat, gats
send "set te:t 3 0 2\r\nhi\r\n"
expect "STORED\r\n"
send "touch te:t 100\r\n"
expect "TOUCHED\r\n"
send "touch te:none 100\r\n"
expect "NOT_FOUND\r\n"
send "gat 100 te:t te:none\r\n"
expect "VALUE te:t 3 2\r\nhi\r\nEND\r\n"
send "gats 100 te:t\r\n"
expect "VALUE te:t 3 2 {int}\r\nhi\r\nEND\r\n"
send "mg te:t t\r\n"
expect "HD t{int:99..100}\r\n"

# --- flush_all with a delay, and noreply
send "set te:f 0 0 1\r\nx\r\n"
expect "STORED\r\n"
send "flush_all 2\r\n"
expect "OK\r\n"
send "get te:f\r\n"
expect "VALUE te:f 0 1\r\nx\r\nEND\r\n"
# the delay must pass on the server's 1 s clock: 2 s + 1 s resolution
wait 3.2
send "get te:f\r\n"
expect "END\r\n"
send "set te:f 0 0 1\r\nx\r\nflush_all noreply\r\nget te:f\r\n"
expect "STORED\r\nEND\r\n"

# --- verbosity, version
send "verbosity 1\r\n"
expect "OK\r\n"
send "verbosity 0 noreply\r\nversion\r\n"
expect "VERSION {version}\r\n"

# --- unknown and empty commands
send "bogus\r\n"
expect "ERROR\r\n"
send "\r\n"
expect "ERROR\r\n"
send "GET te:t\r\n"
expect "ERROR\r\n"
# a bare LF ends a line too
send "version\n"
expect "VERSION {version}\r\n"

# --- quit closes
send "quit\r\n"
expect-closed
