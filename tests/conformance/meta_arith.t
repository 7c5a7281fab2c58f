# Meta arithmetic (ma): modes MI/M+ (increment, the default) and MD/M-
# (decrement); D delta, J initial value, N auto-create with a TTL, C cas,
# T TTL update; return flags t c v k O, q, b. Unsigned 64-bit: decrement
# stops at 0, increment wraps. Checked against memcached 1.6.18.

send "flush_all\r\n"
expect "OK\r\n"

# --- a miss: NF; with N the item is created with J (default 0), the delta
# is not applied
send "ma ma:n\r\n"
expect "NF\r\n"
send "ma ma:n v\r\n"
expect "NF\r\n"
send "ma ma:n N0\r\n"
expect "HD\r\n"
send "ma ma:n v\r\n"
expect "VA 1\r\n1\r\n"
send "ma ma:j N0 J10 v\r\n"
expect "VA 2\r\n10\r\n"
send "ma ma:j N0 J10 v\r\n"
expect "VA 2\r\n11\r\n"
send "mg ma:j v f\r\n"
expect "VA 2 f0\r\n11\r\n"
send "get ma:j\r\n"
expect "VALUE ma:j 0 2\r\n11\r\nEND\r\n"
# N sets the new item's TTL
send "ma ma:nt N30 J5 t v\r\n"
expect "VA 1 t30\r\n5\r\n"

# --- D and the modes
send "ma ma:j D5 v\r\n"
expect "VA 2\r\n16\r\n"
send "ma ma:j MI D4 v\r\n"
expect "VA 2\r\n20\r\n"
send "ma ma:j M+ D1 v\r\n"
expect "VA 2\r\n21\r\n"
send "ma ma:j MD D2 v\r\n"
expect "VA 2\r\n19\r\n"
send "ma ma:j M- D1 v\r\n"
expect "VA 2\r\n18\r\n"
# decrement stops at 0 (and the shorter number is space-padded in place)
send "ma ma:j MD D100 v\r\n"
expect "VA 1\r\n0\r\n"
send "mg ma:j v\r\n"
expect "VA 2\r\n0 \r\n"
send "ma ma:j MD v\r\n"
expect "VA 1\r\n0\r\n"
send "ma ma:j v\r\n"
expect "VA 1\r\n1\r\n"
# a decrement on a miss with N creates with J, like increment
send "ma ma:dn MD N0 J7 D3 v\r\n"
expect "VA 1\r\n7\r\n"
# increment wraps at 2^64
send "ms ma:w 20\r\n18446744073709551615\r\n"
expect "HD\r\n"
send "ma ma:w v\r\n"
expect "VA 1\r\n0\r\n"
send "mg ma:w v\r\n"
expect "VA 20\r\n0"+" "*19+"\r\n"
send "ma ma:w D18446744073709551615 v\r\n"
expect "VA 20\r\n18446744073709551615\r\n"
# a value too big for 64 bits, or not a number
send "ms ma:s 3\r\nabc\r\n"
expect "HD\r\n"
send "ma ma:s v\r\n"
expect "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
send "ma ma:s q\r\nmn\r\n"
expect "CLIENT_ERROR cannot increment or decrement non-numeric value\r\nMN\r\n"
send "ms ma:s 20\r\n18446744073709551616\r\n"
expect "HD\r\n"
send "ma ma:s v\r\n"
expect "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"

# --- return flags
send "ms ma:r 1 T100\r\n5\r\n"
expect "HD\r\n"
send "ma ma:r t c v\r\n"
expect "VA 1 t{int:99..100} c{$r1}\r\n6\r\n"
send "ma ma:r k O77\r\n"
expect "HD kma:r O77\r\n"
send "ma ma:r O77 k v\r\n"
expect "VA 1 O77 kma:r\r\n8\r\n"
send "ma ma:none O5 k\r\n"
expect "NF O5 kma:none\r\n"
# T: a new TTL on success
send "ma ma:r T300 t v\r\n"
expect "VA 1 t300\r\n9\r\n"
# b: base64 key ("bWE6cg==" is "ma:r")
send "ma bWE6cg== b k v\r\n"
expect "VA 2 kbWE6cg== b\r\n10\r\n"

# --- C: compare and swap
send "mg ma:r c\r\n"
expect "HD c{$r2}\r\n"
send "ma ma:r C{$r2+1} v\r\n"
expect "EX\r\n"
send "ma ma:r C{$r2+1} O1 k\r\n"
expect "EX O1 kma:r\r\n"
send "ma ma:r C{$r2+1} q\r\nmn\r\n"
expect "EX\r\nMN\r\n"
send "ma ma:r C{$r2} c v\r\n"
expect "VA 2 c{$r3 != $r2}\r\n11\r\n"
send "ma ma:none C{$r2} v\r\n"
expect "NF\r\n"

# --- q: success is silent, even with v; NF is not. A miss created by N is
# answered even with q.
send "ma ma:r q v\r\nma ma:r q\r\nma ma:none q\r\nmn\r\n"
expect "NF\r\nMN\r\n"
send "mg ma:r v\r\n"
expect "VA 2\r\n13\r\n"
send "ma ma:qn q N0 J3 v\r\nmn\r\n"
expect "VA 1\r\n3\r\nMN\r\n"

# --- P and L are ignored
send "ma ma:r Pp Lx/ v\r\n"
expect "VA 2\r\n14\r\n"

# --- errors
send "ma ma:r Md v\r\n"
expect "CLIENT_ERROR invalid mode for ma M token\r\n"
send "ma ma:r MX v\r\n"
expect "CLIENT_ERROR invalid mode for ma M token\r\n"
send "ma ma:r Dabc v\r\n"
expect "CLIENT_ERROR invalid or duplicate flag\r\n"
send "ma ma:r D-1 v\r\n"
expect "CLIENT_ERROR invalid or duplicate flag\r\n"
send "ma ma:r D18446744073709551616 v\r\n"
expect "CLIENT_ERROR invalid or duplicate flag\r\n"
send "ma ma:r v v\r\n"
expect "CLIENT_ERROR invalid or duplicate flag\r\n"
send "ma ma:r x\r\n"
expect "CLIENT_ERROR invalid or duplicate flag\r\n"
send "ma\r\n"
expect "ERROR\r\n"
# (md and ma report a bad base64 key as a flag error)
send "ma !!!! b\r\n"
expect "CLIENT_ERROR invalid or duplicate flag\r\n"
send "ma "+"k"*251+"\r\n"
expect "CLIENT_ERROR bad command line format\r\n"
send "mg ma:r v\r\n"
expect "VA 2\r\n14\r\n"
