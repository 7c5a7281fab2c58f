# Text protocol cases where kurad answered differently from memcached
# 1.6.18, found by tools/difffuzz; each now passes against both.

send "flush_all\r\n"
expect "OK\r\n"

# incr reads the stored value as memcached's strtoull does: white space,
# one sign, digits ended by a NUL or white space, and a '-' refused only
# where the result would read as negative.
send "set df:n1 0 0 3\r\n12\x00\r\nincr df:n1 1\r\n"
expect "STORED\r\n13\r\n"
send "set df:n2 0 0 5\r\n12 ab\r\nincr df:n2 1\r\nget df:n2\r\n"
expect "STORED\r\n13\r\nVALUE df:n2 0 5\r\n13   \r\nEND\r\n"
send "set df:n3 0 0 2\r\n-0\r\nincr df:n3 5\r\n"
expect "STORED\r\n5\r\n"
send "set df:n4 0 0 21\r\n-18446744073709551615\r\nincr df:n4 1\r\n"
expect "STORED\r\n2\r\n"
send "set df:n5 0 0 2\r\n-5\r\nincr df:n5 1\r\n"
expect "STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n"

# Numbers in a command line as memcached's safe_strto*() read them: a
# sign, leading zeros, and values cast to the field's width.
send "set df:f 007 -0 +1\r\nx\r\ngets df:f\r\n"
expect "STORED\r\n"
expect "VALUE df:f 7 1 {$c1}\r\nx\r\nEND\r\n"
send "set df:w 4294967297 0 1\r\ny\r\nget df:w\r\n"
expect "STORED\r\nVALUE df:w 1 1\r\ny\r\nEND\r\n"

# noreply is the last word of the line, whatever the count of words: a
# refused line that ends in it gets no reply.
send "incr df:n1 noreply\r\ntouch df:n1 noreply\r\nmn\r\n"
expect "MN\r\n"
send "set df:q 0 0 noreply\r\nzz\r\n"
expect "ERROR\r\n"

# A command line is read as a C string: what follows a NUL is consumed
# with the line and not read.
send "get df:f\x00 df:w\r\n"
expect "VALUE df:f 7 1\r\nx\r\nEND\r\n"
