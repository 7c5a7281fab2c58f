# Text protocol: memcached's administrative commands that clients send
# (stats detail, cache_memlimit, slabs, shutdown, bget), with memcached
# 1.6.18's replies. Found missing in kurad by tools/difffuzz and by
# memcached's own t/ files.

send "flush_all\r\nstats reset\r\n"
expect "OK\r\nRESET\r\n"

# stats detail: per-prefix counts of gets, hits, sets and deletes, kept
# while on, cleared by stats reset.
send "stats detail dump\r\n"
expect "END\r\n"
send "stats detail on\r\n"
expect "OK\r\n"
send "set adm:a 0 0 1\r\nx\r\n"
expect "STORED\r\n"
send "get adm:a adm:b nocolon\r\n"
expect "VALUE adm:a 0 1\r\nx\r\nEND\r\n"
send "delete adm:b\r\n"
expect "NOT_FOUND\r\n"
send "stats detail dump\r\n"
expect "PREFIX adm get 2 hit 1 set 1 del 1\r\nEND\r\n"
# a store whose data block is bad counts too: memcached counts the set
# before it reads the data
send "set adm:c 0 0 1\r\nxy\r\n"
expect "CLIENT_ERROR bad data chunk\r\nERROR\r\n"
send "stats detail dump\r\n"
expect "PREFIX adm get 2 hit 1 set 2 del 1\r\nEND\r\n"
send "stats detail off\r\n"
expect "OK\r\n"
send "get adm:a\r\n"
expect "VALUE adm:a 0 1\r\nx\r\nEND\r\n"
send "stats detail dump\r\n"
expect "PREFIX adm get 2 hit 1 set 2 del 1\r\nEND\r\n"
send "stats detail\r\n"
expect "CLIENT_ERROR usage: stats detail on|off|dump\r\n"
send "stats detail sideways\r\n"
expect "CLIENT_ERROR usage: stats detail on|off|dump\r\n"
send "stats reset\r\n"
expect "RESET\r\n"
send "stats detail dump\r\n"
expect "END\r\n"

# cache_memlimit: a store has no cache to resize; the answers are
# memcached's.
send "cache_memlimit 2048\r\n"
expect "OK\r\n"
send "cache_memlimit 7\r\n"
expect "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n"
send "cache_memlimit 1000000001\r\n"
expect "MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes\r\n"
send "cache_memlimit lots\r\n"
expect "ERROR\r\n"
send "cache_memlimit 2048 noreply\r\n"
send "cache_memlimit\r\n"
expect "ERROR\r\n"

# shutdown is refused, as memcached refuses it without -A.
send "shutdown\r\n"
expect "ERROR: shutdown not enabled\r\n"
send "shutdown graceful\r\n"
expect "ERROR: shutdown not enabled\r\n"

# bget: memcached's old name for get.
send "bget adm:a\r\n"
expect "VALUE adm:a 0 1\r\nx\r\nEND\r\n"

# slabs: memcached's slab page mover. automove is acknowledged with
# memcached's answers to each shape (memcached's t/strtol-testing.t sends
# "slabs automove invalid"); kura has no slab classes to reassign between.
send "slabs automove invalid\r\n"
expect "CLIENT_ERROR bad command line format\r\n"
send "slabs automove -1\r\n"
expect "CLIENT_ERROR bad command line format\r\n"
send "slabs automove 1\r\n"
expect "OK\r\n"
send "slabs automove 0\r\n"
expect "OK\r\n"
send "slabs automove 3\r\n"
expect "ERROR\r\n"
send "slabs automove\r\n"
expect "ERROR\r\n"
send "slabs automove ratio 0.5\r\n"
expect "OK\r\n"
send "slabs automove ratio x\r\n"
expect "ERROR\r\n"
send "slabs automove ratio\r\n"
expect "ERROR\r\n"
send "slabs automove 1 noreply\r\nslabs automove x noreply\r\nslabs automove 9 noreply\r\n"
send "slabs reassign 1 1\r\n"
expect "SAME src and dst class are identical\r\n"
send "slabs reassign -1 5\r\n"
expect "BADCLASS invalid src or dst class id\r\n"
send "slabs reassign a b\r\n"
expect "CLIENT_ERROR bad command line format\r\n"
send "slabs reassign 1 2 noreply\r\n"
expect "ERROR\r\n"
send "slabs sideways\r\n"
expect "ERROR\r\n"
